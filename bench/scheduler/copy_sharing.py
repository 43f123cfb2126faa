"""How the real copies of bench_reality.py's runs shared the access link (issue 17 item 7): the exponent
``e`` of the simulator's ``rtt_fairness``, the figure of its stack that depends most on the sites'
congestion control (``measured.BY_CONGESTION_CONTROL``): streams that share a full link get rates in
proportion to (1 / RTT) ** e (0: equal; > 0: the short path gets more, as CUBIC; < 0: the long path gets
more, as BBR, whose window follows its own path's bandwidth-delay product).

Each copy of ``real_jobs.json`` (one file over its job's ``streams_per_file`` connections) is replayed
from its real start to its real finish as the simulator opens a cold copy (``measured.COLD_COPIES``:
nothing for its overhead and setup round trips, then slow start from the initial window), the link shared
at each moment between the copies then in flight (``flows.share_links``). Its modelled bytes are compared
with its real size. The exponent is the one at which the two lanes come out alike (the median of
log(modelled / real) of one lane's copies equals the other's), by bisection: the split between the lanes,
whatever the link's efficiency. What is left, the copies' median of modelled / real bytes, is printed as
the level (1: the model gives the copies what they carried). These are figures of the copies, not of what
bench_reality compares (the link's use, the products' completion times), which stay a test of the model.

Runs whose copies the SDP paced (``--pace-copies``) are left out: their rates are the pace's.

    .venv/bin/python bench/scheduler/copy_sharing.py bench/scheduler/results/reality-bbr*
"""

from __future__ import annotations

import argparse
import bisect
import json
import math
import random
import statistics
import sys
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from schedulers.planning.types import Leg, LegRole  # noqa: E402
from schedulers.simulation.flows import Flow, share_links, standing_queues  # noqa: E402
from schedulers.simulation.measured import BY_CONGESTION_CONTROL, COLD_COPIES  # noqa: E402

BISECTIONS = 16
EXPONENTS = (-1.0, 1.0)
SPREADS = (0.0, 1.5)  # the share spread's bracket (sigma of the log of a copy's share weight)
SPREAD_BISECTIONS = 10
SPREAD_DRAWS = 3
LINK = "access"
CAPACITY_BPS = 100e6  # the scaled low-access link (localnet.longhaul, CAPACITY_SCALE)


class Copy(NamedTuple):
    site: str
    start: float
    finish: float
    size: float
    streams: int  # the TCP connections it pulls over


def paced(result: dict[str, Any]) -> bool:
    """Whether the run's copies were paced by the SDP (``--pace-copies`` > 0)."""
    pace = result["workload"].get("pace_copies")
    if pace is None:  # runs from before the workload recorded it: their command says
        words = result["command"].split()
        pace = words[words.index("--pace-copies") + 1] if "--pace-copies" in words else "0"
    return float(pace) > 0


def copies(run: Path) -> tuple[list[Copy], dict[str, float]]:
    """The run's finished copies, and each SRC's round-trip time (ms)."""
    result = json.loads((run / "result.json").read_text())
    rtt = {endpoint.split("_")[0]: ms for endpoint, ms in result["real"]["rtt_ms"].items()}
    jobs = json.loads((run / "real_jobs.json").read_text())["jobs"]
    out = []
    for job in jobs:
        lane = job["metadata"].get("lane")
        if not lane or lane[1] not in rtt:
            continue
        streams = int(job["metadata"].get("streams_per_file") or 1)
        for f in job["files"]:
            if f["start"] and f["finish"] and f["finish"] > f["start"]:
                out.append(Copy(lane[1], f["start"], f["finish"], float(f["size"]), streams))
    return out, rtt


def flow_of(
    copy: Copy,
    rtt_ms: float,
    exponent: float,
    overhead_s: float,
    queue_s: float = 0.0,
    growth: float = 0.0,
    luck: float = 1.0,
) -> Flow:
    """The copy as the simulator opens a cold copy: nothing for ``overhead_s`` and its setup round trips,
    then slow start from the initial window (each stream's), then as much as the link lets it, weighted by
    its streams (times ``luck``, the simulator's draw for the copy: SimConfig.share_spread), taking up a
    larger share at most ``growth`` times faster per BBR probing cycle (0: at once); its round trips
    ``queue_s`` longer for the queue of a full link."""
    rtt = rtt_ms / 1000.0
    setup = overhead_s + float(COLD_COPIES["leg_setup_rtts"]) * (rtt + queue_s)
    leg = Leg(copy.site, LegRole.PRIMARY, "telescope", copy.site, (LINK,), 1, 1, 0.0, 0, 0.0, 0.0, 0)
    return Flow(
        leg,
        ("telescope", copy.site),
        (LINK,),
        remaining_bytes=math.inf,  # it ends at its real finish
        pace_bps=math.inf,
        plateau_bps=CAPACITY_BPS,  # no more than the link: its slow start ends there
        rtt_s=rtt,
        ramp_start_s=copy.start + setup,
        share_weight=copy.streams * (1.0 / rtt) ** exponent * luck,
        idle_until_s=copy.start + setup,
        initial_bps=copy.streams * float(COLD_COPIES["initial_window_bytes"]) * 8 / (rtt + queue_s),
        queue_s=queue_s,
        probe_growth=growth,
    )


def modelled_bytes(
    found: list[Copy],
    rtt: dict[str, float],
    exponent: float,
    overhead_s: float,
    queue: float = 0.0,
    growth: float = 0.0,
    lucks: Sequence[float] | None = None,
) -> list[float]:
    """Each copy's modelled bytes between its real start and finish (``flow_of``, the link shared by
    ``share_links``), each opened with the queue it meets (``flows.standing_queues``, ``queue`` its
    factor) at the rates shared just before, its share weight times its ``lucks`` entry (default 1)."""
    modelled = [0.0] * len(found)
    flows: dict[int, Flow] = {}
    queues: dict[str, float] = {}
    edges = sorted({t for c in found for t in (c.start, c.finish)})
    now, end = edges[0], edges[-1]
    while now < end:
        flowing = [i for i, c in enumerate(found) if c.start <= now < c.finish]
        for i in flowing:
            if i not in flows:
                luck = lucks[i] if lucks is not None else 1.0
                flows[i] = flow_of(
                    found[i], rtt[found[i].site], exponent, overhead_s, queues.get(LINK, 0.0), growth, luck
                )
        share_links([flows[i] for i in flowing], {LINK: CAPACITY_BPS}, now)
        if queue > 0:
            queues = standing_queues([flows[i] for i in flowing], {LINK: CAPACITY_BPS}, queue)
        later = edges[bisect.bisect_right(edges, now + 1e-9)]
        # At least a microsecond on, as the engine steps: a ramp step can round to now.
        step = max(min([later, *(flows[i].next_ramp_step(now) for i in flowing)]), now + 1e-6)
        for i in flowing:
            modelled[i] += flows[i].rate_bps * (step - now) / 8
        now = step
    return modelled


def log_errors(found: list[Copy], modelled: list[float]) -> dict[str, list[float]]:
    """Site -> log(modelled / real bytes) of each of its copies."""
    logs: dict[str, list[float]] = defaultdict(list)
    for c, m in zip(found, modelled, strict=True):
        logs[c.site].append(math.log(max(m, 1.0) / c.size))
    return logs


def bisect_root(grows: Callable[[float], float], low: float, high: float, steps: int = BISECTIONS) -> float:
    """Where the increasing function ``grows`` crosses 0 on [low, high]."""
    for _ in range(steps):
        mid = (low + high) / 2
        low, high = (mid, high) if grows(mid) < 0 else (low, mid)
    return (low + high) / 2


def fitted(
    found: list[Copy], rtt: dict[str, float], queue: float, growth: float = 0.0
) -> tuple[float, float]:
    """(exponent, level): the exponent at which the two lanes' copies are modelled alike, the copies'
    overhead the model's own (``COLD_COPIES``, and the standing queue ``queue``), and the median over all
    copies of modelled / real bytes there (above 1: the real copies carried less than the model gives
    them). Fitting the overhead too
    is ill-posed: a longer one costs the shorter copies more, and the exponent runs away to make up for
    it (tried: -0.2 to -1.0 over the same four runs)."""
    short, long = sorted(rtt, key=rtt.__getitem__)[0], sorted(rtt, key=rtt.__getitem__)[-1]
    overhead = float(COLD_COPIES["leg_overhead_s"])

    def gap(exponent: float) -> float:  # grows with the exponent: the short lane gets more
        logs = log_errors(found, modelled_bytes(found, rtt, exponent, overhead, queue, growth))
        return statistics.median(logs[short]) - statistics.median(logs[long])

    exponent = bisect_root(gap, *EXPONENTS)
    logs = log_errors(found, modelled_bytes(found, rtt, exponent, overhead, queue, growth))
    return exponent, math.exp(statistics.median([v for values in logs.values() for v in values]))


def within_site_spread(found: list[Copy], modelled: list[float], reference: list[float]) -> float:
    """How far log(modelled / reference) of the copies lies from their site's median: the median of the
    distances over all copies (robust: a few copies the model misses by far, short ones whose setup
    dominates, do not decide it)."""
    by_site: dict[str, list[float]] = defaultdict(list)
    for c, m, r in zip(found, modelled, reference, strict=True):
        by_site[c.site].append(math.log(max(m, 1.0) / max(r, 1.0)))
    return statistics.median(
        abs(v - statistics.median(values)) for values in by_site.values() for v in values
    )


def fitted_spread(
    found: list[Copy], rtt: dict[str, float], exponent: float, queue: float, growth: float
) -> float:
    """The simulator's ``share_spread``: the sigma of the log-normal factor on each copy's share weight
    at which the modelled copies spread about the model without it as much as the real copies do (the
    median distance of log(bytes / the model's bytes) from their lane's median). The draws are fixed
    (SPREAD_DRAWS sets, one normal deviate per copy, scaled by sigma), so the modelled spread grows with
    sigma, and the sigma is found by bisection: what the model lacks of the copies' differences, taken as
    their shares' luck."""
    overhead = float(COLD_COPIES["leg_overhead_s"])
    base = modelled_bytes(found, rtt, exponent, overhead, queue, growth)
    real = [c.size for c in found]
    target = within_site_spread(found, real, base)
    generators = [random.Random(seed) for seed in range(SPREAD_DRAWS)]
    draws = [[generator.gauss(0.0, 1.0) for _ in found] for generator in generators]

    def excess(sigma: float) -> float:
        spreads = [
            within_site_spread(
                found,
                modelled_bytes(
                    found, rtt, exponent, overhead, queue, growth, [math.exp(sigma * z) for z in zs]
                ),
                base,
            )
            for zs in draws
        ]
        return statistics.fmean(spreads) - target

    if excess(SPREADS[1]) < 0:
        return SPREADS[1]
    return bisect_root(excess, *SPREADS, steps=SPREAD_BISECTIONS)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("runs", type=Path, nargs="+", help="bench_reality.py result folders")
    parser.add_argument(
        "--standing-queue",
        type=float,
        default=None,
        help="the standing queue's factor (engine.SimConfig.standing_queue; default: the model's for the "
        "run's congestion control)",
    )
    parser.add_argument(
        "--probe-growth",
        type=float,
        default=None,
        help="how fast a copy takes up a larger share (engine.SimConfig.probe_growth; default: the model's "
        "for the run's congestion control; 0: at once)",
    )
    parser.add_argument(
        "--share-spread",
        action="store_true",
        help="also fit each run's share spread (engine.SimConfig.share_spread; about a minute a run)",
    )
    args = parser.parse_args()
    by_control: dict[str, list[tuple[float, float, float]]] = defaultdict(list)
    print(
        "| run | congestion control | copies | rtt_fairness | long / short stream's rate | modelled / real "
        "| share spread |"
    )
    print("|---|---|---|---|---|---|---|")
    for run in args.runs:
        if not (run / "real_jobs.json").exists():
            continue
        result = json.loads((run / "result.json").read_text())
        if paced(result):
            print(f"| {run.name} | copies paced by the SDP: left out | | | | | |")
            continue
        found, rtt = copies(run)
        control = result["workload"].get("congestion_control", "cubic")
        queue = args.standing_queue
        if queue is None:
            queue = BY_CONGESTION_CONTROL.get(control, {}).get("standing_queue", 0.0)
        growth = args.probe_growth
        if growth is None:
            growth = BY_CONGESTION_CONTROL.get(control, {}).get("probe_growth", 0.0)
        exponent, level = fitted(found, rtt, queue, growth)
        ratio = (max(rtt.values()) / min(rtt.values())) ** -exponent
        luck = fitted_spread(found, rtt, exponent, queue, growth) if args.share_spread else math.nan
        by_control[control].append((exponent, level, luck))
        print(
            f"| {run.name} | {control} | {len(found)} | {exponent:+.3f} | {ratio:.2f} | {level:.3f} "
            f"| {luck:.3f} |"
        )
    for control, values in sorted(by_control.items()):
        exponents, levels, lucks = ([v[i] for v in values] for i in range(3))
        spread = f" (sd {statistics.stdev(exponents):.3f})" if len(values) > 1 else ""
        print(
            f"\n{control}, {len(values)} run(s): rtt_fairness {statistics.mean(exponents):+.3f}{spread}, "
            f"modelled / real bytes {statistics.mean(levels):.3f}, share spread {statistics.mean(lucks):.3f}"
        )


if __name__ == "__main__":
    main()

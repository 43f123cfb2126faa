"""Benchmark: the flow simulator checked against reality (issue 17, item 7).

The same scaled workload runs twice:

1. **Real**: a real campaign (``campaigns.services.create_campaign``, mode real) on the long-haul local
   network (localnet/longhaul.py: SKA1-Low's SDP, UKSRC and AUSRC each in a namespace of its own behind the
   packet emulator; RTT and loss as in the reference topology, capacities / CAPACITY_SCALE). PostgreSQL,
   Redis and one Celery worker with beat run the push loop as deployed (a cycle every
   SRCNET_PUSH_INTERVAL = 2 s and when a push job ends, SRCNET_PUSH_ON_SETTLE=1); the campaign's ticks
   write the products at the SDP over XRootD and the push loop submits them; the destinations pull
   (third-party copy). Every second the bench reads the emulator's per-hop counters (the SDP's access
   link, ``low-access>Perth``: every byte to either SRC crosses it) and how many products wait. Products
   whose replica is AVAILABLE (adler32 verified) have their files deleted at once, at the SDP and at the
   SRC, so the disk holds only what is in flight; the campaign's clean-up removes the rest at the end.
2. **Simulated**: the campaign's own Workload (same seed, curve, sizes, sources and destinations round-
   robin) pinned as the push loop plans it (campaigns.simulated.pinned_products, campaigns.feasibility
   .placement), through schedulers.simulations.simulate_workload on the stored topology snapshot as the
   push loop sees it here: every capacity, site budget and telescope volume divided by CAPACITY_SCALE
   (SRCNET_NETWORK_SCALE, what the emulator does; the real run's planner plans on the same figures).

Reported side by side: the access link's utilisation over time (10 s bins) and while products wait,
per-product completion times (p50/p90: replica AVAILABLE - product created, as the campaign scores;
simulated: delivered - arrival), bytes per SRC within the duration and in all. Goals (the issue): the real
run keeps the access link >= 90 % busy while products wait; the simulator's utilisation and p50 within
10 % of the real run. The simulator runs as simulated campaigns run it, with the model options the bench
measured (``models``, replanned as often as the real loop), and fitted to real lanes' job rates
(``fit_lanes``: this run's, or the mean of ``--fit-from`` runs', which the report then also compares it
with), so the model as it is and the corrected ones are in the same run (docs/benchmarks.md).

Run (root: namespaces, TUN, routes):
    .venv/bin/python bench/scheduler/bench_reality.py [--duration 240] [--rate-mbps 110]
        [--files 2] [--min-mib 16] [--max-mib 48] [--fit-from OTHER/result.json ...]
        [--out bench/scheduler/results/reality]

Everything it starts (the network and its sites, which enforce the tokens of the state's issuer as every
deployed site does, the issuer, the worker, PostgreSQL and Redis of its own state folder
``bench-reality``) is stopped by PID at the end, also on failure or Ctrl-C.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import signal
import sys
import tempfile
import time
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from reality_report import AU, BIN_S, SDP, UK, markdown  # noqa: E402  (siblings of this script)
from reality_score import (  # noqa: E402
    CONDITIONS,
    conditions_summary,
    diagnose_real,
    job_timeline,
    lane_dead_times,
    percentile,
    score_real,
    waiting_condition,
)
from reality_stack import (  # noqa: E402
    ENDPOINTS,
    MIB,
    STATE,
    TELESCOPE,
    WORKER_ENV,
    Worker,
    delete_verified,
    disk_used,
    hystart,
    prepare_database,
    shown_predictions,
    waiting_products,
)

# -- the real run -----------------------------------------------------------------------------------------


# The RTT-fairness exponents the lane fit tries (0: equal shares per stream; > 0 the short path gets more,
# CUBIC ~0.25; < 0 the long path, BBR ~-0.3).
FAIRNESS_GRID = tuple(round(0.04 * i, 2) for i in range(-10, 9))
DEAD_FIT_FLOOR_S = 1.0  # a lane whose copies' mean dead time is above this is fitted a dead time
DEAD_MAX_S = 16.0  # the most extra dead time per copy the fit tries on a lane
BISECTIONS = 6
# The simulator column is also run with the copies' draws of seeds 1 .. SEEDS - 1 (SimConfig.seed): how
# much its own figures move with the luck of its copies, beside how much the real runs' do.
SEEDS = 5


def fit_lanes(campaign_id: int, out: Path, targets: dict[str, float], slow_lanes: set[str]) -> dict[str, Any]:
    """The copy model fitted to the real lanes' job rates (``targets``: lane -> the p50 of its jobs' bytes
    over their time, from one or more real runs): for each RTT-fairness exponent of FAIRNESS_GRID, each
    lane's extra dead time per copy (``SimConfig.lane_extra_dead_s``) is bisected until the simulated lane's
    job rate is the real one (two rounds, lane by lane: a lane's copies change what the other gets), on the
    ``slow_lanes`` only: those whose real copies measurably took longer than their share (a mean copy dead
    time of more than DEAD_FIT_FLOOR_S). A lane whose copies kept up with their share and still ran slower
    than simulated got less of the link, which is the exponent's to say (dead time there would idle its
    copies, tried: a 4.4 s dead time on the 7.5 ms lane tripled its products' completion time). The
    exponent whose lanes come nearest (the sum of |log(simulated / real)| over the lanes) is kept.

    What is fitted are the lanes' job rates, not the figures the bench compares (utilisation, completion
    times), so those stay a test of the model. The dead time stands for what the flow model lacks on a
    long lane (its CUBIC copies of tens of MB leave slow start early and regrow slowly after each loss);
    the exponent for how a full link is split between a short and a long lane."""
    best: tuple[float, dict[str, Any]] | None = None
    stack = models()["corrected, copies"]
    for fairness in FAIRNESS_GRID:
        extra = dict.fromkeys(targets, 0.0)

        def simulate_with(dead: dict[str, float], fairness: float = fairness) -> dict[str, Any]:
            lanes = tuple((*lane.split("->"), seconds) for lane, seconds in sorted(dead.items()))
            model = {**stack, "rtt_fairness": fairness}
            return run_simulated(campaign_id, out, "fitted", **model, lane_extra_dead_s=lanes)

        for _ in range(2):
            for lane, target in targets.items():
                if lane not in slow_lanes:
                    continue
                extra[lane] = 0.0
                if (simulate_with(extra)["job_rate_bps"].get(lane) or 0.0) <= target:
                    continue  # as slow as the real lane with no extra dead time
                low, high = 0.0, DEAD_MAX_S
                for _ in range(BISECTIONS):
                    extra[lane] = (low + high) / 2
                    rate = simulate_with(extra)["job_rate_bps"].get(lane) or 0.0
                    low, high = (extra[lane], high) if rate > target else (low, extra[lane])
                extra[lane] = (low + high) / 2
        sim = simulate_with(extra)
        error = sum(
            abs(math.log((sim["job_rate_bps"].get(lane) or 1.0) / target)) for lane, target in targets.items()
        )
        if best is None or error < best[0]:
            best = (error, sim)
    assert best is not None
    best[1]["fit"] = {"job_rate_targets_bps": targets, "log_error": best[0]}
    return best[1]


def slow_lanes(runs: list[dict[str, Any]]) -> set[str]:
    """The lanes whose copies' mean dead time, over the real runs, is above DEAD_FIT_FLOOR_S."""
    dead: dict[str, list[float]] = {}
    for real in runs:
        for lane, figures in real["diagnosis"].get("copy_dead_s", {}).items():
            if figures.get("mean") is not None:
                dead.setdefault(lane, []).append(figures["mean"])
    return {lane for lane, values in dead.items() if sum(values) / len(values) > DEAD_FIT_FLOOR_S}


def lane_job_rate_targets(runs: list[dict[str, Any]]) -> dict[str, float]:
    """Lane -> the mean over the real runs of the p50 of its jobs' rates."""
    rates: dict[str, list[float]] = {}
    for real in runs:
        for lane, figures in real["diagnosis"].items():
            p50 = figures.get("job_rate_bps", {}).get("p50") if isinstance(figures, dict) else None
            if p50:
                rates.setdefault(lane, []).append(p50)
    return {lane: sum(values) / len(values) for lane, values in sorted(rates.items())}


def run_real(args: argparse.Namespace, state: Any, out: Path) -> dict[str, Any]:
    from django.conf import settings
    from django.db import transaction

    from campaigns.models import Campaign
    from campaigns.services import clean_up, create_campaign
    from localnet.binding import bind_endpoints, start_long_haul_token_sites
    from localnet.issuer import issuer_settings
    from localnet.longhaul import CAPACITY_SCALE, long_haul, plan_network

    user = prepare_database(state, args.src_budget_gbps * 1e9 if args.src_budget_gbps > 0 else None)
    plan = plan_network(ENDPOINTS)
    plan.spec.cc = args.congestion_control
    samples: list[dict[str, Any]] = []
    with hystart(args.hystart), long_haul(state, plan) as network:
        # Its sites enforce tokens as every deployed one does: each copy, write and delete carries them.
        start_long_haul_token_sites(
            state, network, names={e: f"BR-{e}" for e in ENDPOINTS}, pacing=args.pacing == "on"
        )
        bind_endpoints(network.sites, tpc_scheme=args.scheme)
        issuer = issuer_settings(state)
        assert issuer is not None, "the sites' issuer is not running"
        settings.SRCNET_TOKENS = {**settings.SRCNET_TOKENS, **issuer.as_setting()}  # for its own deletes
        hop = network.net.spec.hops(network.site_of(SDP), network.site_of(UK))[0]
        assert hop == network.net.spec.hops(network.site_of(SDP), network.site_of(AU))[0]
        capacity = {lk.name: lk.rate_bps for lk in plan.spec.links}[hop.split(">")[0]]
        data_dirs = [site.local_path("") for site in network.sites.values()]
        worker = Worker(state, state.sub("log") / "bench-reality-worker.log")
        try:
            worker.start()
            with transaction.atomic():
                campaign = create_campaign(
                    user=user,
                    name=f"reality {datetime.now(UTC):%Y%m%dT%H%M%S}",
                    mode=Campaign.Mode.REAL,
                    sources=[TELESCOPE],
                    destinations=[UK, AU],
                    target_rate_bps=args.rate_mbps * 1e6,
                    ramp_seconds=0,
                    duration_seconds=args.duration,
                    min_file_bytes=args.min_mib * MIB,
                    max_file_bytes=args.max_mib * MIB,
                    files_per_product=args.files,
                    cleanup=False,  # the bench deletes verified files as it goes, and cleans up after scoring
                )
            cleaned: set[int] = set()
            removed = 0
            peak_disk = 0
            drain = Campaign(duration_seconds=args.duration).drain_seconds()
            deadline = time.monotonic() + args.duration + drain + 120
            last_clean = 0.0
            while time.monotonic() < deadline:
                stats = network.net.stats(fresh=False)
                c = Campaign.objects.get(pk=campaign.pk)
                samples.append(
                    {
                        "time": stats["time"],
                        "tx_bytes": stats["hops"][hop]["tx_bytes"],
                        "drop_queue": stats["hops"][hop].get("drop_queue", 0),
                        # bytes queued at the access link's bottleneck now: its queueing delay
                        "backlog": stats["hops"][hop].get("backlog", 0),
                        **waiting_products(campaign.pk),
                        "shown": shown_predictions(campaign.pk),
                        "products": c.products_created,
                        "state": c.state,
                    }
                )
                if c.state in (Campaign.State.FINISHED, Campaign.State.FAILED):
                    break
                if time.monotonic() - last_clean > 5:
                    removed += delete_verified(cleaned, campaign.pk)
                    peak_disk = max(peak_disk, disk_used(data_dirs))
                    last_clean = time.monotonic()
                time.sleep(1.0)
            campaign.refresh_from_db()
            real = score_real(campaign, samples, capacity, args.duration)
            real.update(
                {
                    "campaign_id": campaign.pk,
                    "state": campaign.state,
                    "error": campaign.error,
                    "hop": hop,
                    "capacity_bps": capacity,
                    "capacity_scale": CAPACITY_SCALE,
                    "files_deleted_during_run": removed,
                    "peak_disk_bytes": peak_disk,
                    "rtt_ms": {d: network.rtt_ms(SDP, d) for d in (UK, AU)},
                }
            )
            real["diagnosis"] = diagnose_real(campaign)
            (out / "real_samples.json").write_text(json.dumps(samples))
            (out / "real_jobs.json").write_text(json.dumps(job_timeline()))
            clean_up(campaign.pk)
        finally:
            worker.stop()
    return real


# -- the simulated run ------------------------------------------------------------------------------------


def run_simulated(campaign_id: int, out: Path, label: str, seed: int = 0, **model: Any) -> dict[str, Any]:
    """The campaign's workload through the simulator on the scaled topology; ``model``: SimConfig options
    (empty: the simulator exactly as simulated campaigns run it, its copies' draws from ``seed``)."""
    from django.conf import settings

    from campaigns.feasibility import placement
    from campaigns.models import Campaign
    from campaigns.simulated import pinned_products
    from localnet.longhaul import CAPACITY_SCALE
    from schedulers.plan_settings import plan_config
    from schedulers.simulation.engine import SimConfig, simulate
    from schedulers.simulations import simulate_workload

    c = Campaign.objects.get(pk=campaign_id)
    place = placement(c, figures_ok=False)
    # The stored topology as the push loop sees it on this network (SRCNET_NETWORK_SCALE, set in main).
    topology = place.topology
    assert settings.SRCNET_NETWORK_SCALE == CAPACITY_SCALE, "the planner must see the emulated capacities"
    pinned = pinned_products(c, place)
    products = [p for _, p in pinned]
    until = c.duration_seconds + c.drain_seconds()
    started = time.perf_counter()
    if model:
        # The plan the real run's loop made (the deployment's SRCNET_PLAN_* settings, set in main).
        deployed = plan_config()
        plan = replace(
            place.scenario.plan,
            copies_in_flight=deployed.copies_in_flight,
            drain_together=deployed.drain_together,
            max_files=deployed.max_files,
            copy_overhead_s=deployed.copy_overhead_s,
            copy_setup_rtts=deployed.copy_setup_rtts,
        )
        # Replanned as often as the real run's loop (its beat; it also runs when a job ends).
        config = SimConfig(
            duration_s=until,
            plan=plan,
            bin_s=1.0,
            replan_s=float(WORKER_ENV["SRCNET_PUSH_INTERVAL"]),
            **model,
        )
        result = simulate(topology, place.scenario.policy, products, config)
    else:
        run = simulate_workload(
            place.scenario, topology, products, until_s=until, bin_s=1.0, out=out / label, seed=seed
        )
        assert run.result is not None
        result = run.result
    wall = time.perf_counter() - started
    access = topology.link(topology.telescope(TELESCOPE).access_link)
    capacity = access.capacity_bps
    per_second = result.access_bytes[TELESCOPE]
    duration = c.duration_seconds
    # A second counts as "products wait" when some product has arrived and is not yet delivered all of it.
    intervals: list[tuple[float, float]] = []
    destinations: list[str] = []
    latencies = []
    per_src: dict[str, dict[str, Any]] = {}
    site_to_endpoint = {site: name for name, site in place.site_of.items()}
    for wp, p in pinned:
        rec = result.records[p.id]
        done = rec.delivered_s.get(p.destination or "", math.inf)
        intervals.append((p.arrival_s, done))
        destinations.append(wp.destination)
        if math.isfinite(done):
            latencies.append(done - p.arrival_s)
            entry = per_src.setdefault(
                site_to_endpoint.get(p.destination or "", wp.destination),
                {"bytes_in_duration": 0, "bytes_total": 0, "products": 0},
            )
            entry["bytes_total"] += wp.size_bytes
            entry["products"] += 1
            if done <= duration:
                entry["bytes_in_duration"] += wp.size_bytes
            entry.setdefault("latencies", []).append(done - p.arrival_s)
    for entry in per_src.values():
        done_in = entry.pop("latencies", [])
        entry["p50_s"], entry["p90_s"] = percentile(done_in, 0.5), percentile(done_in, 0.9)
    cond: dict[str, list[float]] = {k: [0.0, 0.0] for k in CONDITIONS if k != "queued"}
    for second, sent in enumerate(per_second):
        w = {UK: 0, AU: 0}
        for (a, d), destination in zip(intervals, destinations, strict=True):
            if a <= second and second + 1 <= d:
                w[destination] = w.get(destination, 0) + 1
        for name in cond:
            if waiting_condition(name, w):
                cond[name][0] += sent
                cond[name][1] += 1
    nbins = math.ceil(len(per_second) / BIN_S)
    bins = [
        sum(per_second[int(i * BIN_S) : int((i + 1) * BIN_S)]) * 8 / (BIN_S * capacity) for i in range(nbins)
    ]
    return {
        "label": label,
        "model": model,
        "products": len(pinned),
        "complete": len(latencies),
        "latency_s": {"p50": percentile(latencies, 0.5), "p90": percentile(latencies, 0.9), "all": latencies},
        "per_src": per_src,
        "utilisation_bins": bins,
        **conditions_summary(cond, capacity),
        "utilisation_in_duration": sum(per_second[: int(duration)]) * 8 / (duration * capacity),
        "compute_seconds": wall,
        "copy_dead_s": lane_dead_times(
            (f"{m.source}->{m.destination}", m.copy_dead_s) for m in result.measurements
        ),
        "job_rate_bps": lane_job_rates(result.measurements),
    }


def same_workload(path: Path, args: argparse.Namespace) -> dict[str, Any]:
    """The real run of ``path`` (a result.json), which must be of this run's workload (its length and
    rate), else the benchmark stops naming it."""
    other = json.loads(path.read_text())
    workload = other["workload"]
    if (workload["duration_s"], workload["rate_mbps"]) != (args.duration, args.rate_mbps):
        raise SystemExit(
            f"--compare-with {path}: a {workload['duration_s']:g} s campaign at {workload['rate_mbps']:g} "
            f"Mbit/s, not this run's {args.duration:g} s at {args.rate_mbps:g}"
        )
    real: dict[str, Any] = other["real"]
    return real


def other_seeds(campaign_id: int) -> list[dict[str, Any]]:
    """The simulator column again with seeds 1 .. SEEDS - 1 (its reports to a folder dropped after)."""
    with tempfile.TemporaryDirectory() as folder:
        return [
            run_simulated(campaign_id, Path(folder), f"simulator, seed {k}", seed=k) for k in range(1, SEEDS)
        ]


def run_figures(run: dict[str, Any]) -> dict[str, Any]:
    """A run's figures the report compares across runs (a real run's or the simulator's: same keys)."""
    return {
        "busy_while_waiting": run["utilisation_while_waiting"]["any"],
        "p50_s": run["latency_s"]["p50"],
        "per_src_p50_s": {k: v["p50_s"] for k, v in run["per_src"].items()},
    }


def lane_job_rates(measurements: list[Any]) -> dict[str, float | None]:
    """Per lane, the p50 of its legs' rates (a leg's bytes over its first copy's start to its last copy's
    end), as diagnose_real takes the real jobs' ``job_rate_bps``."""
    by_lane: dict[str, list[float]] = {}
    for m in measurements:
        by_lane.setdefault(f"{m.source}->{m.destination}", []).append(m.throughput_bps)
    return {lane: percentile(rates, 0.5) for lane, rates in sorted(by_lane.items())}


# -- the report -------------------------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--duration", type=float, default=240.0, help="campaign duration, seconds")
    parser.add_argument("--rate-mbps", type=float, default=110.0, help="target rate (scaled), Mbit/s")
    parser.add_argument("--files", type=int, default=2, help="files per product")
    parser.add_argument("--min-mib", type=int, default=16)
    parser.add_argument("--max-mib", type=int, default=48)
    parser.add_argument(
        "--lane-depth", type=int, default=2, help="products a lane carries at once (SRCNET_LANE_DEPTH)"
    )
    parser.add_argument(
        "--copies-in-flight",
        choices=("0", "1"),
        default="1",
        help="1: the plan keeps each lane's copies in flight by the copy model; 0: one product's files at "
        "once (the plan before it, the baseline) (SRCNET_PLAN_COPIES_IN_FLIGHT)",
    )
    parser.add_argument(
        "--drain-together",
        choices=("0", "1"),
        default="0",
        help="1: a telescope's lanes share its link by their work in sight, so that they drain together; "
        "0: by the policy's shares (the default) (SRCNET_PLAN_DRAIN_TOGETHER)",
    )
    parser.add_argument(
        "--pace-copies",
        default="0",
        help="> 0: each copy asks the SDP to pace it at this multiple of its share of its lane's planned "
        "rate (wanio.pace); 0: each takes what TCP gets under the site's pacing (SRCNET_PACE_COPIES)",
    )
    parser.add_argument(
        "--src-budget-gbps",
        type=float,
        default=100.0,
        help="UKSRC's and AUSRC's per-telescope budget and peak, unscaled Gbit/s (0: the reference's 20 "
        "and 70); 100 lets the plan fill the access link with either SRC alone",
    )
    parser.add_argument(
        "--congestion-control",
        choices=("cubic", "bbr"),
        default="bbr",
        help="the sites' congestion control on the emulated routes (the emulator's per-route congctl): "
        "bbr, as the long-haul network and the dtn_tuning role have it, or cubic (the runs before "
        "2026-11-26 23:00 UTC)",
    )
    parser.add_argument(
        "--hystart",
        choices=("on", "off", "keep"),
        default="keep",
        help="CUBIC's HyStart for the real run (kernel-wide, restored afterwards); keep: as the kernel is",
    )
    parser.add_argument(
        "--pacing",
        choices=("on", "off"),
        default="on",
        help="on: each site paces the connections reading its files at its path bottleneck, as deployed "
        "(localnet.longhaul, wanio.net.pacing); off: unpaced, as the runs before 2026-11-26 07:00 UTC",
    )
    parser.add_argument(
        "--scheme",
        choices=("davs", "root"),
        default="davs",
        help="the endpoints' third-party-copy scheme (tpc_scheme): davs (XrdHttpTPC, one connection per 16 "
        "MiB block in flight) or root (the sites' xrdcp-wan pull, N sub-streams on any file)",
    )
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "scheduler" / "results" / "reality")
    parser.add_argument(
        "--fit-from",
        type=Path,
        nargs="*",
        default=[],
        help="other runs' result.json: fit the simulator's lanes to their real lanes' job rates (the mean "
        "over them), not this run's, and compare it with the mean of those runs and this one too",
    )
    parser.add_argument(
        "--compare-with",
        type=Path,
        nargs="*",
        default=[],
        help="other runs' result.json of the same workload: the simulator is also compared with the mean of "
        "those runs and this one (default: the --fit-from runs)",
    )
    parser.add_argument("--simulate-only", type=int, default=0, help="campaign id: re-run the simulator only")
    args = parser.parse_args()
    # The simulated campaign (the "simulator" column) replans as often as this run's loop.
    os.environ["SRCNET_PUSH_INTERVAL"] = WORKER_ENV["SRCNET_PUSH_INTERVAL"]
    WORKER_ENV["SRCNET_LANE_DEPTH"] = str(args.lane_depth)
    os.environ["SRCNET_LANE_DEPTH"] = str(args.lane_depth)  # and this process's cycles, if any
    WORKER_ENV["SRCNET_PLAN_COPIES_IN_FLIGHT"] = os.environ["SRCNET_PLAN_COPIES_IN_FLIGHT"] = (
        args.copies_in_flight
    )
    WORKER_ENV["SRCNET_PLAN_DRAIN_TOGETHER"] = os.environ["SRCNET_PLAN_DRAIN_TOGETHER"] = args.drain_together
    WORKER_ENV["SRCNET_PACE_COPIES"] = os.environ["SRCNET_PACE_COPIES"] = args.pace_copies
    from localnet.longhaul import platform_settings

    # The push loop (the worker's, this process's placement) plans on the capacities the emulator carries.
    # And the simulator models the network's congestion control and MTU (the "simulator" column too).
    for name, value in platform_settings(args.congestion_control).items():
        WORKER_ENV[name] = os.environ[name] = value
    assert os.geteuid() == 0, "the long-haul network needs root (network namespaces, TUN, routes)"

    from localnet.stack import down, ensure_core, service_env
    from localnet.state import StateDir

    def _interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, _interrupt)
    state = StateDir.named(STATE)
    args.out.mkdir(parents=True, exist_ok=True)
    load_before = os.getloadavg()
    started = datetime.now(UTC)
    try:
        ensure_core(state)
        os.environ.update(service_env(state, STATE))
        import django

        django.setup()
        before: dict[str, Any] = {}
        if args.simulate_only:
            before = json.loads((args.out / "result.json").read_text())
            real = before["real"]
        else:
            real = run_real(args, state, args.out)
        campaign_id = args.simulate_only or real["campaign_id"]
        sims = [run_simulated(campaign_id, args.out, "simulator")]
        seeds = [sims[0], *other_seeds(campaign_id)]
        sims += [run_simulated(campaign_id, args.out, label, **model) for label, model in models().items()]
        fitted_on = [json.loads(path.read_text())["real"] for path in args.fit_from] or [real]
        sims.append(fit_lanes(campaign_id, args.out, lane_job_rate_targets(fitted_on), slow_lanes(fitted_on)))
        if args.compare_with:
            compared = [*(same_workload(path, args) for path in args.compare_with), real]
        else:
            compared = [*fitted_on, real] if args.fit_from else [real]
    finally:
        down(state)
    result = {
        "command": " ".join([".venv/bin/python", "bench/scheduler/bench_reality.py", *sys.argv[1:]]),
        "date": started.strftime("%Y-%m-%d %H:%M UTC"),
        "machine": f"{platform.node()} {os.cpu_count()} cores, {platform.platform()}",
        "load_before": load_before,
        "load_after": os.getloadavg(),
        "workload": {
            "rate_mbps": args.rate_mbps,
            "duration_s": args.duration,
            "files_per_product": args.files,
            "lane_depth": args.lane_depth,
            "copies_in_flight": args.copies_in_flight,
            "drain_together": args.drain_together,
            "pace_copies": args.pace_copies,
            "src_budget_gbps": args.src_budget_gbps,
            "file_mib": [args.min_mib, args.max_mib],
            "congestion_control": args.congestion_control,
            "hystart": args.hystart,
            "lanes_fitted_on": [str(p) for p in args.fit_from] or "this run",
        },
        # The real runs the simulator is also compared with as a whole (their mean): --compare-with's (else
        # the fit's) and this one.
        "real_runs": [run_figures(r) for r in compared],
        "real": real,
        "simulated": sims,
        # The simulator as simulated campaigns run it, its copies' draws from other seeds: its own spread.
        "simulator_seeds": [{"seed": k, **run_figures(run)} for k, run in enumerate(seeds)],
    }
    if before:  # the real run's command, date and load stay; the simulator's re-run is noted
        result.update({k: before[k] for k in ("command", "date", "load_before", "load_after", "workload")})
        result["resimulated"] = {
            "command": " ".join(sys.argv),
            "date": started.strftime("%Y-%m-%d %H:%M UTC"),
        }
    (args.out / "result.json").write_text(json.dumps(result, indent=1, default=str))
    table = markdown(result)
    (args.out / "result.md").write_text(table)
    print(json.dumps({k: v for k, v in result.items() if k not in ("real", "simulated")}, indent=1))
    print(table)
    return 0


# The simulator's model options (SimConfig) run beside the model as it is, on the same workload; what each
# stands for and where its figure comes from is in docs/benchmarks.md ("Simulator against reality").
def models() -> dict[str, dict[str, Any]]:
    """Label -> the model's options, on this run's network (schedulers.simulations.deployed_stack: the
    congestion control and MTU that main sets)."""
    from schedulers.simulations import deployed_stack

    stack = deployed_stack()
    return {
        # The measured options without copies in flight: one flow per leg, as the simulator had it before.
        "corrected": {**stack, "copies_in_flight": False},
        # File by file, up to the plan's copies in flight per lane, as the loop runs them (issue 17 item 7).
        "corrected, copies": stack,  # what simulated campaigns run with
    }


if __name__ == "__main__":
    sys.exit(main())

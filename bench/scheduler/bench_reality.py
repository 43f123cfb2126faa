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
10 % of the real run. With ``--model`` the simulator also runs with the corrected model options the
bench measured (see docs/benchmarks.md), so the baseline model and the corrected one are in the same run.

Run (root: namespaces, TUN, routes):
    .venv/bin/python bench/scheduler/bench_reality.py [--duration 240] [--rate-mbps 110]
        [--files 2] [--min-mib 16] [--max-mib 48] [--out bench/scheduler/results/reality]

Everything it starts (the network and its sites, the worker, PostgreSQL and Redis of its own state
folder ``bench-reality``) is stopped by PID at the end, also on failure or Ctrl-C.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import math
import os
import platform
import signal
import subprocess
import sys
import time
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

STATE = "bench-reality"
SDP, UK, AU = "SKA1-LOW_SDP", "UKSRC_DISK", "AUSRC_DISK"
ENDPOINTS = (SDP, UK, AU)
TELESCOPE = "SKA1-Low"
MIB = 1024 * 1024
BIN_S = 10.0
WORKER_ENV = {"SRCNET_PUSH_INTERVAL": "2", "SRCNET_PUSH_ON_SETTLE": "1"}


def percentile(values: list[float], q: float) -> float | None:
    """Nearest rank (as campaigns.scoring.percentile)."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, math.ceil(q * len(ordered)) - 1))]


# -- the real run -----------------------------------------------------------------------------------------


class Worker:
    """One Celery worker with beat, the push loop as deployed; stopped by PID (its pool first)."""

    def __init__(self, state: Any, log: Path) -> None:
        from localnet.stack import platform_process

        self.env, self.account = platform_process(state, STATE)
        self.env.update(WORKER_ENV)
        self.log = log
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        from localnet.processes import is_alive
        from localnet.stack import spawn_platform_process, worker_argv

        argv = worker_argv(f"bench-reality-{os.getpid()}@%h", concurrency=4, beat=True)
        self.proc = spawn_platform_process(argv, self.env, self.account, self.log)
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            if not is_alive(self.proc.pid):
                raise RuntimeError(f"celery worker exited; see {self.log}")
            if b" ready." in self.log.read_bytes()[-20000:]:
                return
            time.sleep(0.3)
        raise RuntimeError(f"celery worker not ready after 90 s; see {self.log}")

    def stop(self) -> None:
        from localnet.processes import stop_pid

        if self.proc is None:
            return
        try:
            with open(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children") as fh:
                children = [int(p) for p in fh.read().split()]
        except FileNotFoundError:
            children = []
        for pid in [*children, self.proc.pid]:
            stop_pid(pid, timeout=20)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)


def prepare_database(state: Any, src_budget_bps: float | None) -> Any:
    """The reference topology in this state's own database. ``src_budget_bps``: the two SRCs' per-telescope
    budget and peak (unscaled), so that the plan may fill the access link with them: with the reference
    budgets (20 Gbit/s per telescope) two SRCs may take only 40 % of it, and one alone 20 %, by design (no
    plan exceeds a budget). They stand for the several SRCs a full link feeds. None: as the reference."""
    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    from topology.management.commands.import_topology import REFERENCE
    from topology.models import RegionalCentre
    from topology.services.importer import import_topology

    call_command("migrate", verbosity=0)
    call_command("flush", interactive=False, verbosity=0)  # this state's own database: a clean slate
    import_topology(text=REFERENCE.read_text())
    if src_budget_bps is not None:
        RegionalCentre.objects.filter(name__in=("UKSRC", "AUSRC")).update(
            budget_per_telescope_bps=int(src_budget_bps), peak_bps=int(src_budget_bps)
        )
    user, _ = get_user_model().objects.get_or_create(username="bench", defaults={"is_staff": True})
    return user


def delete_verified(cleaned: set[int], campaign_id: int) -> int:
    """Delete the files of the campaign's products whose replica is AVAILABLE (adler32 verified at the
    destination): at every replica, the SDP's included. The rows stay for the score."""
    from XRootD import client

    from replicas.choices import ProductState
    from replicas.models import DataProduct

    removed = 0
    done = DataProduct.objects.filter(
        campaign_link__campaign_id=campaign_id, state=ProductState.PLACED
    ).exclude(pk__in=cleaned)
    for product in done.prefetch_related("files", "replicas__endpoint"):
        for replica in product.replicas.all():
            endpoint = replica.endpoint
            fs = client.FileSystem(f"root://{endpoint.hostname}:{endpoint.root_port}")
            for f in product.files.all():
                status, _ = fs.rm(f"/{endpoint.prefix}{f.relative_path}".replace("//", "/"), timeout=10)
                removed += int(status.ok)
        cleaned.add(product.pk)
    return removed


def waiting_products(campaign_id: int) -> dict[str, int]:
    """The campaign's products not yet delivered, per destination, and how many of them still wait at the
    SDP (registered, no copy submitted)."""
    from django.db.models import Count

    from replicas.choices import ProductState
    from replicas.models import DataProduct

    rows = (
        DataProduct.objects.filter(campaign_link__campaign_id=campaign_id)
        .exclude(state__in=[ProductState.PLACED, ProductState.FAILED])
        .values("campaign_link__destination", "state")
        .annotate(n=Count("id"))
    )
    waiting: dict[str, int] = {UK: 0, AU: 0, "queued": 0}
    for row in rows:
        waiting[row["campaign_link__destination"]] = (
            waiting.get(row["campaign_link__destination"], 0) + row["n"]
        )
        if row["state"] == ProductState.REGISTERED:
            waiting["queued"] += row["n"]
    return waiting


def disk_used(paths: list[Path]) -> int:
    total = 0
    for root in paths:
        for dirpath, _, names in os.walk(root):
            for name in names:
                with contextlib.suppress(OSError):
                    total += os.lstat(os.path.join(dirpath, name)).st_size
    return total


def run_real(args: argparse.Namespace, state: Any, out: Path) -> dict[str, Any]:
    from django.db import transaction

    from campaigns.models import Campaign
    from campaigns.services import clean_up, create_campaign
    from localnet.binding import bind_endpoints
    from localnet.longhaul import CAPACITY_SCALE, long_haul, plan_network

    user = prepare_database(state, args.src_budget_gbps * 1e9 if args.src_budget_gbps > 0 else None)
    plan = plan_network(ENDPOINTS)
    samples: list[dict[str, Any]] = []
    with long_haul(state, plan) as network:
        network.start_sites(names={e: f"BR-{e}" for e in ENDPOINTS})
        bind_endpoints(network.sites)
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
                        **waiting_products(campaign.pk),
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
            clean_up(campaign.pk)
        finally:
            worker.stop()
    return real


CONDITIONS = ("any", "both", "one", "queued")


def waiting_condition(name: str, w: dict[str, Any]) -> bool:
    """Whether a sample (undelivered products per destination, queued at the SDP) meets a condition."""
    lanes = (w.get(UK, 0) > 0) + (w.get(AU, 0) > 0)
    return {"any": lanes > 0, "both": lanes == 2, "one": lanes == 1, "queued": w.get("queued", 0) > 0}[name]


def conditions_summary(cond: dict[str, list[float]], capacity: float) -> dict[str, Any]:
    return {
        "utilisation_while_waiting": {
            name: (sent * 8 / (secs * capacity) if secs else None) for name, (sent, secs) in cond.items()
        },
        "waiting_seconds": {name: secs for name, (_, secs) in cond.items()},
    }


def score_real(c: Any, samples: list[dict[str, Any]], capacity: float, duration: float) -> dict[str, Any]:
    from campaigns.models import CampaignProduct
    from replicas.choices import ReplicaState
    from replicas.models import Replica

    t0 = c.started.timestamp()
    # The access link: bytes per bin, and under each waiting condition (true at both ends of a sample
    # interval): some product undelivered, both SRCs' products, one SRC's only, some product still queued.
    horizon = max((s["time"] - t0 for s in samples), default=0.0)
    nbins = max(1, math.ceil(horizon / BIN_S))
    bins = [0.0] * nbins
    cond: dict[str, list[float]] = {k: [0.0, 0.0] for k in CONDITIONS}
    dur_bytes = 0.0
    for a, b in itertools.pairwise(samples):
        dt = b["time"] - a["time"]
        sent = b["tx_bytes"] - a["tx_bytes"]
        if dt <= 0 or a["time"] < t0:
            continue
        mid = (a["time"] + b["time"]) / 2 - t0
        if 0 <= mid < nbins * BIN_S:
            bins[int(mid // BIN_S)] += sent
        if mid < duration:
            dur_bytes += sent
        for name in CONDITIONS:
            if waiting_condition(name, a) and waiting_condition(name, b):
                cond[name][0] += sent
                cond[name][1] += dt
    utilisation = [b * 8 / (BIN_S * capacity) for b in bins]
    links = list(CampaignProduct.objects.filter(campaign=c).values("product_id", "destination", "size_bytes"))
    by_product = {row["product_id"]: row for row in links}
    latencies: list[float] = []
    per_src: dict[str, dict[str, Any]] = {}
    replicas = Replica.objects.filter(product_id__in=list(by_product), state=ReplicaState.AVAILABLE).values(
        "product_id", "endpoint__name", "updated", "product__created", "product__predicted_arrival"
    )
    # The push loop's predicted arrival (schedulers/arrivals.py, the prediction at submission) against the
    # arrival: its error, and that error relative to the product's wait (created to arrival).
    prediction_errors: list[float] = []
    relative_errors: list[float] = []
    for r in replicas:
        row = by_product[r["product_id"]]
        if r["endpoint__name"] != row["destination"]:
            continue
        if r["product__predicted_arrival"] is not None:
            error = (r["updated"] - r["product__predicted_arrival"]).total_seconds()
            wait = (r["updated"] - r["product__created"]).total_seconds()
            prediction_errors.append(error)
            relative_errors.append(abs(error) / wait if wait > 0 else 0.0)
        done_at = r["updated"].timestamp() - t0
        entry = per_src.setdefault(
            row["destination"], {"bytes_in_duration": 0, "bytes_total": 0, "products": 0}
        )
        entry["bytes_total"] += row["size_bytes"]
        entry["products"] += 1
        if done_at <= duration:
            entry["bytes_in_duration"] += row["size_bytes"]
        latencies.append((r["updated"] - r["product__created"]).total_seconds())
        entry.setdefault("latencies", []).append(latencies[-1])
    for entry in per_src.values():
        done = entry.pop("latencies", [])
        entry["p50_s"], entry["p90_s"] = percentile(done, 0.5), percentile(done, 0.9)
    return {
        "products": len(links),
        "offered_bytes": sum(r["size_bytes"] for r in links),
        "complete": len(latencies),
        "latency_s": {"p50": percentile(latencies, 0.5), "p90": percentile(latencies, 0.9), "all": latencies},
        "per_src": per_src,
        "arrival_prediction": {
            "products": len(prediction_errors),
            "error_s": {
                "p50": percentile(sorted(abs(e) for e in prediction_errors), 0.5),
                "p90": percentile(sorted(abs(e) for e in prediction_errors), 0.9),
                "mean_signed": sum(prediction_errors) / len(prediction_errors) if prediction_errors else None,
            },
            "error_of_wait": {
                "p50": percentile(relative_errors, 0.5),
                "p90": percentile(relative_errors, 0.9),
            },
        },
        "utilisation_bins": utilisation,
        **conditions_summary(cond, capacity),
        "utilisation_in_duration": dur_bytes * 8 / (duration * capacity),
        "wall_seconds": horizon,
    }


def diagnose_real(c: Any) -> dict[str, Any]:
    """Where a lane's time goes: each product's job from submission to its files' end, per lane in order."""
    from srcnet.intervals import most_at_once
    from transfers.models import TransferFile

    # This state's database holds the campaign's jobs only (flushed at the start).
    rows = list(
        TransferFile.objects.values(
            "job_id", "job__created", "job__metadata", "start_time", "finish_time", "filesize", "dest_se"
        )
    )
    jobs: dict[int, dict[str, Any]] = {}
    for r in rows:
        if r["start_time"] is None or r["finish_time"] is None:
            continue
        j = jobs.setdefault(
            r["job_id"],
            {
                "lane": "->".join(r["job__metadata"].get("lane") or [r["dest_se"]]),
                "streams": r["job__metadata"].get("streams"),
                "files": r["job__metadata"].get("files"),
                "lane_files": r["job__metadata"].get("lane_files"),
                "spans": [],
                "created": r["job__created"],
                "start": r["start_time"],
                "end": r["finish_time"],
                "bytes": 0,
            },
        )
        j["start"], j["end"] = min(j["start"], r["start_time"]), max(j["end"], r["finish_time"])
        j["bytes"] += r["filesize"] or 0
        j["spans"].append((r["start_time"], r["finish_time"]))
    lanes: dict[str, list[dict[str, Any]]] = {}
    for j in jobs.values():
        lanes.setdefault(j["lane"], []).append(j)
    out: dict[str, Any] = {}
    for lane, js in lanes.items():
        js.sort(key=lambda j: j["start"])
        gaps = [(b["start"] - a["end"]).total_seconds() for a, b in itertools.pairwise(js)]
        active = [(j["end"] - j["start"]).total_seconds() for j in js]
        queued = [(j["start"] - j["created"]).total_seconds() for j in js]
        rates = [j["bytes"] * 8 / a for j, a in zip(js, active, strict=True) if a > 0]
        out[lane] = {
            "jobs": len(js),
            "streams": sorted({j["streams"] for j in js if j["streams"] is not None}),
            "concurrent_files": sorted({j["files"] for j in js if j["files"] is not None}),
            "lane_copies_planned": sorted({j["lane_files"] for j in js if j["lane_files"] is not None}),
            "most_copies_at_once": most_at_once([span for j in js for span in j["spans"]]),
            "gap_between_jobs_s": {
                "p50": percentile(gaps, 0.5),
                "mean": sum(gaps) / len(gaps) if gaps else None,
            },
            "job_submitted_to_start_s": {"p50": percentile(queued, 0.5)},
            "job_active_s": {"p50": percentile(active, 0.5)},
            "job_rate_bps": {
                "p50": percentile(rates, 0.5),
                "mean": sum(rates) / len(rates) if rates else None,
            },
        }
    return out


# -- the simulated run ------------------------------------------------------------------------------------


def run_simulated(campaign_id: int, out: Path, label: str, **model: Any) -> dict[str, Any]:
    """The campaign's workload through the simulator on the scaled topology; ``model``: SimConfig options
    (empty: the simulator exactly as simulated campaigns run it)."""
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
            max_files=deployed.max_files,
            copy_overhead_s=deployed.copy_overhead_s,
            copy_setup_rtts=deployed.copy_setup_rtts,
        )
        config = SimConfig(duration_s=until, plan=plan, bin_s=1.0, **model)
        result = simulate(topology, place.scenario.policy, products, config)
    else:
        run = simulate_workload(place.scenario, topology, products, until_s=until, bin_s=1.0, out=out / label)
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
    }


# -- the report -------------------------------------------------------------------------------------------


def ratio(sim: float | None, real: float | None) -> float | None:
    return sim / real if sim is not None and real else None


def markdown(result: dict[str, Any]) -> str:
    real, sims = result["real"], result["simulated"]
    cols = ["real", *[s["label"] for s in sims]]
    runs = [real, *sims]

    def pct(x: float | None) -> str:
        return "n/a" if x is None else f"{100 * x:.1f} %"

    def sec(x: float | None) -> str:
        return "n/a" if x is None else f"{x:.1f} s"

    def row(figure: str, cells: list[str]) -> str:
        return f"| {figure} | {' | '.join(cells)} |"

    lines = [row("figure", cols), f"|---|{'---|' * len(cols)}"]
    for name, what in (
        ("any", "some product undelivered"),
        ("both", "both SRCs' products undelivered"),
        ("one", "one SRC's products only"),
        ("queued", "some product queued at the SDP"),
    ):
        cells = [
            f"{pct(r['utilisation_while_waiting'].get(name))} ({r['waiting_seconds'].get(name, 0):.0f} s)"
            if name in r["utilisation_while_waiting"]
            else "n/a"
            for r in runs
        ]
        lines.append(row(f"access link busy while {what} (time)", cells))
    lines += [
        row("access link busy over the duration", [pct(r["utilisation_in_duration"]) for r in runs]),
        row("products complete / made", [f"{r['complete']} / {r['products']}" for r in runs]),
        row("completion p50", [sec(r["latency_s"]["p50"]) for r in runs]),
        row("completion p90", [sec(r["latency_s"]["p90"]) for r in runs]),
    ]
    for src in (UK, AU):
        for key, what in (("p50_s", "p50"), ("p90_s", "p90")):
            lines.append(
                row(f"completion {what} at {src}", [sec(r["per_src"].get(src, {}).get(key)) for r in runs])
            )
    for src in (UK, AU):
        for key, what in (("bytes_in_duration", "within the duration"), ("bytes_total", "in all")):
            values = [r["per_src"].get(src, {}).get(key, 0) / 1e6 for r in runs]
            lines.append(row(f"MB to {src} {what}", [f"{v:.0f}" for v in values]))
    busy = real["utilisation_while_waiting"]["any"]
    lines.append(
        row(
            "simulated / real: busy while undelivered",
            ["1"] + [f"{ratio(s['utilisation_while_waiting']['any'], busy) or 0:.3f}" for s in sims],
        )
    )
    lines.append(
        row(
            "simulated / real: p50",
            ["1"] + [f"{ratio(s['latency_s']['p50'], real['latency_s']['p50']) or 0:.3f}" for s in sims],
        )
    )
    predicted = real.get("arrival_prediction")
    if predicted:
        lines += [
            "",
            f"The push loop's predicted arrival against the arrival ({predicted['products']} products, the "
            "prediction made as each product's first leg was submitted):",
            "",
            "| figure | p50 | p90 |",
            "|---|---|---|",
            f"| error, seconds | {sec(predicted['error_s']['p50'])} | {sec(predicted['error_s']['p90'])} |",
            f"| error / the product's wait | {pct(predicted['error_of_wait']['p50'])} | "
            f"{pct(predicted['error_of_wait']['p90'])} |",
            "",
            f"Mean signed error (arrival - prediction): {sec(predicted['error_s']['mean_signed'])}.",
        ]
    lines += ["", f"Access-link utilisation per {BIN_S:g} s bin (from the campaign's start):", ""]
    lines += [row("t (s)", cols), f"|---|{'---|' * len(cols)}"]
    for i in range(max(len(r["utilisation_bins"]) for r in runs)):
        cells = [pct(r["utilisation_bins"][i]) if i < len(r["utilisation_bins"]) else "" for r in runs]
        if all(c in ("", "0.0 %") for c in cells):
            continue
        lines.append(row(f"{i * BIN_S:.0f}-{(i + 1) * BIN_S:.0f}", cells))
    return "\n".join(lines) + "\n"


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
        "--src-budget-gbps",
        type=float,
        default=100.0,
        help="UKSRC's and AUSRC's per-telescope budget and peak, unscaled Gbit/s (0: the reference's 20 "
        "and 70); 100 lets the plan fill the access link with either SRC alone",
    )
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "scheduler" / "results" / "reality")
    parser.add_argument("--simulate-only", type=int, default=0, help="campaign id: re-run the simulator only")
    args = parser.parse_args()
    WORKER_ENV["SRCNET_LANE_DEPTH"] = str(args.lane_depth)
    os.environ["SRCNET_LANE_DEPTH"] = str(args.lane_depth)  # and this process's cycles, if any
    WORKER_ENV["SRCNET_PLAN_COPIES_IN_FLIGHT"] = os.environ["SRCNET_PLAN_COPIES_IN_FLIGHT"] = (
        args.copies_in_flight
    )
    from localnet.longhaul import CAPACITY_SCALE

    # The push loop (the worker's, this process's placement) plans on the capacities the emulator carries.
    WORKER_ENV["SRCNET_NETWORK_SCALE"] = os.environ["SRCNET_NETWORK_SCALE"] = f"{CAPACITY_SCALE:g}"
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
        sims += [run_simulated(campaign_id, args.out, label, **model) for label, model in MODELS.items()]
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
            "src_budget_gbps": args.src_budget_gbps,
            "file_mib": [args.min_mib, args.max_mib],
        },
        "real": real,
        "simulated": sims,
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
_PHYSICS: dict[str, Any] = {
    "paced": False,  # the push jobs are not paced: the plan's max_rate_bps reaches no transfer
    "rtt_fairness": 0.28,  # measured: 2.6:1 to the 7.5 ms lane against the 223 ms one on a full link
    "cold_every_leg": True,  # every third-party copy opens new connections
    "initial_window_bytes": 10 * 1448,  # from 10 segments (MTU 1500)
    "leg_overhead_s": 0.2,  # measured: p50 gap between a lane's jobs
    "leg_setup_rtts": 4,  # TCP, TLS 1.2 and the GET before the first byte
}
MODELS: dict[str, dict[str, Any]] = {
    "unpaced": {"paced": False},
    "corrected": _PHYSICS,
    "corrected, fitted": {**_PHYSICS, "leg_setup_rtts": 30},  # fitted to the 2nd real run, see the docs
    # File by file, up to the plan's copies in flight per lane, as the loop runs them (issue 17 item 7).
    "corrected, copies": {**_PHYSICS, "copies_in_flight": True},
}


if __name__ == "__main__":
    sys.exit(main())

"""Scoring bench_reality.py's real run: the access link's utilisation while products wait, completion
times per SRC, and where each lane's time went (its jobs, copies at once, gaps)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping
from typing import Any

from reality_report import AU, BIN_S, UK


def percentile(values: list[float], q: float) -> float | None:
    """Nearest rank (as campaigns.scoring.percentile)."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, math.ceil(q * len(ordered)) - 1))]


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
        "product_id",
        "endpoint__name",
        "updated",
        "product__created",
        "product__submitted_prediction",
        "product__arrival_note",
    )
    at_destination = [
        r for r in replicas if r["endpoint__name"] == by_product[r["product_id"]]["destination"]
    ]
    shown = shown_errors(samples, {r["product_id"]: r for r in at_destination})
    # The push loop's predicted arrival made as the first copy was submitted (schedulers/arrivals.py,
    # ``submitted_prediction``) against the arrival: its error, and that error relative to the product's
    # wait (created to arrival).
    prediction_errors: list[float] = []
    relative_errors: list[float] = []
    per_destination: dict[str, list[tuple[float, float]]] = {}
    each: list[dict[str, Any]] = []
    for r in replicas:
        row = by_product[r["product_id"]]
        if r["endpoint__name"] != row["destination"]:
            continue
        if r["product__submitted_prediction"] is not None:
            error = (r["updated"] - r["product__submitted_prediction"]).total_seconds()
            wait = (r["updated"] - r["product__created"]).total_seconds()
            prediction_errors.append(error)
            relative_errors.append(abs(error) / wait if wait > 0 else 0.0)
            per_destination.setdefault(row["destination"], []).append((error, relative_errors[-1]))
            each.append(
                {
                    "destination": row["destination"],
                    "created_s": r["product__created"].timestamp() - t0,
                    "wait_s": wait,
                    "error_s": error,
                    "note": r["product__arrival_note"],
                }
            )
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
            "per_destination": {
                destination: {
                    "products": len(pairs),
                    "error_s_p50": percentile([abs(e) for e, _ in pairs], 0.5),
                    "mean_signed_s": sum(e for e, _ in pairs) / len(pairs),
                    "error_of_wait_p50": percentile([r for _, r in pairs], 0.5),
                }
                for destination, pairs in sorted(per_destination.items())
            },
            "products_each": sorted(each, key=lambda e: e["created_s"]),
            "shown_over_the_wait": shown,
        },
        "utilisation_bins": utilisation,
        **conditions_summary(cond, capacity),
        "utilisation_in_duration": dur_bytes * 8 / (duration * capacity),
        "wall_seconds": horizon,
    }


def shown_over_time(samples: list[dict[str, Any]]) -> dict[int, list[tuple[float, float]]]:
    """Product id -> (sample time, the arrival it showed then), from a run's samples (bench_reality.py's
    ``shown``, one sample a second), in time order."""
    shown: dict[int, list[tuple[float, float]]] = {}
    for sample in samples:
        for key, predicted in sample.get("shown", {}).items():
            shown.setdefault(int(key), []).append((sample["time"], predicted))
    return shown


def shown_errors(samples: list[dict[str, Any]], arrived: Mapping[int, Mapping[str, Any]]) -> dict[str, Any]:
    """The prediction as a scientist reads it while waiting: for each delivered product, the mean over the
    run's samples (one a second) from its first shown prediction to its arrival of |arrival - the arrival
    shown then| over its wait (registered to arrival); then the median and p90 of those means."""
    errors: dict[int, list[float]] = {}
    for product, shown in shown_over_time(samples).items():
        row = arrived.get(product)
        if row is None:
            continue
        end = row["updated"].timestamp()
        wait = end - row["product__created"].timestamp()
        if wait > 0:
            errors[product] = [abs(end - predicted) / wait for at, predicted in shown if at < end]
    means = sorted(sum(e) / len(e) for e in errors.values() if e)
    return {"products": len(means), "p50": percentile(means, 0.5), "p90": percentile(means, 0.9)}


def job_timeline() -> dict[str, Any]:
    """The run's push jobs and their files (submission, start and end of each, bytes), and the lanes'
    measurements, as epoch seconds: what arrival_error_sources.py replays the predictions on."""
    from schedulers.models import PathMeasurement
    from transfers.models import TransferJob

    def ts(at: Any) -> float | None:
        return at.timestamp() if at is not None else None

    # This state's database holds the campaign's jobs only (flushed at the start).
    jobs = [
        {
            "created": ts(job.created),
            "finished": ts(job.finished),
            "metadata": job.metadata,
            "files": [
                {"size": f.filesize, "state": f.state, "start": ts(f.start_time), "finish": ts(f.finish_time)}
                for f in job.files.all()
            ],
        }
        for job in TransferJob.objects.prefetch_related("files").order_by("created")
    ]
    measurements = [
        {
            "source": m.source,
            "destination": m.destination,
            "created": ts(m.created),
            "seconds": m.seconds,
            "bytes": m.bytes,
        }
        for m in PathMeasurement.objects.filter(succeeded=True)
    ]
    return {"jobs": jobs, "measurements": measurements}


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
                "sizes": [],
                "created": r["job__created"],
                "start": r["start_time"],
                "end": r["finish_time"],
                "bytes": 0,
            },
        )
        j["start"], j["end"] = min(j["start"], r["start_time"]), max(j["end"], r["finish_time"])
        j["bytes"] += r["filesize"] or 0
        j["spans"].append((r["start_time"], r["finish_time"]))
        j["sizes"].append(r["filesize"] or 0)
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
        copy_rates = [
            size * 8 / (end - start).total_seconds()
            for j in js
            for (start, end), size in zip(j["spans"], j["sizes"], strict=True)
            if end > start
        ]
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
            # Each copy (file) alone: its bytes over its own time, whatever else ran beside it.
            "copy_rate_bps": {"p50": percentile(copy_rates, 0.5), "p90": percentile(copy_rates, 0.9)},
        }
    # Why copies failed (attempts included: a retried copy's first failure is a cause too), and the
    # lanes the push loop took out: the replicas and their reasons go with the campaign's clean-up.
    from schedulers.models import PushCycle
    from transfers.models import TransferAttempt

    failed = TransferAttempt.objects.exclude(reason="").values_list("file__job__metadata", "reason")
    out["failed_attempts"] = [
        {"lane": "->".join((meta or {}).get("lane") or ["?"]), "reason": reason[:300]}
        for meta, reason in failed
    ]
    # Each lane's measured copy dead time (schedulers/measurements.py), which the planner sizes its copies
    # in flight by and the simulator is fitted to.
    from schedulers.models import PathMeasurement

    out["copy_dead_s"] = lane_dead_times(
        (f"{m.source}->{m.destination}", m.copy_dead_s) for m in PathMeasurement.objects.all()
    )
    out["stages_s"] = product_stages()
    out["lane_events"] = [
        e
        for cycle in PushCycle.objects.order_by("created")
        for e in cycle.events
        if e.get("kind") != "degrade"
    ][:50]
    return out


def lane_dead_times(samples: Iterable[tuple[str, float | None]]) -> dict[str, dict[str, float | None]]:
    """Per lane, the mean, p50 and p90 of the copy dead times measured (those that are known)."""
    by_lane: dict[str, list[float]] = {}
    for lane, dead in samples:
        if dead is not None:
            by_lane.setdefault(lane, []).append(dead)
    return {
        lane: {
            "mean": sum(values) / len(values),
            "p50": percentile(values, 0.5),
            "p90": percentile(values, 0.9),
            "copies": len(values),
        }
        for lane, values in sorted(by_lane.items())
    }


STAGES = ("registered_to_submitted", "submitted_to_started", "started_to_copied", "copied_to_available")


def product_stages() -> dict[str, dict[str, Any]]:
    """Where each delivered product's wait went, per lane (p50 and mean of each stage): from its
    registration to its push job's submission (the push loop's cycle and the lane's queue in the
    platform), to its first file's start (the transfer service's queue), to its last file's end (the
    copy), to its replica being AVAILABLE (the job's end reaching the platform, the checksum check)."""
    from replicas.choices import ReplicaState
    from replicas.models import Replica
    from transfers.models import TransferFile

    jobs: dict[int, dict[str, Any]] = {}
    for row in TransferFile.objects.values(
        "job__metadata", "job__created", "start_time", "finish_time"
    ).order_by("job__created"):
        replica_id = (row["job__metadata"] or {}).get("replica_id")
        if not isinstance(replica_id, int):
            continue
        j = jobs.setdefault(replica_id, {"submitted": row["job__created"], "start": None, "end": None})
        if row["start_time"] is not None:
            j["start"] = row["start_time"] if j["start"] is None else min(j["start"], row["start_time"])
        if row["finish_time"] is not None:
            j["end"] = row["finish_time"] if j["end"] is None else max(j["end"], row["finish_time"])
    per_lane: dict[str, dict[str, list[float]]] = {}
    replicas = Replica.objects.filter(pk__in=list(jobs), state=ReplicaState.AVAILABLE).values_list(
        "pk", "product__created", "updated", "product__telescope__name", "endpoint__site__name"
    )
    for pk, created, available, telescope, site in replicas:
        j = jobs[pk]
        if j["start"] is None or j["end"] is None:
            continue
        moments = (created, j["submitted"], j["start"], j["end"], available)
        lane = per_lane.setdefault(f"{telescope}->{site}", {name: [] for name in STAGES})
        for name, (a, b) in zip(STAGES, itertools.pairwise(moments), strict=True):
            lane[name].append((b - a).total_seconds())
    return {
        lane: {
            name: {
                "p50": percentile(values, 0.5),
                "mean": sum(values) / len(values) if values else None,
            }
            for name, values in stages.items()
        }
        for lane, stages in per_lane.items()
    }

"""Handing a due leg of the push plan on: the replicas it places and one transfer job (a multihop job for
a relay) through the transfertool, with the plan's streams, priority and the lane's link limit set through
the transfertool's ``/config/links``; in Rucio mode one rule instead (``rucio_placement``), with the plan's
streams per copy as the link's ``nostreams``. Each hand-over is
its own transaction inside the cycle's, and records why the replica is where it is."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Exists, Q
from django.utils import timezone

from replicas import lifecycle
from replicas.choices import PolicyKind as StoredKind
from replicas.choices import ProductState, ReplicaState
from replicas.lifecycle import place_replica
from replicas.models import CopyRequest, DataProduct, Replica, ReplicaPolicy
from replicas.rucio_sync import RUCIO_RULE_REASON
from replicas.services import active_policy
from topology.choices import landing_role
from topology.models import RegionalCentre, StorageEndpoint
from topology.services.storage_urls import paced
from topology.tpc_streams import streams_on_the_wire
from transfers.scitags import flow_id
from transfertools.interface import JobParams, LinkConfig, TransferRequest, Transfertool, TransfertoolError

from .enforcement import enforce_links, hop_links
from .lane_health import pinned_copy
from .models import PlannedRule
from .planning.dispatch import JobHints, job_hints
from .planning.types import Leg
from .rucio_placement import place_by_rule, through_rucio

ACTIVITY = "SKA Data Products"  # FTS3's activity of every push job (activity shares), and Rucio's
# The most TCP streams per copy a link's nostreams holds (FTS3's /config/links; the platform's endpoint too).
MAX_LINK_STREAMS = 64


def site_endpoint(site: str) -> StorageEndpoint:
    """Where copies land at ``site``: a distribution centre's buffer, else the SRC's disk (one query: it is
    asked once or twice for every product a push cycle hands on)."""
    centre = Exists(RegionalCentre.objects.filter(name=site, is_distribution_centre=True))
    endpoint = (
        StorageEndpoint.objects.filter(site__name=site, is_active=True)
        .filter((Q(role=landing_role(True)) & centre) | (Q(role=landing_role(False)) & ~centre))
        .first()
    )
    if endpoint is None:
        role = landing_role(RegionalCentre.objects.filter(name=site, is_distribution_centre=True).exists())
        raise TransfertoolError(f"{site} has no active {role} storage endpoint")
    return endpoint


def _why(leg: Leg, hints: JobHints, final: str, via: str | None) -> str:
    return (
        f"push plan: {leg.source} -> {final}{' via ' + via if via else ''}, slot {leg.start_slot}, "
        f"{hints.streams} streams x {hints.concurrent_files} files, priority {leg.priority}"
    )


def copy_placement(policy: ReplicaPolicy, source: str, destination: str) -> str:
    """Why a second or full copy was placed (the start of its replica's reason)."""
    if policy.kind == StoredKind.FULL_COPY:
        what = f"full copy at {destination}"
    else:
        what = "second copy (redistribution to the partner SRC)"
    return (
        f"{policy.name} ({policy.kind}): {what}, {source} -> {destination} "
        f"once the copy at {source} is available"
    )


@transaction.atomic
def submit_first(
    leg: Leg,
    forward: Leg | None,
    second: Leg | None,
    policy: ReplicaPolicy,
    tool: Transfertool,
    *,
    note: str = "",
) -> dict[str, Any] | None:
    """Place the product's replicas (its first copy at the leg's final destination, and the second or full
    copy its policy asks for) and submit the first copy (multihop for a relay). A product whose first copy
    is pinned keeps that replica and gets no other. None if the product left the queue meanwhile."""
    scope, _, name = leg.product_id.partition(":")
    # The product's row only: joined rows would be locked too (FOR UPDATE without OF), and its SDP endpoint's
    # lock held for the cycle's transaction made every product registered there and every replica placed
    # on it wait for the cycle (PostgreSQL's key check, FOR KEY SHARE, 2.6 ms on average in
    # bench/control_plane's 75 000-file run of 2026-11-30).
    product = (
        DataProduct.objects.select_for_update(of=("self",))
        .select_related("source", "telescope")
        .get(scope=scope, name=name)
    )
    if product.state != ProductState.REGISTERED:
        return None
    final = forward.destination if forward else leg.destination
    via = leg.destination if forward else None
    if via and through_rucio():
        # Rucio's conveyor chooses each copy's path: a rule at the final destination would drop the relay.
        # Plans in Rucio mode make no relay legs (PlanConfig.relays); one that does is refused, not dropped.
        raise TransfertoolError(
            f"relay: Rucio mode cannot carry the plan's relay of {product.did} via {via} (Rucio chooses its"
            " own hops); plan with relays off (PlanConfig.relays, as the push loop does in Rucio mode)"
        )
    hints = job_hints(leg)
    plan_why = note or _why(leg, hints, final, via)
    pin = pinned_copy(product, final)  # None also when its lane broke and the policy placed it elsewhere
    if pin is not None:
        replica, destination = pin, pin.endpoint
        why = f"{pin.reason}; {plan_why}"
        lifecycle.move(replica, ReplicaState.COPYING, save=False)  # saved below, with its reason and hops
        replica.via = RegionalCentre.objects.get(name=via) if via else None
    else:
        if policy.pk is None:  # the telescope's default policy, first used now
            policy = active_policy(product.telescope)
        destination = site_endpoint(final)
        role = "relayed first copy" if via else "first copy"
        why = f"{policy.name} ({policy.kind}): {role}; {plan_why}"
        replica = place_replica(
            product=product,
            endpoint=destination,
            policy=policy,
            state=ReplicaState.COPYING,
            reason=why,
            via=RegionalCentre.objects.get(name=via) if via else None,
        )
        if second is not None:
            place_replica(
                product=product,
                endpoint=site_endpoint(second.destination),
                policy=policy,
                state=ReplicaState.PLANNED,
                upstream=replica,
                reason=copy_placement(policy, second.source, second.destination),
            )
    lifecycle.move_product(product, ProductState.PLACING)
    hops = [(product.source, site_endpoint(via))] if via else [(product.source, destination)]
    if via:
        hops.append((hops[0][1], destination))
    arrival = None if note else (forward or leg).finish_s
    job_id, handle = _submit_job(
        product, hops, hints, replica, [leg.source, final], tool, finish_s=arrival, placement=why
    )
    replica.reason = f"{why}; {handle}"
    replica.save(update_fields=["state", "via", "reason", "rucio_rule", "placement", "updated"])
    return {
        "product": product.did,
        "role": leg.role.value if not note else "pinned copy",
        "lane": [leg.source, final],
        "via": via,
        "job_id": job_id,
        "priority": hints.priority,
        "streams": hints.streams,
        "files": hints.concurrent_files,
        "lane_files": hints.lane_files,
        "slot": leg.start_slot,
    }


@transaction.atomic
def submit_copy(replica_id: int, leg: Leg, tool: Transfertool, *, note: str = "") -> dict[str, Any]:
    """Submit a second or full copy from the SRC that holds the product to the replica's SRC."""
    replica = (
        Replica.objects.select_for_update(of=("self",))
        .select_related("product", "endpoint", "upstream__endpoint")
        .get(pk=replica_id)
    )
    upstream = replica.upstream
    assert upstream is not None
    hints = job_hints(leg)
    why = f"{replica.reason}; {note or _why(leg, hints, leg.destination, None)}"
    lifecycle.move(replica, ReplicaState.COPYING, save=False)  # saved with its job's handle below
    job_id, handle = _submit_job(
        replica.product,
        [(upstream.endpoint, replica.endpoint)],
        hints,
        replica,
        [leg.source, leg.destination],
        tool,
        finish_s=None if note else leg.finish_s,
        placement=why,
    )
    replica.reason = f"{why}; {handle}"
    replica.save(update_fields=["state", "reason", "rucio_rule", "placement", "updated"])
    return {
        "product": replica.product.did,
        "role": leg.role.value if not note else "unplanned copy",
        "lane": [leg.source, leg.destination],
        "via": None,
        "job_id": job_id,
        "priority": hints.priority,
        "streams": hints.streams,
        "files": hints.concurrent_files,
        "lane_files": hints.lane_files,
        "slot": leg.start_slot,
    }


def wire_streams(scheme: str, hints: JobHints, file_sizes: list[int]) -> int:
    """The lane's streams that run on the wire for this job: each of its copies at once runs what its file
    takes of the streams asked (an HTTP-TPC copy: no more than its 16 MiB blocks), the mean over the
    product's files. The job's metadata carries it, so the lane's measurement divides what the job
    delivered by the streams that carried it, not by streams a small file never opened."""
    if not file_sizes:
        return hints.streams
    runs = [streams_on_the_wire(scheme, hints.streams_per_file, size) for size in file_sizes]
    return max(1, round(sum(runs) / len(runs) * hints.concurrent_files))


def rucio_link_streams(hints: JobHints) -> int:
    """The TCP streams per copy a leg in Rucio mode sets on its lane's link (FTS3's link ``nostreams``); a
    value the link cannot hold is a TransfertoolError naming it, never a copy left at the default."""
    streams = hints.streams_per_file
    if isinstance(streams, bool) or not isinstance(streams, int) or not 1 <= streams <= MAX_LINK_STREAMS:
        raise TransfertoolError(
            f"streams: the plan's {streams!r} streams per copy cannot be a link's nostreams"
            f" (1 to {MAX_LINK_STREAMS}), the only way they reach Rucio's copies"
        )
    return streams


def pace_factor() -> float:
    """The multiple of its share of the lane's planned rate each copy asks its source for; 0: none
    (SRCNET_PACE_COPIES)."""
    return float(getattr(settings, "SRCNET_PACE_COPIES", 0.0))


def _in_plan_time(seconds: float) -> float:
    """Unix time of a moment ``seconds`` from now, as a plan's times count."""
    return timezone.now().timestamp() + seconds


def _submit_job(
    product: DataProduct,
    hops: list[tuple[StorageEndpoint, StorageEndpoint]],
    hints: JobHints,
    replica: Replica,
    lane: list[str],
    tool: Transfertool,
    *,
    finish_s: float | None = None,
    placement: str = "",
) -> tuple[str, str]:
    """One transfer job over ``hops`` (more than one: a multihop job), every file of the product per hop, or
    in Rucio mode one rule at the last hop's destination; returns its id and how the replica's reason
    names it."""
    scheme = hops[-1][1].tpc_scheme
    multihop = len(hops) > 1
    files = list(product.files.all())
    pace = pace_factor() * hints.copy_rate_bps / 8 if hints.copy_rate_bps > 0 else 0.0
    requests = []
    for source_endpoint, target in hops:
        for f in files:
            source = source_endpoint.url(scheme, f.relative_path)
            requests.append(
                TransferRequest(
                    source=paced(source, pace) if pace else source,
                    destination=target.url(scheme, f.relative_path),
                    filesize=f.size_bytes,
                    checksum=f"ADLER32:{f.adler32}",
                    metadata={"product": product.did, "file": f.name},
                )
            )
    # The lane's copies in flight become each hop's link concurrency (a reserved path: fixed, no optimizer),
    # through the transfertool's /config/links, so any FTS3 obeys it (Rucio's conveyor's jobs too).
    if through_rucio():
        # Rucio's conveyor submits jobs without nostreams: the plan's streams per copy become the link's,
        # which the FTS3 endpoint gives every copy on the link that asks none of its own. The link holds
        # one value: the leg handed on last sets it for the lane's copies that start from then on.
        streams = rucio_link_streams(hints)
        enforce_links(tool, hop_links(tool, hops, scheme, hints.lane_files, nostreams=streams))
        rule_id = place_by_rule(product, hops[-1][1], replica, activity=ACTIVITY)
        # The replica follows the rule's locks from now on (replicas/rucio_record.py), its placement in front.
        replica.rucio_rule, replica.placement = rule_id, placement
        # Rucio's conveyor submits the FTS3 jobs without the plan's figures: keep them for the metrics.
        PlannedRule.objects.create(
            rule_id=rule_id,
            product=product,
            rse=hops[-1][1].name,
            source_site=lane[0],
            destination_site=lane[1],
            planned_bps=hints.max_rate_bps,
            streams=hints.streams,
            predicted_arrival=_in_plan_time(finish_s) if finish_s is not None else None,
        )
        # Pacing asks the source through the copy's source URL, which Rucio's conveyor builds itself.
        unpaced = " (not paced: Rucio builds the source URL)" if pace else ""
        return rule_id, f"{RUCIO_RULE_REASON} {rule_id}{unpaced}"
    enforce_links(tool, hop_links(tool, hops, scheme, hints.lane_files))
    job_id = tool.submit(
        requests,
        JobParams(
            priority=hints.priority,
            activity=ACTIVITY,
            streams=hints.streams_per_file,
            multihop=multihop,
            # Each copy's SciTags flow identifier: the activity's, a relay leg's for a multihop job.
            scitag=flow_id(ACTIVITY, relay=multihop),
            # A copy that heals a replica found lost or corrupt replaces whatever its storage still holds.
            overwrite=replica.repairs > 0,
            metadata={
                "product": product.did,
                "lane": lane,
                "streams": wire_streams(scheme, hints, [f.size_bytes for f in files]),
                "streams_per_file": hints.streams_per_file,
                "files": hints.concurrent_files,
                "lane_files": hints.lane_files,
                "multihop": multihop,
                # the plan's rate for this leg, and when it expects the copy to arrive (Unix time; plan
                # times count from now): the planned bit/s and arrival delay metrics (monitoring/selectors.py)
                "planned_bps": hints.max_rate_bps,
                **({"predicted_arrival": _in_plan_time(finish_s)} if finish_s is not None else {}),
            },
        ),
    )
    # The link from the replica to the job that carries it and back (its end settles the replica).
    CopyRequest.objects.create(
        product=product,
        replica=replica,
        endpoint=tool.settles_from,
        job_id=job_id,
        source_site=lane[0],
        destination_site=lane[1],
        via_site=replica.via.name if replica.via is not None else "",
        planned_bps=hints.max_rate_bps,
        streams=hints.streams,
        streams_per_file=hints.streams_per_file,
        predicted_arrival=(
            dt.datetime.fromtimestamp(_in_plan_time(finish_s), tz=dt.UTC) if finish_s is not None else None
        ),
    )
    return job_id, f"transfer job {job_id}"


def follow_lane_limits(lanes: Mapping[tuple[str, str], int], tool: Transfertool) -> list[LinkConfig]:
    """Set the link limit of each of ``lanes`` (telescope, SRC) that has first copies in flight to the
    copies the current plan gives it, where the transfer service holds another: a lane's share of the
    access link grows when another lane's work ends, with nothing new to submit on it, and its copies in
    flight must grow with it. Returns the links changed."""
    wanted: list[LinkConfig] = []
    # One first copy in flight per lane, all lanes in one query (one a lane cost 14 ms each, 14 lanes a
    # cycle: bench/control_plane, 2026-11-29): the lane's oldest, as a query per lane took.
    lane = ("product__telescope__name", "endpoint__site__name")
    in_flight = {
        (r.product.telescope.name, r.endpoint.site.name): r
        for r in Replica.objects.filter(state=ReplicaState.COPYING, upstream__isnull=True, via__isnull=True)
        .select_related("product__source", "product__telescope", "endpoint__site")
        .order_by(*lane, "pk")
        .distinct(*lane)
    }
    for (telescope, site), copies in sorted(lanes.items()):
        replica = in_flight.get((telescope, site))
        if replica is not None and replica.product.source is not None:
            hop = (replica.product.source, replica.endpoint)
            wanted += hop_links(tool, [hop], replica.endpoint.tpc_scheme, copies)
    if not wanted:
        return []
    held = {c.pair: c for c in tool.link_configs()}
    changed = [
        # A link's streams (set in Rucio mode) are kept: an FTS3 may reset what a POST leaves out.
        replace(link, nostreams=held[link.pair].nostreams) if link.pair in held else link
        for link in wanted
        if link.pair not in held
        or (held[link.pair].min_active, held[link.pair].max_active) != (link.min_active, link.max_active)
    ]
    if changed:
        enforce_links(tool, changed)
    return changed

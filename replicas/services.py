"""Writes of the replicas app: register products, place them by policy, follow their transfers."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Sequence
from dataclasses import dataclass

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Sum
from django.utils import timezone

from projects.models import Project
from topology.choices import StorageRole
from topology.models import StorageEndpoint, Telescope

from . import lifecycle
from .choices import PolicyKind, ProductState, ReplicaState
from .lifecycle import REROUTED
from .models import CopyRequest, DataProduct, ProductFile, Replica, ReplicaPolicy
from .policies import PolicyError, choose_by_weighted_share


@dataclass(frozen=True)
class FileSpec:
    name: str
    size_bytes: int
    adler32: str


@transaction.atomic
def register_product(
    *,
    scope: str,
    name: str,
    telescope: Telescope,
    files: Sequence[FileSpec],
    priority: int = 3,
    source: StorageEndpoint | None = None,
    project: Project | None = None,
    observation_id: str = "",
    product_type: str = "",
) -> DataProduct:
    """Record a product the SDP has written, with its files; its SDP replica is available at once. A
    product of a ``project`` is proprietary to its members for the project's ``proprietary_days``."""
    if not files:
        raise ValidationError({"files": "A product has at least one file."})
    if source is None:
        source = StorageEndpoint.objects.filter(site=telescope, role=StorageRole.SDP, is_active=True).first()
        if source is None:
            raise ValidationError({"telescope": f"{telescope.name} has no active SDP storage endpoint."})
    product = DataProduct(
        scope=scope,
        name=name,
        telescope=telescope,
        source=source,
        priority=priority,
        observation_id=observation_id,
        product_type=product_type,
    )
    if project is not None:
        product.project = project
        product.proprietary_until = timezone.now() + dt.timedelta(days=project.proprietary_days)
    product.full_clean()
    product.save()
    names = set()
    rows = []
    for index, spec in enumerate(files):
        if spec.name in names:
            raise ValidationError({f"files[{index}].name": f"{spec.name!r} appears twice."})
        names.add(spec.name)
        row = ProductFile(product=product, name=spec.name, size_bytes=spec.size_bytes, adler32=spec.adler32)
        try:
            row.full_clean(exclude=["product"])
        except ValidationError as exc:
            raise ValidationError({f"files[{index}].{k}": v for k, v in exc.message_dict.items()}) from exc
        rows.append(row)
    # One statement for the product's files (a product of SKA's may hold thousands): all checked above.
    ProductFile.objects.bulk_create(rows)
    lifecycle.new_replica(
        product=product, endpoint=source, state=ReplicaState.AVAILABLE, reason="written by the SDP"
    )
    return product


def active_policy(telescope: Telescope, *, create: bool = True) -> ReplicaPolicy:
    """The telescope's active policy, creating the default (1 replica by the SRCs' share weights) if none;
    with ``create=False`` the default is returned unsaved (for reads that must not write)."""
    policy = (
        ReplicaPolicy.objects.filter(telescope=telescope, is_active=True)
        .select_related("telescope", "copy_site", "relay_centre")
        .first()
    )
    if policy is None:
        defaults = {
            "kind": PolicyKind.WEIGHTED_SHARE,
            "is_active": True,
            "description": "Default: one replica per product, SRCs weighted by their share.",
        }
        name = f"{telescope.name}-1-replica-by-share"
        if not create:
            return ReplicaPolicy(name=name, telescope=telescope, **defaults)
        policy, _ = ReplicaPolicy.objects.get_or_create(name=name, telescope=telescope, defaults=defaults)
    return policy


def placed_bytes(policy: ReplicaPolicy) -> dict[str, int]:
    """Bytes already placed by ``policy`` at each destination (failed replicas do not count)."""
    rows = (
        Replica.objects.filter(policy=policy)
        .exclude(state=ReplicaState.FAILED)
        .values("endpoint__name")
        .annotate(total=Sum("product__files__size_bytes"))
    )
    return {row["endpoint__name"]: int(row["total"] or 0) for row in rows}


@transaction.atomic
def place_product(*, product: DataProduct) -> list[Replica]:
    """Decide where ``product`` goes under its telescope's active policy; returns the new PLANNED replicas.

    A product already placed keeps its replicas (placing twice changes nothing)."""
    product = DataProduct.objects.select_for_update().get(pk=product.pk)
    existing = list(product.replicas.exclude(endpoint=product.source))
    if existing:
        return existing
    policy = ReplicaPolicy.objects.select_for_update().get(pk=active_policy(product.telescope).pk)
    try:
        destination_name = choose_by_weighted_share(
            policy.weights(), placed_bytes(policy), product.size_bytes
        )
    except PolicyError as exc:
        raise ValidationError({"policy": f"{policy.name}: {exc}"}) from exc
    destination = StorageEndpoint.objects.get(name=destination_name)
    replica = lifecycle.new_replica(
        product=product,
        endpoint=destination,
        policy=policy,
        state=ReplicaState.PLANNED,
        reason=f"{policy.name}: furthest below its weighted share",
    )
    lifecycle.move_product(product, ProductState.PLACING)
    return [replica]


def record_job_end(*, endpoint: str, job_id: str, state: str, reasons: Sequence[str] = ()) -> list[Replica]:
    """A transfer job ended at ``endpoint`` (empty: the platform's own service): the replicas whose copy
    requests name it are settled (``settle_request``). A job no request names (a client's own, whatever its
    metadata says) settles nothing, nor does one whose replica an operator re-routed (its request keeps
    the outcome)."""
    pks = CopyRequest.objects.filter(endpoint=endpoint, job_id=job_id, settled__isnull=True).values_list(
        "pk", flat=True
    )
    return [replica for pk in list(pks) if (replica := settle_request(pk, state=state, reasons=reasons))]


def record_embedded_job_end(job) -> list[Replica]:  # type: ignore[no-untyped-def]
    """A transfer job of the embedded service ended (the ``job_finished`` signal)."""
    reasons = sorted({r for r in job.files.exclude(reason="").values_list("reason", flat=True)})
    return record_job_end(endpoint="", job_id=str(job.job_id), state=str(job.state), reasons=reasons)


@transaction.atomic
def settle_request(request_pk: int, *, state: str, reasons: Sequence[str] = ()) -> Replica | None:
    """A copy request's transfer job ended in ``state`` (FTS3's job states): the request keeps the outcome,
    its replica is available only if every file arrived verified (FINISHED), failed otherwise with the
    files' reasons; the product follows (a first copy that failed for no source problem sends its product
    back to the queue: ``_requeues``).

    The one place replicas are settled from transfers: the embedded service's ``job_finished`` signal and
    the poll of an external FTS3 (``schedulers.poll_external_jobs``) both come here. Settling a request
    again changes nothing (None), nor does settling one whose replica was re-routed away."""
    from transfers.choices import JobState

    request = CopyRequest.objects.select_for_update().get(pk=request_pk)
    if request.settled is not None:
        return None
    reasons = sorted(set(reasons))
    request.state = state if state in JobState.values else JobState.FAILED
    request.reasons = reasons
    request.source_problem = state != JobState.FINISHED and is_source_problem(reasons)
    request.settled = timezone.now()
    request.save(update_fields=["state", "reasons", "source_problem", "settled"])
    if request.replica_id is None:
        return None  # re-routed by an operator: the request keeps the outcome as the product's history
    # Locked with its product (a lock cannot reach through the nullable link above), neither of their keys
    # changing (NO KEY UPDATE); not the endpoint, which is only read: a push cycle inserting a replica there
    # holds its row (KEY SHARE) until the cycle commits, and every copy's end waited for that (112 ms each in
    # bench/control_plane's run of 2026-11-30).
    replica = (
        Replica.objects.select_for_update(no_key=True, of=("self", "product"))
        .select_related("product", "endpoint")
        .get(pk=request.replica_id)
    )
    # The submission ended the replica's reason with the job that carries it ("...; transfer job J"): say how
    # it ended after that.
    if state == JobState.FINISHED:
        new_state, reason = ReplicaState.AVAILABLE, f"{replica.reason} finished"
    else:
        new_state, reason = ReplicaState.FAILED, f"{replica.reason} {state}: {'; '.join(reasons)}"
    lifecycle.settle(replica, new_state, reason)
    requeue = new_state == ReplicaState.FAILED and _requeues(replica, reasons)
    if requeue:
        # A first copy that failed on its way (the path, the destination), not for its source: the product
        # goes back to the SDP queue and the next push cycle places it on a lane that is available
        # (schedulers/lane_health.py); this replica stays FAILED as the history of what was tried.
        replica.product.reroutes += 1
        count = f"{replica.product.reroutes} of {max_reroutes()}"
        lifecycle.keep_as_reroute_history(replica, f"{reason}; {REROUTED} back to the SDP queue ({count})")
    if new_state == ReplicaState.FAILED:
        # A copy that was to be made from this one never will be.
        lifecycle.fail_waiting(
            replica.downstream.select_for_update().filter(state=ReplicaState.PLANNED),
            f"not copied: the copy at {replica.endpoint.name} it waits for failed"
            + (f" ({REROUTED} with the product)" if requeue else ""),
            rerouted=requeue,
        )
    product = replica.product
    if requeue:
        lifecycle.move_product(product, ProductState.REGISTERED, also=["reroutes"])
        return replica
    lifecycle.follow_replicas(product, current_replicas(product), pending=False)
    return replica


# A failure that another lane cannot mend: the source (missing, not matching) or a refused URL, as the
# executor and FTS3 name them, after the transfer service's "after N attempts: " if it retried. Such a
# product fails as before; any other failure of a first copy sends it back to the queue.
SOURCE_PROBLEM = re.compile(r"^(after \d+ attempts: )?(SOURCE|REFUSED)\b")


def max_reroutes() -> int:
    """How many times a product goes back to the queue before it fails with every reason."""
    from django.conf import settings

    return int(getattr(settings, "SRCNET_LANE_HEALTH", {}).get("MAX_REROUTES", 3))


def is_source_problem(reasons: Sequence[str]) -> bool:
    return any(SOURCE_PROBLEM.match(r.strip()) for r in reasons)


def current_replicas(product: DataProduct):  # type: ignore[no-untyped-def]
    """The product's replicas without those kept as the history of a re-route."""
    return product.replicas.exclude(rerouted=True)


def _requeues(replica: Replica, reasons: Sequence[str]) -> bool:
    """Whether a failed replica's product goes back to the SDP queue: a first copy of a push (not a Rucio
    rule's), failed for no source problem, of a product re-routed fewer than ``max_reroutes`` times."""
    return (
        replica.upstream_id is None
        and replica.endpoint.role != StorageRole.SDP
        and replica.product.state == ProductState.PLACING
        and not is_source_problem(reasons)
        and replica.product.reroutes < max_reroutes()
    )

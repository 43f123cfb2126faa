"""Operator actions. Each runs in one transaction with its audit event: both happen, or neither does.

Every function raises ``ValidationError`` (naming the field where there is one) for an action that makes no
sense in the current state, before anything is written."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction

from replicas import lifecycle
from replicas.choices import ProductState, ReplicaState
from replicas.lifecycle import place_replica
from replicas.models import DataProduct, PolicyShare, ReplicaPolicy
from replicas.selectors import pushed_job_ids
from topology.choices import StorageRole
from topology.models import NetworkPath, StorageEndpoint
from transfers import services as transfer_services
from transfers.choices import TERMINAL_JOB_STATES
from transfers.models import TransferJob

from .choices import AuditAction, TargetType
from .models import AuditEvent
from .selectors import path_storage_links


def record_event(
    *, user: Any, action: str, target_type: str, target_id: Any, target: str, details: dict[str, Any]
) -> AuditEvent:
    """Append one event to the audit trail (callers hold the action's transaction)."""
    return AuditEvent.objects.create(
        user=user if getattr(user, "pk", None) else None,
        username=getattr(user, "username", "") or "",
        action=action,
        target_type=target_type,
        target_id=str(target_id),
        target=str(target)[:255],
        details=details,
    )


def _validate_priority(priority: Any) -> int:
    if isinstance(priority, bool) or not isinstance(priority, int) or not 1 <= priority <= 5:
        raise ValidationError({"priority": "Priority is an integer from 1 (lowest) to 5 (highest)."})
    return priority


@transaction.atomic
def pause_path(*, path: NetworkPath, user: Any, reason: str = "") -> AuditEvent:
    """Stop new copies between the storage at the path's two ends (root:// and davs://); running copies
    finish. The transfer service pauses storage-element links, so a path is the set of those links."""
    links = path_storage_links(path)
    if not links:
        raise ValidationError(
            {"path": f"{path.name}: no storage endpoints at both ends, so no transfers to pause."}
        )
    for source_se, dest_se in links:
        transfer_services.pause_link(source_se=source_se, dest_se=dest_se, reason=reason, user=user)
    return record_event(
        user=user,
        action=AuditAction.PAUSE_PATH,
        target_type=TargetType.PATH,
        target_id=path.pk,
        target=path.name,
        details={"reason": reason, "links": [f"{s} -> {d}" for s, d in links]},
    )


@transaction.atomic
def resume_path(*, path: NetworkPath, user: Any, reason: str = "") -> AuditEvent:
    """Let copies start again on every storage link of the path."""
    links = path_storage_links(path)
    resumed = [f"{s} -> {d}" for s, d in links if transfer_services.resume_link(source_se=s, dest_se=d)]
    if not resumed:
        raise ValidationError({"path": f"{path.name} is not paused."})
    return record_event(
        user=user,
        action=AuditAction.RESUME_PATH,
        target_type=TargetType.PATH,
        target_id=path.pk,
        target=path.name,
        details={"reason": reason, "links": resumed},
    )


def _live_job(job: TransferJob) -> TransferJob:
    job = TransferJob.objects.select_for_update().get(pk=job.pk)
    if job.state in TERMINAL_JOB_STATES:
        raise ValidationError({"job": f"Job {job.job_id} has ended ({job.state})."})
    return job


@transaction.atomic
def set_job_priority(*, job: TransferJob, priority: int, user: Any) -> AuditEvent:
    """Change the priority of a job that has not ended (its waiting files are admitted by it)."""
    priority = _validate_priority(priority)
    job = _live_job(job)
    before = job.priority
    transfer_services.update_priority(job, priority)
    return record_event(
        user=user,
        action=AuditAction.JOB_PRIORITY,
        target_type=TargetType.JOB,
        target_id=job.job_id,
        target=f"job {job.job_id}",
        details={"from": before, "to": priority, "product": (job.metadata or {}).get("product", "")},
    )


@transaction.atomic
def cancel_job(*, job: TransferJob, user: Any, reason: str = "") -> AuditEvent:
    """Cancel a job's unfinished files (running copies are stopped after commit)."""
    job = _live_job(job)
    why = f"Canceled by {user.username}" + (f": {reason}" if reason else "")
    job = transfer_services.cancel_job(job, reason=why)
    return record_event(
        user=user,
        action=AuditAction.CANCEL_JOB,
        target_type=TargetType.JOB,
        target_id=job.job_id,
        target=f"job {job.job_id}",
        details={"reason": reason, "state": job.state, "product": (job.metadata or {}).get("product", "")},
    )


def _product_jobs(product: DataProduct) -> list[TransferJob]:
    """The product's jobs not yet over, as its copy requests name them (never a job that only says so in
    the metadata its submitter wrote)."""
    return list(
        TransferJob.objects.select_for_update()
        .filter(job_id__in=pushed_job_ids(product))
        .exclude(state__in=TERMINAL_JOB_STATES)
    )


@transaction.atomic
def set_product_priority(*, product: DataProduct, priority: int, user: Any) -> AuditEvent:
    """Change a product's priority and that of its jobs still waiting or running, so the queue follows."""
    priority = _validate_priority(priority)
    product = DataProduct.objects.select_for_update().get(pk=product.pk)
    before = product.priority
    product.priority = priority
    product.full_clean()
    product.save(update_fields=["priority"])
    jobs = _product_jobs(product)
    for job in jobs:
        transfer_services.update_priority(job, priority)
    return record_event(
        user=user,
        action=AuditAction.PRODUCT_PRIORITY,
        target_type=TargetType.PRODUCT,
        target_id=product.pk,
        target=product.did,
        details={"from": before, "to": priority, "jobs": [str(j.job_id) for j in jobs]},
    )


def reroute_destinations(product: DataProduct) -> Any:
    """Storage a product may be re-routed to: active SRC disks and distribution-centre buffers without a
    live replica of it."""
    taken = product.replicas.exclude(state=ReplicaState.FAILED).values("endpoint")
    return (
        StorageEndpoint.objects.filter(is_active=True, role__in=(StorageRole.DISK, StorageRole.BUFFER))
        .exclude(pk__in=taken)
        .select_related("site")
    )


@transaction.atomic
def reroute_product(
    *, product: DataProduct, destination: StorageEndpoint, user: Any, reason: str = ""
) -> AuditEvent:
    """Send a product being copied to another SRC: cancel the copying replica's job, drop that replica, pin
    its first copy at ``destination`` and push it through the push loop.

    The old replica is removed, not failed, so the product's state follows the new copy alone; its
    endpoint, policy and reason are kept in the audit event. Its copy requests stay in the product's
    history without it, so its canceled job's end settles nothing and does not mark the product failed.
    (Only jobs of the platform's own service are canceled: a copy at an external FTS3 runs on, and its end
    reaches no replica.)"""
    from schedulers.services import push_product

    product = DataProduct.objects.select_for_update().get(pk=product.pk)
    moving = list(
        product.replicas.select_for_update(of=("self",))
        .filter(state__in=(ReplicaState.PLANNED, ReplicaState.COPYING))
        .exclude(endpoint=product.source)
        .select_related("endpoint", "policy")
    )
    if not moving:
        raise ValidationError({"product": f"{product.did} has no replica being copied to re-route."})
    if not reroute_destinations(product).filter(pk=destination.pk).exists():
        message = f"{destination.name} is not active SRC storage without a replica of {product.did}."
        raise ValidationError({"destination": message})
    old: list[dict[str, Any]] = []
    for replica in moving:
        # Its copy requests lose their replica (deleted below), so the canceled jobs' ends settle nothing.
        open_jobs = list(
            replica.copy_requests.filter(endpoint="", settled__isnull=True).values_list("job_id", flat=True)
        )
        jobs = list(
            TransferJob.objects.select_for_update()
            .filter(job_id__in=open_jobs)
            .exclude(state__in=TERMINAL_JOB_STATES)
        )
        for job in jobs:
            transfer_services.cancel_job(job, reason=f"Re-routed to {destination.name} by {user.username}")
        old.append(
            {
                "endpoint": replica.endpoint.name,
                "state": replica.state,
                "policy": replica.policy.name if replica.policy else None,
                "reason": replica.reason,
                "canceled_jobs": [str(j.job_id) for j in jobs],
            }
        )
        replica.delete()
    new = place_replica(
        product=product,
        endpoint=destination,
        after_any_failure=True,
        state=ReplicaState.PLANNED,
        policy=None,
        reason=f"re-routed by {user.username} from {', '.join(str(o['endpoint']) for o in old)}"
        + (f": {reason}" if reason else ""),
    )
    # Back in the SDP queue with its first copy pinned: the push loop plans it onto the chosen lane.
    lifecycle.move_product(product, ProductState.REGISTERED)
    push_product(product=product)
    new.refresh_from_db()
    return record_event(
        user=user,
        action=AuditAction.REROUTE_PRODUCT,
        target_type=TargetType.PRODUCT,
        target_id=product.pk,
        target=product.did,
        details={"to": destination.name, "reason": reason, "replaced": old, "new_replica": new.reason},
    )


@transaction.atomic
def save_policy(
    *, policy: ReplicaPolicy, shares: list[tuple[StorageEndpoint, float]], user: Any
) -> AuditEvent:
    """Create or update a replica policy with its explicit shares (replacing the old ones), fully cleaned."""
    created = policy.pk is None
    policy.full_clean()
    policy.save()
    seen: set[int] = set()
    for index, (destination, _weight) in enumerate(shares):
        if destination.pk in seen:
            raise ValidationError({f"shares[{index}].destination": f"{destination.name} appears twice."})
        seen.add(destination.pk)
    policy.shares.all().delete()
    for index, (destination, weight) in enumerate(shares):
        share = PolicyShare(policy=policy, destination=destination, weight=weight)
        try:
            share.full_clean()
        except ValidationError as exc:
            raise ValidationError({f"shares[{index}].{k}": v for k, v in exc.message_dict.items()}) from exc
        share.save()
    return record_event(
        user=user,
        action=AuditAction.EDIT_POLICY,
        target_type=TargetType.POLICY,
        target_id=policy.pk,
        target=policy.name,
        details={
            "created": created,
            "telescope": policy.telescope.name,
            "kind": policy.kind,
            "is_active": policy.is_active,
            "shares": {d.name: w for d, w in shares},
            "partners": policy.partners,
            "copy_site": policy.copy_site.name if policy.copy_site else None,
            "relay_centre": policy.relay_centre.name if policy.relay_centre else None,
            "relay_all": policy.relay_all,
            "degrade_order": policy.degrade_order,
            "degrade_at": policy.degrade_at,
            "recover_at": policy.recover_at,
        },
    )

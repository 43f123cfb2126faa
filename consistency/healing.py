"""What happens to a replica a consistency check found lost or corrupt (docs/reliability.md).

At once, in one transaction per replica: the replica is LOST or CORRUPT (never shown available again), and
- if another replica of its product is available (another SRC's, else the SDP's own), it is planned again
  with that one upstream (``replicas.lifecycle.heal``): the push loop's next plan carries the copy like any
  waiting copy, over the lane the plan gives it, and the copy overwrites what the storage holds;
- if none is, it is given up (FAILED) and its product FAILED: the product has no good replica left, which
  the metrics count and an alert names;
- at the SDP's own storage the platform never writes: the replica is marked, nothing is copied there;
- in Rucio mode (the replica follows a Rucio rule) Rucio repairs its own rules: the replica is marked and
  its files declared bad to Rucio (``RucioAdapter.declare_bad``, after the transaction); Rucio's
  necromancer and judge copy them again, and the platform's view follows the rule's locks as always.
Dark files are only reported: an operator removes or keeps them (``remove_dark_file``).
"""

from __future__ import annotations

import logging
from collections import defaultdict

from django.db import transaction
from django.utils import timezone

from replicas import lifecycle
from replicas.choices import ReplicaState
from replicas.models import Replica
from replicas.services import current_replicas
from topology.choices import StorageRole

from .choices import FindingAction, FindingKind
from .models import ConsistencyCheck, Finding

log = logging.getLogger(__name__)
# A replica of a Rucio rule, marked: its files go to Rucio after the marking's transaction.
RUCIO_PENDING = "rucio-pending"


def act_on_findings(check: ConsistencyCheck) -> dict[int, str]:
    """Each replica with lost or corrupt findings of ``check`` marked and healed; its action per replica."""
    by_replica: dict[int, list[Finding]] = defaultdict(list)
    damaged = check.findings.filter(
        kind__in=(FindingKind.LOST, FindingKind.CORRUPT), replica__isnull=False, action=FindingAction.NONE
    )
    for finding in damaged.order_by("replica_id", "path").iterator():
        assert finding.replica_id is not None
        by_replica[finding.replica_id].append(finding)
    actions = {}
    for replica_id, findings in by_replica.items():
        action = _act_on_replica(check, replica_id, findings)
        if action == RUCIO_PENDING:
            action = _declare_to_rucio(check, replica_id, findings)
        if action is not None:
            actions[replica_id] = action
    for replica_id, findings in _undeclared(check).items():
        if replica_id not in by_replica and _declare_to_rucio(check, replica_id, findings):
            actions[replica_id] = FindingAction.RUCIO
    return actions


def _undeclared(check: ConsistencyCheck) -> dict[int, list[Finding]]:
    """The replicas of Rucio rules at the check's endpoint that an earlier check marked but whose
    declaration Rucio did not take (down, refused), with that check's findings: declared again, since
    until Rucio has them nothing copies the files again (a check reads only AVAILABLE replicas)."""
    marked = Replica.objects.filter(endpoint_id=check.endpoint_id, state__in=lifecycle.DAMAGED).exclude(
        rucio_rule=""
    )
    out: dict[int, list[Finding]] = {}
    for replica in marked.only("pk", "updated"):
        findings = Finding.objects.filter(replica=replica, kind__in=(FindingKind.LOST, FindingKind.CORRUPT))
        if findings.filter(action=FindingAction.RUCIO, acted__gte=replica.updated).exists():
            continue
        last = findings.order_by("-check_run_id").values_list("check_run_id", flat=True).first()
        if last is not None:
            out[replica.pk] = list(findings.filter(check_run_id=last).order_by("path"))
    return out


@transaction.atomic
def _act_on_replica(check: ConsistencyCheck, replica_id: int, findings: list[Finding]) -> str | None:
    replica = (
        Replica.objects.select_for_update()
        .select_related("product", "endpoint")
        .filter(pk=replica_id)
        .first()
    )
    if replica is None or replica.state != ReplicaState.AVAILABLE:
        # Removed, or moved since the listing (an operator, a re-route): what the check saw is no longer so.
        return None
    corrupt = any(f.kind == FindingKind.CORRUPT for f in findings)
    state = ReplicaState.CORRUPT if corrupt else ReplicaState.LOST
    what = "; ".join(_describe(f) for f in findings[:5])
    more = f" and {len(findings) - 5} more" if len(findings) > 5 else ""
    found = f"{state} at {replica.endpoint.name} (consistency check {check.pk}: {what}{more})"
    before = replica.reason
    lifecycle.damage(replica, state, f"{before}; {found}")
    if replica.endpoint.role == StorageRole.SDP:
        action = FindingAction.NONE  # the SDP's own copy: reported, nothing copied there
    elif replica.rucio_rule:
        return RUCIO_PENDING  # Rucio's rule: declared to Rucio once this transaction has committed
    else:
        source = _source_for(replica)
        if source is not None:
            lifecycle.heal(
                replica, source, f"{before}; {found}; healing: copied again from {source.endpoint.name}"
            )
            action = FindingAction.HEALING
        else:
            lifecycle.give_up(replica, f"{before}; {found}; no available replica of the product is left")
            action = FindingAction.NO_SOURCE
            log.error("product %s has no good replica left: %s", replica.product.did, found)
        lifecycle.follow_replicas(replica.product, current_replicas(replica.product))
    if action != FindingAction.NONE:
        Finding.objects.filter(pk__in=[f.pk for f in findings]).update(action=action, acted=timezone.now())
    return action


def _declare_to_rucio(check: ConsistencyCheck, replica_id: int, findings: list[Finding]) -> str | None:
    """The replica's damaged files declared bad to Rucio; the findings say so once Rucio took them."""
    from replicas.rucio import RucioAdapter, RucioAdapterError
    from replicas.tasks import rucio_configured

    replica = Replica.objects.select_related("product", "endpoint").get(pk=replica_id)
    if not rucio_configured():
        log.error(
            "replica %s follows Rucio rule %s, but no Rucio server is configured", replica, replica.rucio_rule
        )
        return None
    names = [f.path.rsplit("/", 1)[1] for f in findings]
    reason = f"SRCNet consistency check {check.pk}: " + "; ".join(_describe(f) for f in findings[:5])
    try:
        refused = RucioAdapter.from_env().declare_bad(
            replica.product, replica.endpoint.name, names, reason[:250]
        )
    except RucioAdapterError as exc:
        log.error("declaring %s bad to Rucio failed: %s", replica, exc)
        return None
    if refused:
        log.error("Rucio refused to declare %s bad: %s", replica, refused)
        return None
    Finding.objects.filter(pk__in=[f.pk for f in findings]).update(
        action=FindingAction.RUCIO, acted=timezone.now()
    )
    return FindingAction.RUCIO


def _source_for(replica: Replica) -> Replica | None:
    """An available replica of the product to copy from: another SRC's first (it spares the telescope's
    link), else the SDP's."""
    others = replica.product.replicas.filter(state=ReplicaState.AVAILABLE).exclude(pk=replica.pk)
    return (
        others.exclude(endpoint__role=StorageRole.SDP).order_by("pk").first()
        or others.filter(endpoint__role=StorageRole.SDP).order_by("pk").first()
    )


def _describe(finding: Finding) -> str:
    if finding.kind == FindingKind.LOST:
        return f"{finding.path} absent"
    if finding.found_adler32:
        return f"{finding.path} adler32 {finding.found_adler32}, not {finding.expected_adler32}"
    return f"{finding.path} {finding.found_size} bytes, not {finding.expected_size}"

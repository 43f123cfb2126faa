"""A rule in embedded mode: replica rows the platform's push loop plans and carries out.

For each product the rule counts the copies it already has at the rule's destinations and asks for the
rest as PLANNED replicas, on the storage nearest to where the product is (shortest round trip), which the
push loop (``schedulers/loop.py``) takes as it takes the telescopes' own work:

* a product still waiting at its SDP gets its first copy pinned to the rule's nearest destination (as a
  campaign or a re-route pins one: ``schedulers.snapshot.pinned_destinations``), so the push plan carries
  it over the telescope's access link with the other pushes, in priority order; further copies wait for that
  one and are copied from it (``upstream``), as a policy's second copies are;
* a product already placed gets copies from its nearest available replica (the SDP's or an SRC's): the
  loop's waiting copies (``_waiting_copies``), planned on their lane or, with no lane in the telescope's
  policy, sent outside the plan with one stream;
* a product whose first copy is still on its way gets copies that wait for it."""

from __future__ import annotations

from django.core.exceptions import ValidationError

from replicas.choices import PolicyKind, ProductState, ReplicaState
from replicas.lifecycle import place_replica
from replicas.models import DataProduct, Replica
from replicas.services import active_policy, current_replicas
from topology.choices import StorageRole
from topology.models import NetworkPath, StorageEndpoint

from .models import Rule


def _rtt(source_site_id: int, destination_site_id: int) -> float | None:
    """The shortest round trip of a network path between two sites, None when there is none."""
    if source_site_id == destination_site_id:
        return 0.0
    rtts = NetworkPath.objects.filter(
        source_id=source_site_id, destination_id=destination_site_id
    ).values_list("rtt_ms", flat=True)
    return min(rtts, default=None)


def place_rule(rule: Rule, products: list[DataProduct], destinations: list[StorageEndpoint]) -> list[Replica]:
    """The replicas ``rule`` needs; raises ``ValidationError`` (naming ``rse_expression``) when a product
    cannot reach enough of the destinations. Call inside the rule's transaction."""
    touched: list[Replica] = []
    for product in products:
        touched += _place_one(rule, DataProduct.objects.select_for_update().get(pk=product.pk), destinations)
    rule.replicas.add(*touched)
    return touched


def _place_one(rule: Rule, product: DataProduct, destinations: list[StorageEndpoint]) -> list[Replica]:
    current = {r.endpoint_id: r for r in current_replicas(product).select_related("endpoint")}
    have = [
        current[d.pk] for d in destinations if d.pk in current and current[d.pk].state != ReplicaState.FAILED
    ]
    need = rule.copies - len(have)
    if need <= 0:
        return have[: rule.copies]
    pin = (
        current_replicas(product)
        .filter(state=ReplicaState.PLANNED, upstream__isnull=True, endpoint__role=StorageRole.DISK)
        .first()
    )
    waiting_at_sdp = product.state == ProductState.REGISTERED and pin is None
    source_site = product.source.site_id if waiting_at_sdp else None
    free = [d for d in destinations if d.pk not in current or current[d.pk].state == ReplicaState.FAILED]
    ranked = []
    for destination in free:
        upstream = None if waiting_at_sdp else _nearest_source(product, destination, pin)
        origin = source_site if waiting_at_sdp else (upstream.endpoint.site_id if upstream else None)
        rtt = None if origin is None else _rtt(origin, destination.site_id)
        if rtt is not None:
            ranked.append((rtt, destination.name, destination, upstream))
    if len(ranked) < need:
        raise ValidationError(
            {
                "rse_expression": f"{product.did}: only {len(ranked) + len(have)} of the "
                f"{rule.copies} copies asked for can be made on the matched storage (a copy needs a network "
                "path from where the product is)."
            }
        )
    ranked.sort(key=lambda row: (row[0], row[1]))
    why = f"rule {rule.pk} of {rule.owner.get_username()} ({rule.activity})"
    made: list[Replica] = []
    first = None
    for _, _, destination, upstream in ranked[:need]:
        if waiting_at_sdp and first is None:
            first = place_replica(
                product=product,
                endpoint=destination,
                after_any_failure=True,
                state=ReplicaState.PLANNED,
                policy=None,
                reason=f"{why}: first copy pinned here for the push plan",
            )
            made.append(first)
            continue
        made.append(
            place_replica(
                product=product,
                endpoint=destination,
                after_any_failure=True,
                state=ReplicaState.PLANNED,
                policy=None,
                upstream=first or upstream,
                reason=f"{why}: copied from {(first or upstream).endpoint.name} once it is available",  # type: ignore[union-attr]
            )
        )
    if first is not None:
        _policy_copy(product, first, {r.endpoint.site_id for r in [*current.values(), *made]})
    if rule.priority > product.priority:
        # The plan orders by the product's priority: a rule that asks for more raises it (an operator's).
        product.priority = rule.priority
        product.save(update_fields=["priority"])
    return have + made


def _policy_copy(product: DataProduct, pin: Replica, sites: set[int]) -> Replica | None:
    """The second or full copy the telescope's policy asks for, from the first copy a rule pinned: the push
    loop places it with the first copy it plans, but a pinned first copy is kept as it is and gets none
    (``schedulers.leg_submission.submit_first``). Not when the product already has or gets a copy there."""
    from schedulers.leg_submission import copy_placement, site_endpoint
    from schedulers.planning.types import PlanInputError
    from schedulers.snapshot import second_copy_site
    from transfertools.interface import TransfertoolError

    policy = active_policy(product.telescope)
    if policy.kind not in (PolicyKind.TWO_REPLICAS, PolicyKind.FULL_COPY):
        return None
    primary = pin.endpoint.site.name
    try:
        site = second_copy_site(policy, primary)
        endpoint = site_endpoint(site) if site is not None else None
    except (PlanInputError, TransfertoolError):
        return None  # the policy names no copy for this SRC: the first copy is all it gets
    if site is None or endpoint is None or endpoint.site_id in sites:
        return None
    return place_replica(
        product=product,
        endpoint=endpoint,
        after_any_failure=True,
        state=ReplicaState.PLANNED,
        policy=policy,
        upstream=pin,
        reason=copy_placement(policy, primary, site),
    )


def _nearest_source(
    product: DataProduct, destination: StorageEndpoint, pin: Replica | None
) -> Replica | None:
    """The replica a new copy at ``destination`` is made from: the available one with the shortest round trip
    to it (the SDP's too), else the first copy still on its way (the copy waits for it)."""
    replicas = list(
        current_replicas(product)
        .filter(state__in=[ReplicaState.AVAILABLE, ReplicaState.COPYING, ReplicaState.PLANNED])
        .exclude(endpoint=destination)
        .select_related("endpoint")
    )
    best = None
    for replica in replicas:
        if replica.state != ReplicaState.AVAILABLE:
            continue
        rtt = _rtt(replica.endpoint.site_id, destination.site_id)
        if rtt is not None and (best is None or rtt < best[0]):
            best = (rtt, replica)
    if best is not None:
        return best[1]
    on_the_way = [r for r in replicas if r.upstream_id is None and r.endpoint.role == StorageRole.DISK]
    return pin or (on_the_way[0] if on_the_way else None)


def release_rule(rule: Rule) -> int:
    """Forget the copies only ``rule`` wanted that have not started (PLANNED, no other rule, no policy):
    returns how many were removed. Copies on their way or made stay (the platform deletes no data)."""
    removed = 0
    planned = rule.replicas.select_for_update().filter(state=ReplicaState.PLANNED, policy__isnull=True)
    # Copies that wait for another first: deleting a first copy deletes those waiting for it (CASCADE).
    for replica in sorted(planned, key=lambda r: r.upstream_id is None):
        # The policy's copy planned from a first copy the rule pinned goes with it: the product is queued
        # again and its policy places both.
        others = replica.downstream.exclude(state=ReplicaState.FAILED).exclude(rules=rule)
        if (
            replica.rules.exclude(pk=rule.pk).exists()
            or others.exclude(state=ReplicaState.PLANNED, policy__isnull=False).exists()
        ):
            continue
        replica.delete()
        removed += 1
    return removed

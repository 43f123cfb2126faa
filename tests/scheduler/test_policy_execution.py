"""Stored policies of every kind: their translation into the planner's policy, and what the push loop places
and submits for each (the transfertool here records the jobs; the integration test moves real bytes)."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

import pytest

from replicas.choices import ProductState, ReplicaState
from replicas.models import DataProduct, Replica, ReplicaPolicy
from replicas.services import FileSpec, register_product
from schedulers.loop import push_cycle
from schedulers.planning import DegradeStep, LegRole, PolicyKind, plan
from schedulers.planning import ReplicaPolicy as PlannerPolicy
from schedulers.services import push_product
from schedulers.snapshot import planner_policy, queued_products, topology_snapshot
from tests.factories import product_at_sdp, settle_copy
from topology.models import RegionalCentre, Telescope
from transfertools.interface import (
    JobParams,
    LinkConfig,
    StorageConfig,
    TransferRequest,
    Transfertool,
)

pytestmark = pytest.mark.django_db


class RecordingTool(Transfertool):
    def __init__(self) -> None:
        self.jobs: dict[str, tuple[list[TransferRequest], JobParams]] = {}
        self.links: dict[tuple[str, str], LinkConfig] = {}
        self.storage: dict[str, StorageConfig] = {}
        self.shares: dict[str, float] = {}

    def submit(self, files: Sequence[TransferRequest], params: JobParams) -> str:
        job_id = str(uuid.uuid4())
        self.jobs[job_id] = (list(files), params)
        return job_id

    def job_states(self, job_ids: Sequence[str]) -> dict[str, str]:
        return {}

    def cancel(self, job_id: str) -> None:
        pass

    def update_priority(self, job_id: str, priority: int) -> None:
        pass

    def failure_reasons(self, job_ids: Sequence[str]) -> dict[str, list[str]]:
        return {}

    def storage_element(self, url: str) -> str:
        parts = urlsplit(url)
        return f"{parts.scheme}://{parts.hostname}:{parts.port}"

    def set_link_config(self, link: LinkConfig) -> LinkConfig:
        self.links[link.pair] = link
        return link

    def link_configs(self) -> list[LinkConfig]:
        return list(self.links.values())

    def delete_link_config(self, symbolicname: str) -> None:
        self.links = {k: v for k, v in self.links.items() if v.name != symbolicname}

    def set_storage_config(self, storage: StorageConfig) -> None:
        self.storage[storage.storage] = storage

    def storage_configs(self) -> list[StorageConfig]:
        return list(self.storage.values())

    def delete_storage_config(self, storage: str) -> None:
        self.storage.pop(storage, None)

    def set_activity_shares(self, shares: Mapping[str, float]) -> None:
        self.shares = dict(shares)

    def activity_shares(self) -> dict[str, float]:
        return dict(self.shares)

    def delete_activity_shares(self) -> None:
        self.shares = {}


def _stored(**fields: Any) -> ReplicaPolicy:
    low = Telescope.objects.get(name="SKA1-Low")
    ReplicaPolicy.objects.filter(telescope=low).update(is_active=False)
    for key in ("copy_site", "relay_centre"):
        if key in fields:
            fields[key] = RegionalCentre.objects.get(name=fields[key])
    policy = ReplicaPolicy(name=f"low-{fields['kind']}", telescope=low, **fields)
    policy.full_clean()
    policy.save()
    return policy


def _only_uk() -> None:
    """Every first copy to UKSRC, so the tests know the lane."""
    RegionalCentre.objects.exclude(name="UKSRC").update(share_weight=0)


def _product(name: str = "obs") -> DataProduct:
    return product_at_sdp(name, sizes=[10**6, 10**6])


def test_the_stored_policy_becomes_the_planners(reference_topology) -> None:  # type: ignore[no-untyped-def]
    topology = topology_snapshot()
    two = _stored(kind="two_replicas", partners={"UKSRC": "AUSRC"}, degrade_order=["relay"], degrade_at=0.9)
    assert planner_policy(two, topology) == PlannerPolicy(
        kind=PolicyKind.TWO_REPLICAS,
        partners={"UKSRC": "AUSRC"},
        relays={"SKA1-Low": "SingaporeDC"},  # no relay centre stored: the reference centre
        degrade_order=(DegradeStep.RELAY,),
        degrade_at=0.9,
        recover_at=0.5,
    )
    full = _stored(kind="full_copy", copy_site="AUSRC", relay_centre="SingaporeDC")
    assert planner_policy(full, topology).copy_site == "AUSRC"
    assert planner_policy(full, topology).kind == PolicyKind.FULL_COPY
    dist = _stored(kind="distribution", relay_centre="SingaporeDC", relay_all=True, degrade_order=[])
    translated = planner_policy(dist, topology)
    assert (translated.kind, translated.relays, translated.relay_all, translated.degrade_order) == (
        PolicyKind.DISTRIBUTION,
        {"SKA1-Low": "SingaporeDC"},
        True,
        (),
    )
    one = _stored(kind="weighted_share")
    assert planner_policy(one, topology) == PlannerPolicy(relays={"SKA1-Low": "SingaporeDC"})
    # The planner takes the translation: a two-replicas product gets its second leg to the partner.
    _only_uk()
    _product()
    result = plan(
        queued_products(now=DataProduct.objects.get().created),
        topology_snapshot(),
        planner_policy(two, topology),
    )
    assert [(leg.role, leg.source, leg.destination) for leg in result.legs] == [
        (LegRole.PRIMARY, "SKA1-Low", "UKSRC"),
        (LegRole.SECOND, "UKSRC", "AUSRC"),
    ]


def test_two_replicas_second_copy_goes_from_the_src_once_the_first_arrives(reference_topology) -> None:  # type: ignore[no-untyped-def]
    _only_uk()
    _stored(kind="two_replicas", partners={"UKSRC": "AUSRC"})
    product, tool = _product(), RecordingTool()
    cycle = push_cycle(transfertool=tool)
    assert cycle.error == "" and [e["lane"] for e in cycle.submitted] == [["SKA1-Low", "UKSRC"]]
    first = product.replicas.get(endpoint__name="UKSRC_DISK")
    second = product.replicas.get(endpoint__name="AUSRC_DISK")
    assert first.state == ReplicaState.COPYING and first.upstream is None
    assert first.reason.startswith(
        "low-two_replicas (two_replicas): first copy; push plan: SKA1-Low -> UKSRC"
    )
    assert second.state == ReplicaState.PLANNED and second.upstream == first
    assert "second copy (redistribution to the partner SRC), UKSRC -> AUSRC" in second.reason
    # The second copy waits for the first: nothing more goes while it travels.
    assert push_cycle(transfertool=tool).legs_submitted == 0
    settle_copy(first, "FINISHED")
    product.refresh_from_db()
    assert product.state == ProductState.PLACING  # one of its two replicas is there
    cycle = push_cycle(transfertool=tool)
    assert [(e["role"], e["lane"]) for e in cycle.submitted] == [("second", ["UKSRC", "AUSRC"])]
    requests, params = tool.jobs[cycle.submitted[0]["job_id"]]
    assert not params.multihop and params.metadata["lane"] == ["UKSRC", "AUSRC"]
    assert all("uksrc" in r.source and "ausrc" in r.destination for r in requests) and len(requests) == 2
    second.refresh_from_db()
    assert second.state == ReplicaState.COPYING and "push plan: UKSRC -> AUSRC" in second.reason
    assert push_cycle(transfertool=tool).legs_submitted == 0  # the UKSRC -> AUSRC lane is busy
    settle_copy(second, "FINISHED")
    product.refresh_from_db()
    second.refresh_from_db()
    assert product.state == ProductState.PLACED
    assert second.reason.startswith("low-two_replicas (two_replicas): second copy")
    assert second.reason.endswith(f"transfer job {cycle.submitted[0]['job_id']} finished")


def test_full_copy_at_the_copy_site_and_none_when_the_first_copy_is_there(reference_topology) -> None:  # type: ignore[no-untyped-def]
    _only_uk()
    policy = _stored(kind="full_copy", copy_site="AUSRC")
    product, tool = _product("a"), RecordingTool()
    push_cycle(transfertool=tool)
    copy = product.replicas.get(endpoint__name="AUSRC_DISK")
    assert copy.upstream is not None and copy.upstream.endpoint.name == "UKSRC_DISK"
    assert "full copy at AUSRC, UKSRC -> AUSRC" in copy.reason
    policy.copy_site = RegionalCentre.objects.get(name="UKSRC")
    policy.save()
    first = product.replicas.get(endpoint__name="UKSRC_DISK")
    settle_copy(first, "FINISHED")  # frees the lane
    other = _product("b")
    cycle = push_cycle(transfertool=tool)
    # The new product has its first copy only; the first product's copy, placed under the old copy site,
    # still goes, outside the plan (the policy has no UKSRC -> AUSRC lane any more).
    assert sorted((e["role"], e["lane"][1]) for e in cycle.submitted) == [
        ("primary", "UKSRC"),
        ("unplanned copy", "AUSRC"),
    ]
    copy.refresh_from_db()
    assert copy.state == ReplicaState.COPYING and "outside the plan (low-full_copy has no lane" in copy.reason
    assert [r.endpoint.name for r in other.replicas.exclude(endpoint__role="sdp")] == ["UKSRC_DISK"]


def test_distribution_relays_as_one_multihop_job(reference_topology) -> None:  # type: ignore[no-untyped-def]
    _only_uk()
    _stored(kind="distribution", relay_centre="SingaporeDC", relay_all=True)
    product, tool = _product(), RecordingTool()
    cycle = push_cycle(transfertool=tool)
    (entry,) = cycle.submitted
    assert (
        entry["lane"] == ["SKA1-Low", "UKSRC"] and entry["via"] == "SingaporeDC" and entry["role"] == "relay"
    )
    requests, params = tool.jobs[entry["job_id"]]
    assert params.multihop and len(requests) == 4  # two files, each SDP -> buffer then buffer -> SRC
    assert "singaporedc" in requests[0].destination and "singaporedc" in requests[2].source
    # Each hop's link gets the plan's concurrent files, fixed, through the transfertool (and only through it).
    hops = {(tool.storage_element(r.source), tool.storage_element(r.destination)) for r in requests}
    assert set(tool.links) == hops and len(hops) == 2
    assert all(
        (link.min_active, link.max_active, link.optimizer_mode)
        == (entry["lane_files"], entry["lane_files"], 0)
        for link in tool.links.values()
    )
    (replica,) = product.replicas.exclude(endpoint__role="sdp")
    assert (
        replica.endpoint.name == "UKSRC_DISK"
        and replica.via is not None
        and replica.via.name == "SingaporeDC"
    )
    assert (
        "(distribution): relayed first copy; push plan: SKA1-Low -> UKSRC via SingaporeDC" in replica.reason
    )


def test_a_failed_first_copy_fails_the_copy_that_waits_for_it(reference_topology) -> None:  # type: ignore[no-untyped-def]
    _only_uk()
    _stored(kind="two_replicas", partners={"UKSRC": "AUSRC"})
    product, tool = _product(), RecordingTool()
    push_cycle(transfertool=tool)
    first = product.replicas.get(endpoint__name="UKSRC_DISK")
    # A source problem: the product fails (one that failed on its way is re-routed: test_lane_health.py).
    settle_copy(first, "FAILED", ["SOURCE [2 No such file]"])
    second = product.replicas.get(endpoint__name="AUSRC_DISK")
    product.refresh_from_db()
    assert (
        second.state == ReplicaState.FAILED and "the copy at UKSRC_DISK it waits for failed" in second.reason
    )
    assert product.state == ProductState.FAILED
    assert push_cycle(transfertool=tool).legs_submitted == 0


def test_an_explicit_push_places_the_second_copy_and_the_loop_makes_it(reference_topology) -> None:  # type: ignore[no-untyped-def]
    _only_uk()
    _stored(kind="two_replicas", partners={"UKSRC": "AUSRC"})
    product, tool = _product(), RecordingTool()
    replicas = push_product(product=product, transfertool=tool)
    assert sorted((r.endpoint.name, r.state) for r in replicas) == [
        ("AUSRC_DISK", ReplicaState.PLANNED),
        ("UKSRC_DISK", ReplicaState.COPYING),
    ]
    assert len(tool.jobs) == 1  # only the first copy goes now
    assert len(push_product(product=product, transfertool=tool)) == 2 and len(tool.jobs) == 1  # idempotent
    first = product.replicas.get(endpoint__name="UKSRC_DISK")
    settle_copy(first, "FINISHED")
    cycle = push_cycle(transfertool=tool)
    assert [e["lane"] for e in cycle.submitted] == [["UKSRC", "AUSRC"]]


def test_a_policy_that_does_not_fit_the_topology_stops_only_its_telescope(reference_topology) -> None:  # type: ignore[no-untyped-def]
    _only_uk()
    _stored(kind="two_replicas")  # the ring of share SRCs is UKSRC alone: its own partner
    _product()
    mid = Telescope.objects.get(name="SKA1-Mid")
    register_product(scope="ska", name="mid", telescope=mid, files=[FileSpec("a.ms", 10**6, "0cc737eb")])
    cycle = push_cycle(transfertool=RecordingTool())
    assert "SKA1-Low: partners: UKSRC cannot be its own partner" in cycle.error
    assert [e["lane"] for e in cycle.submitted] == [["SKA1-Mid", "UKSRC"]]


def test_explicit_shares_decide_where_the_loop_sends_first_copies(reference_topology: Any) -> None:
    """An operator's explicit shares (the portal's policy form) outweigh the SRCs' own share weights, in the
    push loop's own cycles as in an explicit push: every SRC keeps its share weight here, only CASRC_DISK has
    a share."""
    from replicas.models import PolicyShare
    from topology.models import StorageEndpoint

    policy = _stored(kind="weighted_share")
    PolicyShare.objects.create(
        policy=policy, destination=StorageEndpoint.objects.get(name="CASRC_DISK"), weight=3
    )
    looped, tool = _product("looped"), RecordingTool()
    cycle = push_cycle(transfertool=tool)
    assert cycle.error == "" and [e["lane"] for e in cycle.submitted] == [["SKA1-Low", "CASRC"]]
    # An explicit push goes through the loop too: once the lane is free, to the same SRC.
    first = looped.replicas.get(endpoint__name="CASRC_DISK")
    settle_copy(first, "FINISHED")
    pushed = _product("pushed")
    push_product(product=pushed, transfertool=tool)
    for product in (looped, pushed):
        assert [r.endpoint.name for r in product.replicas.exclude(endpoint__role="sdp")] == ["CASRC_DISK"]
    # Without explicit shares the SRCs' own weights apply again: with UKSRC the only one, it gets the next.
    policy.shares.all().delete()
    _only_uk()
    third = _product("third")
    cycle = push_cycle(transfertool=tool)
    assert cycle.error == "" and [e["lane"] for e in cycle.submitted] == [["SKA1-Low", "UKSRC"]]
    assert [r.endpoint.name for r in third.replicas.exclude(endpoint__role="sdp")] == ["UKSRC_DISK"]


def test_a_misconfigured_transfertool_is_the_cycles_error_and_moves_nothing(
    reference_topology: Any, settings: Any
) -> None:
    settings.SRCNET_TRANSFERTOOL = {"KIND": "fts3", "FTS3_URL": ""}
    product = _product()
    cycle = push_cycle()
    assert cycle.error == "SRCNET_TRANSFERTOOL=fts3 needs SRCNET_FTS3_URL"
    assert cycle.products_queued == 1 and cycle.legs_submitted == 0
    assert not product.replicas.exclude(endpoint__role="sdp").exists()
    settings.SRCNET_TRANSFERTOOL = {"KIND": "gridftp"}
    assert "must be 'embedded' or 'fts3', not 'gridftp'" in push_cycle().error


def test_a_copy_waiting_on_a_rucio_placed_replica_is_left_to_rucio(reference_topology: Any) -> None:
    """When Rucio rules made the first copy, the follower makes the second as a rule from that SRC
    (tests/rucio); the loop must not copy it as well."""
    _only_uk()
    _stored(kind="two_replicas", partners={"UKSRC": "AUSRC"})
    product, tool = _product(), RecordingTool()
    push_product(product=product, transfertool=tool)
    first = product.replicas.get(endpoint__name="UKSRC_DISK")
    Replica.objects.filter(pk=first.pk).update(
        state=ReplicaState.AVAILABLE,
        reason="rucio rule 0a1b (SKA Data Products, UKSRC_DISK): OK",
        rucio_rule="0a1b",
    )
    assert push_cycle(transfertool=tool).legs_submitted == 0
    assert product.replicas.get(endpoint__name="AUSRC_DISK").state == ReplicaState.PLANNED
    # The platform's own copy (no rule):
    Replica.objects.filter(pk=first.pk).update(reason="transfer job finished", rucio_rule="")
    assert [e["lane"] for e in push_cycle(transfertool=tool).submitted] == [["UKSRC", "AUSRC"]]

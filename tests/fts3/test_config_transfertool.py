"""The transfertool's configuration calls: ``Fts3Transfertool`` through the real ``fts3`` client's Context
against the service's /config endpoints over HTTP, and the embedded transfertool in-process, answer the
same; the plan's limits go all or none (``schedulers.enforcement``)."""

from __future__ import annotations

import re

import pytest

from identity.tokens import issue
from schedulers.enforcement import enforce_links
from transfers.embedded_transfertool import EmbeddedTransfertool
from transfers.models import ActivityShare, LinkLimit, StorageElementLimit
from transfertools.fts3_rest import Fts3Transfertool
from transfertools.interface import (
    LinkConfig,
    StorageConfig,
    Transfertool,
    TransfertoolError,
)

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("recorded_storage")]
A, B, C = "root://a.example.org:1094", "root://b.example.org:1094", "davs://aus.example.org:443"
NOWHERE = "root://nowhere.example.org:1094"


def _rows() -> list[tuple[object, ...]]:
    return list(
        LinkLimit.objects.order_by("source_se", "dest_se").values_list(
            "symbolicname", "source_se", "dest_se", "min_active", "max_active", "optimizer_mode"
        )
    )


def _exercise(tool: Transfertool) -> None:
    # The service keeps the port in its storage element names, and says so; the tool follows it.
    assert tool.storage_element("root://a.example.org:1094//srcnet/x/f.ms") == A

    link = tool.set_link_config(LinkConfig(A, B, min_active=1, max_active=3, nostreams=2))
    assert link == LinkConfig(
        A, B, 1, 3, 0, 2, symbolicname="srcnet-root-a.example.org-1094--root-b.example.org-1094"
    )
    assert tool.link_configs() == [link]
    with pytest.raises(TransfertoolError, match=re.escape(f"source: {NOWHERE!r} is neither")):
        tool.set_link_config(LinkConfig(NOWHERE, B, 1, 3))
    with pytest.raises(TransfertoolError, match="max_active: 3 is lower than min_active 5"):
        tool.set_link_config(LinkConfig(A, B, 5, 3))
    assert tool.link_configs() == [link]

    # All or none: the second link is refused, so the first is put back as it was, and a link that did not
    # exist before is removed again.
    with pytest.raises(TransfertoolError, match="destination: "):
        enforce_links(tool, [LinkConfig(A, B, 6, 6), LinkConfig(B, C, 6, 6), LinkConfig(B, NOWHERE, 6, 6)])
    assert tool.link_configs() == [link]
    assert _rows() == [(link.name, A, B, 1, 3, 0)]
    enforce_links(tool, [LinkConfig(A, B, 6, 6), LinkConfig(B, C, 6, 6)])
    assert {(c.pair, c.min_active, c.max_active) for c in tool.link_configs()} == {
        ((A, B), 6, 6),
        ((B, C), 6, 6),
    }

    tool.delete_link_config(link.name)
    tool.delete_link_config(link.name)  # gone already: no error
    assert [c.pair for c in tool.link_configs()] == [(B, C)]

    tool.set_storage_config(StorageConfig(A, inbound_max_active=5))
    tool.set_storage_config(StorageConfig(A, outbound_max_active=7))  # the inbound cap stays
    assert tool.storage_configs() == [StorageConfig(A, 5, 7)]
    with pytest.raises(TransfertoolError, match=re.escape(f"{NOWHERE}: ")):
        tool.set_storage_config(StorageConfig(NOWHERE, 1, 1))
    tool.delete_storage_config(A)
    assert tool.storage_configs() == [] and not StorageElementLimit.objects.exists()

    tool.set_activity_shares({"SKA Data Products": 3, "User Subscriptions": 1})
    assert tool.activity_shares() == {"SKA Data Products": 3, "User Subscriptions": 1}
    with pytest.raises(TransfertoolError, match=re.escape("share.x: a weight is from 0")):
        tool.set_activity_shares({"x": -1})
    assert ActivityShare.objects.count() == 2
    tool.delete_activity_shares()
    tool.delete_activity_shares()
    assert tool.activity_shares() == {}


def test_fts3_transfertool_configures_the_service_through_its_rest_api(live_server, scheduler_account):
    token = issue(scheduler_account, name="test", scope="fts3")[1]
    _exercise(Fts3Transfertool(f"{live_server.url}/fts3", token=token, verify=False))


def test_embedded_transfertool_configures_the_same(db):
    _exercise(EmbeddedTransfertool())


def test_an_account_without_the_config_role_is_refused_and_changes_nothing(live_server, operator):
    token = issue(operator, name="test", scope="fts3")[1]
    tool = Fts3Transfertool(f"{live_server.url}/fts3", token=token, verify=False)
    with pytest.raises(TransfertoolError, match="may not change the service's configuration"):
        tool.set_link_config(LinkConfig(A, B, 1, 3))
    assert not LinkLimit.objects.exists()


def test_a_real_fts3_is_told_its_own_storage_element_names(live_server, scheduler_account):
    """FTS3 names a storage element scheme://host: without this service's word on ports, the tool sends
    what FTS3 expects (and this service, whose sites differ only by port, refuses it, naming the field)."""
    token = issue(scheduler_account, name="test", scope="fts3")[1]
    tool = Fts3Transfertool(f"{live_server.url}/fts3", token=token, verify=False)
    tool.context.get_endpoint_info().pop("srcnet")
    assert tool.storage_element("root://a.example.org:1094//srcnet/f") == "root://a.example.org"
    with pytest.raises(TransfertoolError, match=re.escape("source: 'root://a.example.org' is neither")):
        tool.set_link_config(LinkConfig(tool.storage_element(A + "/f"), tool.storage_element(B + "/f"), 1, 1))

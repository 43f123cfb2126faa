"""Embedded mode end to end: a scientist's rule made through the REST API is planned by the push loop with
the telescope's own pushes, real files move between local XRootD servers, and the rule goes OK."""

from __future__ import annotations

import pytest

from schedulers.models import PushCycle
from tests.conftest import drive_push_loop

from .conftest import adler32_of, spectral_cube_at_sdp, unique

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]
MIB = 1024 * 1024


def test_a_rule_is_planned_by_the_push_loop_and_its_copies_arrive(  # type: ignore[no-untyped-def]
    celery_worker, bound_topology, scientist_client
):
    sdp = bound_topology["SKA1-LOW_SDP"]
    name = unique("ruled")
    product = spectral_cube_at_sdp(sdp, name, (2 * MIB, MIB + 7), "SB-4242")
    # Found by its metadata, then asked for at two SRCs while it still waits at the SDP.
    found = scientist_client.get("/api/replicas/products/", {"observation_id": "SB-4242"}).json()["results"]
    assert [p["did"] for p in found] == [product.did]
    answer = scientist_client.post(
        "/api/rules/rules/",
        {"filters": {"observation_id": "SB-4242"}, "srcs": ["UKSRC", "AUSRC"], "copies": 2},
        format="json",
    )
    assert answer.status_code == 201, answer.content
    rule_id = answer.json()["id"]

    def rule_settled() -> dict[str, object] | None:
        shown = scientist_client.get(f"/api/rules/rules/{rule_id}/").json()
        return shown if shown["state"] in ("OK", "STUCK") else None

    shown = drive_push_loop(rule_settled, timeout=180, what="the rule's copies")
    assert shown["state"] == "OK", shown["copies_made"]
    copies = {c["endpoint"]: c for c in shown["copies_made"]}
    assert set(copies) == {"AUSRC_DISK", "UKSRC_DISK"}
    # The first copy went over the telescope's access link by the push plan; the second from it.
    assert "push plan: SKA1-Low -> AUSRC" in str(copies["AUSRC_DISK"]["reason"])
    assert copies["UKSRC_DISK"]["upstream"] == "AUSRC_DISK"
    for endpoint in copies:
        for f in product.files.all():
            assert adler32_of(bound_topology[endpoint].local_path(f"srcnet/{f.relative_path}")) == f.adler32
    # Shown with the telescopes' pushes: the push cycles that submitted its legs name it.
    lanes = [
        tuple(entry["lane"])
        for cycle in PushCycle.objects.all()
        for entry in cycle.submitted
        if entry["product"] == product.did
    ]
    assert sorted(lanes) == [("AUSRC", "UKSRC"), ("SKA1-Low", "AUSRC")], lanes
    # Where is my data: every replica and its transfer jobs, finished.
    where = scientist_client.get(f"/api/replicas/products/{product.pk}/").json()
    assert {r["endpoint"]: r["state"] for r in where["replicas"]} == {
        "SKA1-LOW_SDP": "available",
        "AUSRC_DISK": "available",
        "UKSRC_DISK": "available",
    }
    assert sorted(t["destinations"][0] for t in where["transfers"]) == ["AUSRC_DISK", "UKSRC_DISK"]
    assert {t["state"] for t in where["transfers"]} == {"FINISHED"}

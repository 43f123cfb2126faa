"""A simulated campaign at full scale: one SKA day through the simulator; its report, its numbers."""

from __future__ import annotations

import json

import pytest

from campaigns.services import advance, report_dir
from schedulers.simulations import read_summary

pytestmark = pytest.mark.django_db
DAY = 86400


def test_a_simulated_day_reports_the_simulators_own_numbers(
    operator_client, reference_topology, settings, tmp_path
):
    settings.SRCNET_REPORTS_DIR = tmp_path
    response = operator_client.post(
        "/api/campaigns/",
        {
            "name": "one-ska-day",
            "mode": "simulated",
            "topology": "reference",
            "sources": ["SKA1-Low", "SKA1-Mid"],
            "destinations": ["UKSRC_DISK"],
            "target_rate_bps": 1e15 * 8 / DAY,  # 1 PB/day
            "duration_seconds": DAY,
            "min_file_bytes": 10 * 10**9,
            "max_file_bytes": 90 * 10**9,
        },
        format="json",
    )
    assert response.status_code == 201, response.json()
    campaign_id = response.json()["id"]
    # In this rolled-back test the on-commit hook never fires: run the task's body as the worker would.
    assert advance(campaign_id, 0) == "finished"
    assert advance(campaign_id, 0) == "not scheduled"  # a redelivered message does nothing
    body = operator_client.get(f"/api/campaigns/{campaign_id}/").json()
    simulator = read_summary(report_dir(campaign_id))
    assert body["state"] == "finished" and simulator and simulator[0]["products"] > 0
    summary = body["summary"]
    assert summary["simulator"] == json.loads(json.dumps(simulator))
    run = simulator[0]
    assert summary["achieved_bytes"] == pytest.approx(sum(run["sent_bytes"].values()))
    assert summary["achieved_rate_bps"] == pytest.approx(sum(run["sent_bytes"].values()) * 8 / DAY)
    assert summary["delivered_bytes"] == pytest.approx(run["delivered_bytes"])
    assert summary["products"] == run["products"] and summary["complete"] == run["completed"]
    assert summary["latency_hours"] == pytest.approx(run["latency_hours"])
    assert summary["planned_bytes"] == pytest.approx(1e15, rel=1e-9)
    assert {"report.md", "summary.json", "campaign.json", "rate.png", "samples.csv"} <= set(
        body["report_files"]
    )
    csv = operator_client.get(f"/api/campaigns/{campaign_id}/files/samples.csv/")
    assert csv.status_code == 200 and b"SKA1-Low" in b"".join(csv.streaming_content)

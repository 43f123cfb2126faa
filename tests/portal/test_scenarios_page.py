"""The portal's scenario comparison: operators run the simulator, everyone logged in compares the results."""

from __future__ import annotations

import pytest
from django.urls import reverse

from schedulers.models import Simulation
from schedulers.services import run_requested_simulation

pytestmark = pytest.mark.django_db


def test_operator_runs_the_scenarios_and_sees_them_side_by_side(client, operator, settings, tmp_path):
    settings.SRCNET_REPORTS_DIR = tmp_path
    client.force_login(operator)
    response = client.post(
        reverse("schedulers:simulations"), {"scenario": "all", "days": "0.05", "topology": "reference"}
    )
    simulation = Simulation.objects.get()
    assert response.status_code == 302 and response["Location"] == reverse(
        "schedulers:simulation", args=[simulation.pk]
    )
    # The worker's part, run here (on-commit hooks do not fire in this rolled-back test).
    assert run_requested_simulation(simulation.pk) == "done"
    page = client.get(reverse("schedulers:simulation", args=[simulation.pk])).content.decode()
    for scenario in ("one_replica", "two_replicas", "full_copy", "distribution"):
        assert f"<td>{scenario}</td>" in page
    assert "utilisation.png" in page
    plot = client.get(reverse("schedulers:simulation-file", args=[simulation.pk, "utilisation.png"]))
    assert plot.status_code == 200 and b"".join(plot.streaming_content).startswith(b"\x89PNG")


def test_bad_input_is_shown_and_nothing_is_stored(client, operator):
    client.force_login(operator)
    page = client.post(reverse("schedulers:simulations"), {"scenario": "warp", "days": "1"}).content.decode()
    assert "unknown" in page and "warp" in page
    assert Simulation.objects.count() == 0


def test_scientists_compare_but_do_not_run(client, scientist):
    client.force_login(scientist)
    page = client.get(reverse("schedulers:simulations"))
    assert page.status_code == 200 and b'name="scenario"' not in page.content
    assert client.post(reverse("schedulers:simulations"), {"scenario": "all", "days": "1"}).status_code == 403
    assert Simulation.objects.count() == 0

"""The portal's flows page reads the access links' last hour from the real Prometheus when one is
configured (SRCNET_PROMETHEUS_URL): the control plane (gunicorn on the test database) is scraped every
second, and the page shows the series Prometheus answers; a Prometheus that does not answer leaves the
page working, with a note; without one the page is as it was."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from django.test import Client

from localnet.monitoring import (
    Monitoring,
)
from localnet.state import StateDir, free_port
from tests.conftest import wait_until
from transfers.choices import FileState, JobState
from transfers.models import TransferJob

from .conftest import query, running_monitoring
from .data import GIB, copy

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

FLOWS = "/transfers/flows/"


@pytest.fixture
def prometheus(test_state: StateDir, control_plane: str) -> Iterator[Monitoring]:
    with running_monitoring(test_state, control_plane=control_plane, fts3=None, interval="1s") as monitoring:
        yield monitoring


def history_rows(html: str) -> dict[str, dict[str, str]]:
    """The history table's rows by telescope: their data attributes and cells' text."""
    table = re.search(r'<table class="objects" id="history-table">(.*?)</table>', html, re.S)
    assert table, "no history table on the page"
    rows = {}
    for attrs, body in re.findall(r"<tr (data-telescope=[^>]*)>(.*?)</tr>", table.group(1), re.S):
        data = dict(re.findall(r'data-([\w-]+)="([^"]*)"', attrs))
        cells = [re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<td>(.*?)</td>", body, re.S)]
        data["cells"] = " | ".join(cells)
        data["polyline"] = " ".join(re.findall(r'<polyline points="([^"]*)"', body))
        rows[data["telescope"]] = data
    return rows


def test_the_flows_page_shows_the_access_links_history_from_prometheus(
    reference_topology, prometheus: Monitoring, operator, scientist, settings
) -> None:  # type: ignore[no-untyped-def]
    # One GiB left SKA1-Low's SDP just now: its access link's achieved rate is above zero; SKA1-Mid's is 0.
    job = TransferJob.objects.create(state=JobState.FINISHED, metadata={"lane": ["SKA1-Low", "UKSRC"]})
    copy(job, 0, source="SKA1-LOW_SDP", destination="UKSRC_DISK", state=FileState.FINISHED, size=GIB)
    low = 'srcnet_access_link_achieved_bits_per_second{telescope="SKA1-Low"}'
    scraped = wait_until(
        lambda: query(prometheus, f"{low} > 0"),
        timeout=60,
        interval=0.5,
        what="the achieved rate in Prometheus",
    )
    achieved = float(scraped[0]["value"][1])
    assert achieved == pytest.approx(GIB * 8 / 300)  # the metrics' default window: 300 s

    client = Client()
    client.force_login(operator)
    without = client.get(FLOWS)
    assert without.status_code == 200
    assert b"access-link-history" not in without.content  # no Prometheus configured: the page as before

    settings.SRCNET_PROMETHEUS = {"URL": prometheus.prometheus_url, "TIMEOUT_SECONDS": 5.0}
    page = client.get(FLOWS)
    assert page.status_code == 200
    html = page.content.decode()
    assert "(from Prometheus)" in html and 'id="paths-table"' in html
    rows = history_rows(html)
    assert set(rows) == {"SKA1-Low", "SKA1-Mid"}
    assert int(rows["SKA1-Low"]["points"]) >= 1
    assert float(rows["SKA1-Low"]["latest-bps"]) == pytest.approx(achieved)
    assert (
        rows["SKA1-Low"]["cells"]
        == "SKA1-Low | low-access |  | 28.6 Mbit/s | 28.6 Mbit/s | 28.6 Mbit/s | 92.6 Gbit/s"
    )
    assert rows["SKA1-Low"]["polyline"]  # the sparkline has points
    assert float(rows["SKA1-Mid"]["latest-bps"]) == 0
    assert rows["SKA1-Mid"]["cells"].endswith("| 0 bit/s | 0 bit/s | 0 bit/s | 92.6 Gbit/s")

    # Prometheus does not answer (nothing listens there): the page still works, and says so.
    settings.SRCNET_PROMETHEUS = {"URL": f"http://127.0.0.1:{free_port()}", "TIMEOUT_SECONDS": 2.0}
    broken = client.get(FLOWS)
    assert broken.status_code == 200
    text = broken.content.decode()
    assert 'id="history-unavailable"' in text and 'id="paths-table"' in text and 'id="jobs-table"' in text
    assert "The history could not be read from Prometheus (http://127.0.0.1:" in text  # the operator's detail
    assert "history-table" not in text
    scientist_client = Client()
    scientist_client.force_login(scientist)
    seen = scientist_client.get(FLOWS).content.decode()
    assert "The history could not be read from Prometheus;" in seen and "http://127.0.0.1:" not in seen

"""The XRootD plugin's counters reach Prometheus's format: a real site runs the plugin, which writes its
counters to a textfile (``wanio.metrics.file``) that the real node exporter's textfile collector serves; an
upload and a read through the site move them by exactly what was moved (docs/monitoring.md, "XRootD
plugin"; docs/adr/0004-plugin-metrics-in-a-textfile.md)."""

from __future__ import annotations

import math
import os
import subprocess
import urllib.request
from collections.abc import Iterator

import pytest
from prometheus_client.parser import text_string_to_metric_families

from localnet.issuer import LocalIssuer
from localnet.state import StateDir, free_port
from localnet.users import require_binary
from localnet.xrootd import LocalSite, plugin_metrics_dir, stop_site
from tests.conftest import site_token, token_site, wait_until
from transfers.tokens import url_with_token as with_token

from .conftest import serving

pytestmark = pytest.mark.integration

SITE = "MON-PLUGIN"
CHUNK = 8 * 2**20  # wanio.wb.chunk's default
# Two whole chunks and a short one: the counters must add up across chunks of both kinds.
SIZE = 2 * CHUNK + 12345

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


@pytest.fixture
def node_exporter(test_state: StateDir) -> Iterator[str]:
    """The node exporter with only its textfile collector, on the folder the local sites write to."""
    port = free_port()
    argv = [
        require_binary("prometheus-node-exporter"),
        f"--web.listen-address=127.0.0.1:{port}",
        "--collector.disable-defaults",
        "--collector.textfile",
        f"--collector.textfile.directory={plugin_metrics_dir(test_state)}",
    ]
    with serving(
        test_state, argv, port, what="the node exporter", log_name="pytest-node-exporter.log"
    ) as url:
        yield f"{url}/metrics"


@pytest.fixture
def site(test_state: StateDir, token_issuer: LocalIssuer) -> Iterator[LocalSite]:
    # Written every second rather than every 5 s: the test waits less.
    try:
        yield token_site(test_state, token_issuer, SITE, extra_lines=["wanio.metrics.every 1"])
    finally:
        stop_site(test_state, SITE)


def scrape(url: str) -> Samples:
    with urllib.request.urlopen(url, timeout=5) as answer:
        text = answer.read().decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name.startswith("srcnet_plugin_")
    }


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples[(name, tuple(sorted({"site": SITE, **labels}.items())))]


def xrdcp(*args: str, **env_extra: str) -> None:
    env = {**os.environ, "XRD_CONNECTIONRETRY": "1", **env_extra}
    done = subprocess.run(["xrdcp", "-f", *args], capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr


def test_an_upload_and_a_read_move_the_counters_by_what_was_moved(
    node_exporter: str, site: LocalSite, token_issuer: LocalIssuer, tmp_path
) -> None:  # type: ignore[no-untyped-def]
    before = wait_until(
        lambda: (
            (found := scrape(node_exporter))
            and ("srcnet_plugin_start_time_seconds", (("site", SITE),)) in found
            and found
        ),
        timeout=30,
        what="the site's plugin counters served by the node exporter",
    )
    payload = os.urandom(SIZE)
    (tmp_path / "up.bin").write_bytes(payload)
    token = site_token(
        token_issuer, site, *(f"storage.{what}:/plugin-metrics" for what in ("create", "modify", "read"))
    )
    xrdcp(str(tmp_path / "up.bin"), with_token(site.root_url("srcnet/plugin-metrics/up.bin"), token))

    def moved(name: str, samples: Samples, **labels: str) -> float:
        return value(samples, name, **labels) - value(before, name, **labels)

    after = wait_until(
        lambda: (
            (found := scrape(node_exporter))
            and moved("srcnet_plugin_uploads_total", found, outcome="complete") == 1
            and found
        ),
        timeout=30,
        what="the upload in the plugin's counters",
    )
    assert moved("srcnet_plugin_writebehind_received_bytes_total", after) == SIZE
    assert moved("srcnet_plugin_writebehind_written_bytes_total", after) == SIZE
    assert moved("srcnet_plugin_checksum_bytes_total", after) == SIZE
    assert moved("srcnet_plugin_checksums_stored_total", after) == 1
    # The sites write whole chunks with O_DIRECT (wanio.wb.odirect on); the last, partial one is buffered.
    assert moved("srcnet_plugin_writebehind_chunks_total", after, io="direct") == SIZE // CHUNK
    assert (
        moved("srcnet_plugin_writebehind_chunks_total", after, io="buffered")
        == math.ceil(SIZE / CHUNK) - SIZE // CHUNK
    )
    assert moved("srcnet_plugin_uploads_total", after, outcome="failed") == 0
    # Nothing is left in flight once the upload is closed.
    for gauge in (
        "srcnet_plugin_writebehind_queue_chunks",
        "srcnet_plugin_writebehind_queue_bytes",
        "srcnet_plugin_writebehind_memory_bytes",
        "srcnet_plugin_uploads_open",
    ):
        assert value(after, gauge) == 0, gauge
    assert value(after, "srcnet_plugin_writebehind_memory_limit_bytes") == 2 * 2**30
    assert value(after, "srcnet_plugin_writebehind_memory_peak_bytes") >= CHUNK
    # The stored checksum is the file's.
    assert site.local_path("srcnet/plugin-metrics/up.bin").read_bytes() == payload

    # A read through the storage layer (xrdcp's default pgread) is read ahead of.
    xrdcp(with_token(site.root_url("srcnet/plugin-metrics/up.bin"), token), str(tmp_path / "back.bin"))
    assert (tmp_path / "back.bin").read_bytes() == payload
    read = wait_until(
        lambda: (
            (found := scrape(node_exporter))
            and moved("srcnet_plugin_readahead_requests_total", found)
            + moved("srcnet_plugin_readahead_hints_total", found)
            >= 1
            and found
        ),
        timeout=30,
        what="the read's readahead in the plugin's counters",
    )
    assert 0 < moved("srcnet_plugin_readahead_bytes_total", read) <= SIZE
    # A read leaves the write counters alone.
    assert moved("srcnet_plugin_writebehind_received_bytes_total", read) == SIZE

    # Plain reads (kXR_read, not pgread) are served with sendfile() through the file-system layer.
    xrdcp(
        with_token(site.root_url("srcnet/plugin-metrics/up.bin"), token),
        str(tmp_path / "again.bin"),
        XRD_CPUSEPGWRTRD="0",
    )
    assert (tmp_path / "again.bin").read_bytes() == payload
    sent = wait_until(
        lambda: (
            (found := scrape(node_exporter))
            and moved("srcnet_plugin_sendfile_requests_total", found) >= 1
            and found
        ),
        timeout=30,
        what="the sendfile reads in the plugin's counters",
    )
    assert moved("srcnet_plugin_sendfile_bytes_total", sent) == SIZE

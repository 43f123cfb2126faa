"""The long-haul network: RTTs from the topology, third-party copies across the emulator at the scaled
capacity, links cut and restored while it runs."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from localnet.longhaul import CAPACITY_SCALE, WAN_DIR, LongHaul
from tests.conftest import site_token, wait_until
from tests.integration.conftest import adler32_of, ended, put_file, unique

pytestmark = [pytest.mark.integration, pytest.mark.timeout(150)]
MIB = 1024 * 1024
SDP, UK, AU = "SKA1-LOW_SDP", "UKSRC_DISK", "AUSRC_DISK"
# The RTT is within 2 % of the topology's, plus what the calibration cannot take off on a shared machine
# (the per-hop timer wake-ups). Judged by the 10th percentile of the probes: the emulator never delivers
# early, and the machine's other tenants only ever add delay (at a load average of 3.6 the median of 7.5 ms
# probes was 11.3 ms, their 10th percentile 7.47 ms); a measurement whose spread shows a busy neighbour is
# repeated, at most ATTEMPTS times, and the quietest kept.
RTT_TOLERANCE, RTT_SLACK_MS, ATTEMPTS = 0.02, 0.5, 3


def quiet_rtt(long_haul: LongHaul, source: str, destination: str, count: int) -> dict:
    seen = []
    for _ in range(ATTEMPTS):
        r = long_haul.measure_rtt(source, destination, count=count)
        seen.append(r)
        if r["received"] == count and r["p90_ms"] - r["p10_ms"] <= 1.0:
            return r
    return min(seen, key=lambda r: (r["received"] != count, (r["p90_ms"] or 1e9) - (r["p10_ms"] or 0)))


@pytest.mark.django_db
@pytest.mark.exclusive  # the emulator's timing, measured: alone on the machine (tests/worker_stack.py)
@pytest.mark.parametrize(("source", "destination", "count"), [(SDP, AU, 30), (SDP, UK, 8), (UK, AU, 8)])
def test_rtt_between_site_namespaces_is_the_topologys(
    long_haul, reference_topology, source, destination, count
):
    from topology.models import NetworkPath, StorageEndpoint

    sites = [StorageEndpoint.objects.get(name=n).site for n in (source, destination)]
    path = NetworkPath.objects.filter(source=sites[0], destination=sites[1]).order_by("rtt_ms").first()
    expected = long_haul.rtt_ms(source, destination)
    # The route is the platform's own path between the two sites.
    assert path is not None and long_haul.route(source, destination) == [
        lk.name for lk in path.ordered_links()
    ]
    assert expected == pytest.approx(path.rtt_ms)
    r = quiet_rtt(long_haul, source, destination, count)
    assert r["received"] == count, r
    assert abs(r["p10_ms"] - expected) <= RTT_TOLERANCE * expected + RTT_SLACK_MS, (expected, r)
    # Never early: the fastest probe took the topology's RTT less the calibrated fixed cost.
    assert r["min_ms"] >= expected - long_haul.net.overhead_ms - 0.05, (expected, r)


def _hop_bytes(long_haul: LongHaul, source: str, destination: str) -> dict[str, int]:
    """Bytes each hop of the route from source to destination has delivered (the direction data flows in
    a pull from source to destination)."""
    hops = long_haul.net.spec.hops(long_haul.site_of(source), long_haul.site_of(destination))
    stats = long_haul.stats()["hops"]
    return {hop: stats[hop]["tx_bytes"] for hop in hops}


@pytest.mark.parametrize("scheme", ["root", "davs"])
def test_a_third_party_copy_crosses_the_emulator_at_the_scaled_capacity(
    celery_worker, long_haul_topology, scheme
):
    from transfers.choices import JobState
    from transfers.models import TransferFile
    from transfers.services import FileRequest, submit_job

    source, destination = long_haul_topology.sites[SDP], long_haul_topology.sites[AU]
    # Large enough that the copy's fixed costs (the TPC rendezvous, the pull program's start, the checksums:
    # 2-3 s here) stay well below the time the bottleneck needs (5.4 s), so the floor below can fail.
    size = 64 * MIB
    name = unique(f"lh-{scheme}")
    checksum = put_file(source, f"ska/{name}/f.ms", size)
    url = {
        "root": lambda s: s.root_url(f"srcnet/ska/{name}/f.ms"),
        "davs": lambda s: s.davs_url(f"srcnet/ska/{name}/f.ms"),
    }
    before = _hop_bytes(long_haul_topology, SDP, AU)
    job = submit_job(
        files=[
            FileRequest(
                source=url[scheme](source),
                destination=url[scheme](destination),
                filesize=size,
                checksum=f"ADLER32:{checksum}",
            )
        ]
    )
    assert ended(job, timeout=90).state == JobState.FINISHED, list(
        TransferFile.objects.filter(job=job).values_list("reason", flat=True)
    )
    row = TransferFile.objects.get(job=job)
    on_disk = destination.local_path(f"srcnet/ska/{name}/f.ms")
    assert on_disk.stat().st_size == size and adler32_of(on_disk) == checksum
    assert row.source_checksum == row.dest_checksum == checksum
    # The bytes crossed every hop of the route, source to destination.
    after = _hop_bytes(long_haul_topology, SDP, AU)
    assert all(after[hop] - before[hop] >= size for hop in after), (before, after)
    # And no faster than the scaled bottleneck allows (its IP-layer rate: the file's bytes alone need this).
    capacity = long_haul_topology.capacity_bps(SDP, AU)
    assert capacity == 100e9 / CAPACITY_SCALE
    floor_s = size * 8 / capacity
    assert row.duration_seconds is not None and row.duration_seconds >= floor_s, (
        row.duration_seconds,
        floor_s,
    )
    assert row.duration_seconds < 4 * floor_s + 15, row.duration_seconds
    # The source paced the connections that read the file at its path bottleneck, as a deployed site does
    # (the xrootd_site role's pacing): its plugin logs each paced open, the pull's among them.
    assert long_haul_topology.pacing_bps(SDP) == capacity
    log = long_haul_topology.state.sub("log") / f"xrootd-{source.name}.out"
    paced = [
        line for line in log.read_text().splitlines() if f"wanio: pacing /srcnet/ska/{name}/f.ms" in line
    ]
    assert paced and all(f"max_pacing_rate={int(capacity / 8)} fd=" in line for line in paced), paced


def _probe(long_haul: LongHaul, source: str, destination: str, count: int = 3) -> int:
    """How many of ``count`` UDP probes from one endpoint's namespace to another's came back (an echo
    server must be running at the destination)."""
    probe = [sys.executable, str(WAN_DIR / "rttprobe.py"), "probe", long_haul.address(destination), "7010"]
    out = long_haul.net.run(
        long_haul.site_of(source),
        [*probe, str(count), "0.05"],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    return int(json.loads(out.stdout)["received"])


def test_a_link_cut_black_holes_the_routes_across_it_until_restored(long_haul):
    import subprocess

    echo = [sys.executable, str(WAN_DIR / "rttprobe.py"), "serve", "7010"]
    servers = [long_haul.net.popen(long_haul.site_of(e), echo, stdout=subprocess.DEVNULL) for e in (UK, AU)]
    try:
        wait_until(lambda: _probe(long_haul, SDP, AU, 1) == 1, timeout=10, what="the echo server")
        wait_until(lambda: _probe(long_haul, SDP, UK, 1) == 1, timeout=10, what="the echo server")
        assert "singapore-london" in long_haul.route(SDP, UK)
        assert "singapore-london" not in long_haul.route(SDP, AU)
        dropped = long_haul.stats()["hops"]["singapore-london>London"]["drop_down"]
        long_haul.cut("singapore-london")
        try:
            hops = long_haul.stats()["hops"]
            assert hops["singapore-london>London"]["down"] and hops["singapore-london>Singapore"]["down"]
            assert _probe(long_haul, SDP, UK) == 0
            assert _probe(long_haul, SDP, AU) == 3  # a route that does not cross it is untouched
        finally:
            long_haul.restore("singapore-london")
        assert long_haul.stats()["hops"]["singapore-london>London"]["drop_down"] >= dropped + 3
        assert not long_haul.stats()["hops"]["singapore-london>London"]["down"]
        assert _probe(long_haul, SDP, UK) == 3
        # A link no route between the network's sites crosses cannot be cut (a typo must not pass silently).
        with pytest.raises(RuntimeError, match="crosses link"):
            long_haul.cut("paris-madrid")
        started = time.monotonic()
        long_haul.cut("low-access")
        long_haul.restore("low-access")
        assert time.monotonic() - started < 3  # the emulator takes a change within one stats interval
    finally:
        for server in servers:
            server.kill()
            server.wait()


def test_the_sites_routes_use_the_congestion_control_a_deployed_site_runs(long_haul):
    """Every site's route into the emulated network sets BBR, what the dtn_tuning role deploys."""
    import subprocess

    for endpoint in (SDP, UK, AU):
        namespace = long_haul.net.ns(long_haul.site_of(endpoint))
        routes = subprocess.run(["ip", "-n", namespace, "route"], capture_output=True, text=True, check=True)
        assert "congctl bbr" in routes.stdout, (endpoint, routes.stdout)


def test_an_unknown_congestion_control_is_refused_by_its_setting():
    from localnet.longhaul import plan_network

    with pytest.raises(ValueError, match="SRCNET_LONGHAUL_CC must be one of cubic, bbr, reno, not 'vegas'"):
        plan_network(congestion_control="vegas")


def test_the_sites_enforce_the_sessions_tokens_reaching_the_issuer_from_their_namespaces(
    long_haul, token_issuer, tmp_path
):
    """The long-haul sites trust the session's issuer, which the host serves on loopback: each fetches its
    keys through the forwarder in its namespace (localnet/forwarder.py). Anonymous: refused; a token for
    the site's audience: served; a token for another site's: refused."""
    sdp = long_haul.sites[SDP]
    name = unique("lh-token")
    path = sdp.local_path(f"srcnet/ska/{name}/f.ms")
    path.parent.mkdir(parents=True)
    path.write_bytes(b"a product across the long haul\n")
    path.chmod(0o644)
    server = f"root://{sdp.host}:{sdp.root_port}"
    target = f"/srcnet/ska/{name}/f.ms"

    def stat(token: str = "") -> subprocess.CompletedProcess[str]:
        opaque = f"?authz=Bearer%20{token}" if token else ""
        return subprocess.run(
            ["xrdfs", server, "stat", target + opaque],
            capture_output=True,
            text=True,
            timeout=60,
            env={"PATH": "/usr/bin:/bin", "XRD_CONNECTIONRETRY": "1"},
        )

    assert stat().returncode != 0
    own = site_token(token_issuer, sdp, f"storage.read:/ska/{name}")
    served = stat(own)
    assert served.returncode == 0, served.stderr
    other = site_token(token_issuer, long_haul.sites[UK], f"storage.read:/ska/{name}")
    assert stat(other).returncode != 0

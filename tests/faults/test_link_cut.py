"""A long-haul link cut while products cross it, then restored (the fault suite on the long-haul network,
tests/longhaul/conftest.py): SKA1-Low's SDP, UKSRC and AUSRC each in a namespace of their own behind the
emulator, the products pushed from the SDP to UKSRC over the reference topology's route (low-access,
perth-singapore, singapore-london, uksrc-campus: 223 ms, 100 Mbit/s emulated). The emulator cuts
singapore-london mid-copy: everything on it and sent over it is lost, the TCP connections of the pulls
stall. After the restore, within a bounded time, every transfer has ended FINISHED or FAILED with a reason,
no replica is AVAILABLE unless its bytes at the destination have the right adler32, and no partial file
survives as a replica or beside none (settle_and_audit, as for every fault of the suite)."""

from __future__ import annotations

import sys
import time

import pytest

from localnet.longhaul import LongHaul
from tests.longhaul.conftest import long_haul, long_haul_plan, long_haul_topology  # noqa: F401 (fixtures)
from topology.models import StorageEndpoint

from .conftest import (
    active_copies,
    assert_nothing_lost,
    partial_at,
    policy_to,
    push_products,
    settle_and_audit,
    wait_for,
)

pytestmark = [pytest.mark.integration, pytest.mark.faults, pytest.mark.timeout(300)]
SDP, UK = "SKA1-LOW_SDP", "UKSRC_DISK"
CUT_LINK, CUT_SECONDS = "singapore-london", 10.0
MIB = 1024 * 1024


def after_the_restore(network: LongHaul) -> dict[str, object]:
    """What a failure needs to tell a broken path from a stuck server: is the emulator alive, what did the
    route's hops carry and drop, does a TCP connection from UKSRC's namespace to the SDP's port open (the
    path), and does the SDP's XRootD answer a query over it (the server)."""
    from localnet.processes import is_alive

    hops = network.net.spec.hops(network.site_of(SDP), network.site_of(UK))
    hops += network.net.spec.hops(network.site_of(UK), network.site_of(SDP))
    stats = network.stats()["hops"]
    sdp = network.sites[SDP]
    connect = f"import socket; socket.create_connection(({sdp.host!r}, {sdp.root_port}), 5).close()"
    checks = {
        "tcp connect": [sys.executable, "-c", connect],
        "xrdfs query": [
            "timeout",
            "15",
            "xrdfs",
            f"root://{sdp.host}:{sdp.root_port}",
            "query",
            "config",
            "version",
        ],
    }
    outcome = {}
    for what, argv in checks.items():
        done = network.net.run(network.site_of(UK), argv, capture_output=True, text=True, timeout=30)
        outcome[what] = f"exit {done.returncode} {done.stderr.strip()[-200:]}"
    keys = ("rx_segs", "tx_segs", "drop_down", "drop_queue", "drop_ring", "tx_err", "down")
    return {
        "emulator alive": is_alive(network.net.emulator_pid),
        "hops": {hop: {k: stats[hop][k] for k in keys} for hop in hops},
        **outcome,
    }


def test_a_long_haul_link_cut_mid_copy_then_restored(long_haul_topology, fault_worker, settings):  # noqa: F811
    network = long_haul_topology
    settings.SRCNET_TRANSFERS = {**settings.SRCNET_TRANSFERS, "RETRY_BACKOFF_SECONDS": 3.0}
    assert CUT_LINK in network.route(SDP, UK)
    policy_to(UK)
    fault_worker.start()
    products = push_products({"FAULT-SDP": network.sites[SDP]}, 3)
    # Mid-copy: bytes arrive at the destination (a pull that has only opened its file sends nothing yet).
    wait_for(
        lambda: active_copies() and [p for p in partial_at(network.sites[UK]) if p.stat().st_size >= MIB],
        90,
        "a copy under way",
    )
    in_flight = active_copies()
    toward_uk = f"{CUT_LINK}>London"
    network.cut(CUT_LINK)
    struck = time.monotonic()
    try:
        carried = network.stats()["hops"][toward_uk]
        time.sleep(CUT_SECONDS)
        during = network.stats()["hops"][toward_uk]
    finally:
        network.restore(CUT_LINK)
    # The link carried nothing while it was cut, and the copies' packets were lost on it.
    assert during["down"] and during["tx_bytes"] == carried["tx_bytes"], (carried, during)
    assert during["drop_down"] > carried["drop_down"], (carried, during)
    report = settle_and_audit(
        f"long-haul link {CUT_LINK} cut mid-copy for {CUT_SECONDS:.0f} s, then restored (223 ms route, "
        "100 Mbit/s emulated)",
        products,
        network.sites,
        in_flight=in_flight,
        since=struck,
        timeout=180,
        by_endpoint=True,
    )
    try:
        assert_nothing_lost(report)
    except AssertionError as error:
        raise AssertionError(f"{error}\nafter the restore: {after_the_restore(network)}") from error
    # The copies ran on the long-haul network: the destination is the site in UKSRC's namespace.
    assert StorageEndpoint.objects.get(name=UK).hostname == network.address(UK)

"""Streams reach the wire: one real third-party copy per case, by the transfer service's executor (gfal2),
with N streams asked, while ``ss`` counts the TCP connections the destination site holds to the source.

Sites of their own on loopback: a source paced by the project's plugin (``wanio.net.pacing``: each
connection that reads a file is paced at 8 MB/s, so a copy lasts long enough to be seen), a destination
with the plugin (root:// pulls with ``xrdcp-wan``, as localnet deploys it) and one with the stock server
(``xrdcp --server``). What each case asks and what ran is written to test-artifacts/streams-on-the-wire.json
(docs/transfers.md, "What runs on the wire"). And a root:// copy cancelled mid-pull frees the destination
file for its retry."""

from __future__ import annotations

import json
import os
import shutil
import signal
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from localnet.issuer import LocalIssuer
from localnet.processes import read_pid
from localnet.state import StateDir
from localnet.xrootd import LocalSite, site_folder, stock_server, stop_site
from tests.conftest import ARTIFACTS, register_local_sites, token_site
from topology.tpc_streams import HTTP_TPC_BLOCK_BYTES
from transfers.executor import CopyOutcome, copy_with_tokens

from .conftest import put_file, unique
from .connections import ConnectionSampler

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

MIB = 1024 * 1024
SOURCE, WAN, STOCK = "STREAMS-SRC", "STREAMS-WAN", "STREAMS-STOCK"
RESULTS = ARTIFACTS / "streams-on-the-wire.json"
_results: list[dict[str, Any]] = []


@pytest.fixture(scope="module")
def stream_sites(test_state: StateDir, token_issuer: LocalIssuer) -> Iterator[dict[str, LocalSite]]:
    sites: dict[str, LocalSite] = {}
    try:
        sites[SOURCE] = token_site(test_state, token_issuer, SOURCE, extra_lines=["wanio.net.pacing 8m"])
        sites[WAN] = token_site(test_state, token_issuer, WAN)
        with stock_server():
            sites[STOCK] = token_site(test_state, token_issuer, STOCK)
        yield sites
    finally:
        for name in (SOURCE, WAN, STOCK):
            stop_site(test_state, name)
            shutil.rmtree(site_folder(test_state, name) / "data", ignore_errors=True)
        if _results:
            ARTIFACTS.mkdir(exist_ok=True)
            RESULTS.write_text(json.dumps(_results, indent=2) + "\n")


def expected_connections(tool: str, streams: int) -> int:
    """What each tool opens from the destination to the source for ``streams`` streams (measured, and
    explained in docs/transfers.md)."""
    if tool == "XrdHttpTPC":
        return streams + 1  # one connection per stream, and the one that asked the size first
    if tool == "xrdcp --server":
        return streams + 1  # N sub-streams and the control connection (also for N = 1)
    # xrdcp-wan: the data connection alone for one stream, else N sub-streams and the control connection;
    # plus the connection of its early checksum query.
    return (1 if streams == 1 else streams + 1) + 1


def _copy(source: str, destination: str, checksum: str, streams: int, **options: Any) -> CopyOutcome:
    """The executor's copy, with its tokens as a worker gets them, in a thread of its own (gfal2 releases the
    interpreter meanwhile), bounded; ``options`` go to the executor as they are."""
    from django.db import connection

    outcome: list[CopyOutcome] = []

    def run() -> None:
        try:
            outcome.append(
                copy_with_tokens(
                    source=source,
                    destination=destination,
                    checksum=f"ADLER32:{checksum}",
                    nostreams=streams,
                    timeout=60,
                    **options,
                )
            )
        finally:
            connection.close()  # the thread's own (the executor looks the storage up)

    worker = threading.Thread(target=run)
    worker.start()
    worker.join(timeout=90)
    assert outcome, "the copy did not return within 90 s"
    return outcome[0]


CASES = [
    *[("root", WAN, "xrdcp-wan", n) for n in (1, 2, 4, 8)],
    *[("root", STOCK, "xrdcp --server", n) for n in (1, 2, 4, 8)],
    *[("davs", WAN, "XrdHttpTPC", n) for n in (1, 2, 4, 8)],
]


# exclusive: ss samples the copy's connections in real time; on a machine kept busy by the other xdist worker
# it missed every connection of a short copy (tests/worker_stack.py).
@pytest.mark.exclusive
@pytest.mark.parametrize(("scheme", "destination", "tool", "streams"), CASES)
def test_one_copy_runs_the_streams_it_asks_for(
    stream_sites: dict[str, LocalSite],
    test_state: StateDir,
    scheme: str,
    destination: str,
    tool: str,
    streams: int,
) -> None:
    register_local_sites(stream_sites)
    source, target = stream_sites[SOURCE], stream_sites[destination]
    name = unique("wire")
    # HTTP-TPC pulls 16 MiB blocks, one stream each: a file of N blocks gives every stream one (2 s at the
    # source's pace). An XRootD pull's sub-streams are unpaced, and the worker's own rendezvous ends with the
    # pull (xrootd_tpc.py): a file large enough that the sampler looks many times while it runs.
    size = streams * HTTP_TPC_BLOCK_BYTES if scheme == "davs" else 256 * MIB
    checksum = put_file(source, f"{name}/f", size)
    url = source.davs_url if scheme == "davs" else source.root_url
    into = target.davs_url if scheme == "davs" else target.root_url
    port = source.http_port if scheme == "davs" else source.root_port
    server = read_pid(test_state, f"xrootd-{destination}")
    assert server is not None

    with ConnectionSampler(port, server) as wire:
        outcome = _copy(url(f"srcnet/{name}/f"), into(f"srcnet/{name}/f"), checksum, streams)

    assert outcome.ok, outcome.error
    assert outcome.dest_checksum == checksum
    assert outcome.parameters["streams_on_wire"] == streams
    data = wire.carrying(MIB)
    _results.append(
        {
            "scheme": scheme,
            "tool": tool,
            "streams_asked": streams,
            "connections": len(wire.seen),
            "at_once": wire.peak,
            "carrying_data": len(data),
            "programs": sorted({c.command for c in wire.seen.values()}),
            "seconds": round(outcome.seconds, 2),
        }
    )
    # A copy lasts seconds (its first connection is paced): the sampler must have looked many times.
    assert wire.samples >= 10, f"the sampler looked {wire.samples} times in {outcome.seconds:.1f} s"
    assert len(wire.seen) == expected_connections(tool, streams), (wire.seen, wire.samples)
    if scheme == "davs":
        # Each stream pulls its own blocks: every one of them carried data.
        assert len(data) == streams, wire.seen
    else:
        # Where the reads go depends on when the sub-streams are bound (docs/transfers.md); some did.
        assert 1 <= len(data) <= len(wire.seen)


def test_http_tpc_runs_no_more_streams_than_the_file_has_blocks(
    stream_sites: dict[str, LocalSite], test_state: StateDir
) -> None:
    """Eight streams asked for a 24 MiB file: two 16 MiB blocks, two streams; the attempt says so."""
    register_local_sites(stream_sites)
    source, target = stream_sites[SOURCE], stream_sites[WAN]
    name = unique("blocks")
    checksum = put_file(source, f"{name}/f", 24 * MIB)
    server = read_pid(test_state, f"xrootd-{WAN}")
    assert server is not None
    with ConnectionSampler(source.http_port, server) as wire:
        outcome = _copy(source.davs_url(f"srcnet/{name}/f"), target.davs_url(f"srcnet/{name}/f"), checksum, 8)
    assert outcome.ok, outcome.error
    data = wire.carrying(MIB)
    _results.append(
        {
            "scheme": "davs",
            "tool": "XrdHttpTPC",
            "streams_asked": 8,
            "file_bytes": 24 * MIB,
            "connections": len(wire.seen),
            "carrying_data": len(data),
        }
    )
    assert outcome.parameters["nbstreams"] == 8 and outcome.parameters["streams_on_wire"] == 2
    assert len(wire.seen) == expected_connections("XrdHttpTPC", 2), wire.seen
    assert len(data) == 2


def test_a_cancelled_root_copy_leaves_the_destination_free_for_its_retry(
    stream_sites: dict[str, LocalSite], test_state: StateDir, settings: Any
) -> None:
    """The source stops answering mid-pull (SIGSTOP): the stall watch cancels the copy, whose destination
    stops its pull and closes the file; the retry, once the source answers again, opens the same file and
    completes with the right adler32. A pull left running would hold the file ("already opened by 1 writer",
    as tests/faults/test_reroute.py once saw), a cancel left unanswered would hold the failure."""
    settings.SRCNET_TRANSFERS = {**settings.SRCNET_TRANSFERS, "PROGRESS_SECONDS": 0.5}
    register_local_sites(stream_sites)
    source, target = stream_sites[SOURCE], stream_sites[WAN]
    name = unique("cancel")
    checksum = put_file(source, f"{name}/f", 64 * MIB)  # 8 s at the source's pace
    server = read_pid(test_state, f"xrootd-{SOURCE}")
    assert server is not None
    stopped = threading.Event()

    def stop_the_source_once_pulling(size: int, asked: float, answered: float) -> None:
        if size > 0 and not stopped.is_set():
            os.kill(server, signal.SIGSTOP)
            stopped.set()

    url, into = source.root_url(f"srcnet/{name}/f"), target.root_url(f"srcnet/{name}/f")
    try:
        cancelled = _copy(
            url, into, checksum, 1, stall_seconds=3, on_progress=stop_the_source_once_pulling, overwrite=True
        )
    finally:
        os.kill(server, signal.SIGCONT)
    assert stopped.is_set(), "the copy ended before any byte reached the destination"
    assert not cancelled.ok and "stalled" in cancelled.error, cancelled.error
    assert cancelled.parameters.get("third_party_copy") == "rendezvous", cancelled.parameters
    # The cancel is answered at once, and the source's close after a failure is bounded (5 s).
    assert cancelled.seconds < 30, cancelled.seconds

    retried = _copy(url, into, checksum, 1, overwrite=True)
    assert retried.ok, retried.error
    assert retried.dest_checksum == checksum

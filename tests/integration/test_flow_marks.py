"""A copy's SciTags flow identifier reaches the storage sites (transfers/flow_marks.py, docs/network.md):
one real third-party copy per protocol by the transfer service's executor (gfal2), with tokens as a worker
copies, between sites of their own on loopback that trace what they receive. HTTP: the destination gets
``SciTag: N`` with the COPY and opens the file with ``scitag.flow=N`` (``http.header2cgi``, as every local
and deployed site has it); the source gets ``SciTag: N`` from the pulling site. root://: the pulling site's
open carries ``scitag.flow=N`` in the ``tpc.scgi`` it hands its copy program (xrdcp-wan, which labels its
IPv6 connections with it: tests/wan/test_flow_label.py). A copy without a flow identifier carries none."""

from __future__ import annotations

import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from localnet.issuer import LocalIssuer
from localnet.state import StateDir
from localnet.xrootd import LocalSite, site_folder, stop_site
from tests.conftest import register_local_sites, token_site
from transfers.executor import CopyOutcome, copy_with_tokens

from .conftest import put_file, unique

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

MIB = 1024 * 1024
SOURCE, TARGET = "MARKS-SRC", "MARKS-DST"
FLOW = 42 << 6 | 2  # the local registry's experiment (ska-local, 42), activity 2


@pytest.fixture(scope="module")
def marked_sites(test_state: StateDir, token_issuer: LocalIssuer) -> Iterator[dict[str, LocalSite]]:
    sites: dict[str, LocalSite] = {}
    try:
        for name in (SOURCE, TARGET):
            # http.trace: each request's header lines in the site's log; xrootd.trace: each open's CGI.
            sites[name] = token_site(
                test_state,
                token_issuer,
                name,
                extra_lines=["http.trace all", "ofs.trace all", "xrootd.trace all"],
            )
        yield sites
    finally:
        for name in (SOURCE, TARGET):
            stop_site(test_state, name)
            shutil.rmtree(site_folder(test_state, name) / "data", ignore_errors=True)


def site_log(state: StateDir, name: str) -> Path:
    return state.sub("log") / f"xrootd-{name}.out"


def copy(source: str, destination: str, checksum: str, scitag: int | None) -> CopyOutcome:
    """The executor's copy with a worker's tokens, in a thread of its own (its own database connection)."""
    from django.db import connection

    outcome: list[CopyOutcome] = []

    def run() -> None:
        try:
            outcome.append(
                copy_with_tokens(
                    source=source,
                    destination=destination,
                    checksum=f"ADLER32:{checksum}",
                    timeout=60,
                    scitag=scitag,
                )
            )
        finally:
            connection.close()

    worker = threading.Thread(target=run)
    worker.start()
    worker.join(timeout=90)
    assert outcome, "the copy did not return within 90 s"
    return outcome[0]


def test_an_http_copys_flow_identifier_reaches_both_sites(marked_sites, test_state) -> None:  # type: ignore[no-untyped-def]
    register_local_sites(marked_sites)
    source, target = marked_sites[SOURCE], marked_sites[TARGET]
    logs = {name: site_log(test_state, name) for name in (SOURCE, TARGET)}
    before = {name: len(path.read_text(errors="replace")) for name, path in logs.items()}
    name = unique("marked-davs")
    checksum = put_file(source, f"{name}/f", MIB)
    outcome = copy(source.davs_url(f"srcnet/{name}/f"), target.davs_url(f"srcnet/{name}/f"), checksum, FLOW)
    assert outcome.ok, outcome.error
    assert outcome.parameters["scitag"] == FLOW and outcome.parameters["scitag_on_wire"] == "http headers"
    seen = {name: path.read_text(errors="replace")[before[name] :] for name, path in logs.items()}
    # The destination: the COPY's header, and its open of the file with the flow in the CGI.
    assert f"got hdr line: SciTag: {FLOW}" in seen[TARGET], seen[TARGET][-3000:]
    assert f"scitag.flow={FLOW}" in seen[TARGET], seen[TARGET][-3000:]
    # The source: the pulling site's GET carries it on (TransferHeaderSciTag -> SciTag).
    assert f"got hdr line: SciTag: {FLOW}" in seen[SOURCE], seen[SOURCE][-3000:]

    # Without a flow identifier, none is sent.
    before = {name: len(path.read_text(errors="replace")) for name, path in logs.items()}
    other = unique("unmarked-davs")
    checksum = put_file(source, f"{other}/f", MIB)
    outcome = copy(source.davs_url(f"srcnet/{other}/f"), target.davs_url(f"srcnet/{other}/f"), checksum, None)
    assert outcome.ok, outcome.error and "scitag" not in outcome.parameters
    seen = {name: path.read_text(errors="replace")[before[name] :] for name, path in logs.items()}
    assert all("SciTag" not in text for text in seen.values())


def test_a_root_copys_flow_identifier_reaches_the_pulling_sites_copy_program(
    marked_sites, test_state
) -> None:  # type: ignore[no-untyped-def]
    register_local_sites(marked_sites)
    source, target = marked_sites[SOURCE], marked_sites[TARGET]
    log = site_log(test_state, TARGET)
    before = len(log.read_text(errors="replace"))
    name = unique("marked-root")
    checksum = put_file(source, f"{name}/f", MIB)
    outcome = copy(source.root_url(f"srcnet/{name}/f"), target.root_url(f"srcnet/{name}/f"), checksum, FLOW)
    assert outcome.ok, outcome.error
    assert outcome.parameters["scitag_on_wire"] == "root:// scitag.flow"
    seen = log.read_text(errors="replace")[before:]
    opens = [line for line in seen.splitlines() if " open " in line and "tpc.scgi=" in line]
    assert opens and all(f"scitag.flow={FLOW}" in line.split("tpc.scgi=", 1)[1] for line in opens), seen[
        -3000:
    ]

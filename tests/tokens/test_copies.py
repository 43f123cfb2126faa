"""Copies between token-enforcing sites carry least-privilege tokens for each end, on both third-party-copy
protocols, and the pulling site gets the source's token from the copy."""

from __future__ import annotations

import uuid
import zlib
from pathlib import Path

import pytest

from tests.forgeries import claims
from transfers.executor import copy_file
from transfers.tokens import destination_scopes, source_scopes, tokens_for_copy

from .conftest import PREFIX, TokenBench

CONTENT = bytes(range(256)) * 4096  # 1 MiB


def _url(bench: TokenBench, site: str, scheme: str, path: str) -> str:
    local = bench.sites[site]
    if scheme == "root":
        return f"root://127.0.0.1:{local.root_port}/{PREFIX}{path}"
    return f"davs://127.0.0.1:{local.http_port}{PREFIX}{path}"


def _adler32(data: bytes) -> str:
    return f"{zlib.adler32(data) & 0xFFFFFFFF:08x}"


def test_the_scopes_are_the_files_directories_below_the_sites_base_path() -> None:
    url = "davs://h:1/srcnet/ukrsc/products/obs-1/file.fits"
    assert source_scopes(url, "/srcnet/") == ["storage.read:/ukrsc/products/obs-1"]
    assert destination_scopes(url, "/srcnet/") == [
        "storage.create:/ukrsc/products/obs-1",
        "storage.modify:/ukrsc/products/obs-1",
        "storage.read:/ukrsc/products/obs-1",
    ]
    assert source_scopes("root://h:1//srcnet/top.fits", "/srcnet/") == ["storage.read:/"]


@pytest.mark.parametrize("scheme", ["davs", "root"])
def test_a_third_party_copy_between_token_sites_carries_a_token_for_each_end(
    token_bench: TokenBench, endpoints: None, scheme: str
) -> None:
    # A folder no earlier run made: the destination creates it (and its parent) with the copy's token.
    path = f"copies-{uuid.uuid4().hex[:8]}/{scheme}/product.fits"
    source_file = token_bench.sites["TOKEN-A"].local_path(PREFIX + path)
    source_file.parent.mkdir(parents=True, exist_ok=True)
    source_file.write_bytes(CONTENT)
    for part in (source_file, *source_file.parents[:3]):
        part.chmod(0o777 if part.is_dir() else 0o666)
    source, destination = (
        _url(token_bench, "TOKEN-A", scheme, path),
        _url(token_bench, "TOKEN-B", scheme, path),
    )
    tokens = tokens_for_copy(source, destination, client=token_bench.client)
    assert tokens is not None
    src, dst = claims(tokens.source.current()), claims(tokens.destination.current())
    folder = "/" + path.rsplit("/", 1)[0]
    assert (src["aud"], src["scope"]) == (token_bench.audiences["TOKEN-A"], f"storage.read:{folder}")
    assert dst["aud"] == token_bench.audiences["TOKEN-B"]
    outcome = copy_file(
        source=source,
        destination=destination,
        checksum=f"ADLER32:{_adler32(CONTENT)}",
        tokens=tokens,
        timeout=60,
        overwrite=True,
    )
    assert outcome.ok, outcome.error
    assert token_bench.sites["TOKEN-B"].local_path(PREFIX + path).read_bytes() == CONTENT
    assert outcome.source_checksum == outcome.dest_checksum == _adler32(CONTENT)


# Without a size the worker looks at the source before the copy, as FTS3's url-copy does; with one (every
# copy the platform plans) only after the copy failed (transfers/executor.py): either way the failure is
# the source's.
@pytest.mark.parametrize("filesize", [None, len(CONTENT)])
def test_without_tokens_the_same_copy_is_refused_and_says_so(
    token_bench: TokenBench, endpoints: None, filesize: int | None
) -> None:
    path = f"copies/anonymous-{filesize}/product.fits"
    source_file: Path = token_bench.sites["TOKEN-A"].local_path(PREFIX + path)
    source_file.parent.mkdir(parents=True, exist_ok=True)
    source_file.write_bytes(CONTENT)
    outcome = copy_file(
        source=_url(token_bench, "TOKEN-A", "davs", path),
        destination=_url(token_bench, "TOKEN-B", "davs", path),
        timeout=60,
        filesize=filesize,
    )
    assert not outcome.ok
    assert "SOURCE" in outcome.error and ("403" in outcome.error or "ermission" in outcome.error), (
        outcome.error
    )
    assert not token_bench.sites["TOKEN-B"].local_path(PREFIX + path).exists()

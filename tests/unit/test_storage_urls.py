"""The storage URL gate: which URLs lie on a registered endpoint (pure: a registry built by hand)."""

from __future__ import annotations

import pytest

from topology.services.storage_urls import EndpointRef, StorageRegistry, UnregisteredStorageError, paced

UK = EndpointRef("UKSRC_DISK", "/srcnet/")
REGISTRY = StorageRegistry(
    {
        ("root", "storage.uksrc.example.org", 1094): UK,
        ("http", "storage.uksrc.example.org", 443): UK,
        ("root", "127.0.0.1", 21094): EndpointRef("LOCAL", "/"),
    }
)


@pytest.mark.parametrize(
    "url",
    [
        "root://storage.uksrc.example.org:1094//srcnet/ska/obs-1/part0.ms",
        "root://storage.uksrc.example.org//srcnet/a",  # the default root port
        "xroot://STORAGE.uksrc.example.org:1094/srcnet/a",  # host names are case-insensitive
        "davs://storage.uksrc.example.org/srcnet/a",  # the default https port
        "https://storage.uksrc.example.org:443/srcnet/a%20b",  # an encoded space is a name
        "root://127.0.0.1:21094//anything/under/the/root",
        "davs://storage.uksrc.example.org/srcnet/a?wanio.pace=2500000",  # a copy's pace (paced)
        "root://storage.uksrc.example.org//srcnet/a?wanio.pace=1",
    ],
)
def test_urls_on_registered_endpoints_resolve(url):
    assert REGISTRY.resolve(url).name in ("UKSRC_DISK", "LOCAL")


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("file:///etc/shadow", "the scheme 'file' is not served"),
        ("http://storage.uksrc.example.org:443/srcnet/a", "the scheme 'http' is not served"),
        ("gsiftp://storage.uksrc.example.org/srcnet/a", "the scheme 'gsiftp' is not served"),
        ("/etc/shadow", "the scheme '(none)' is not served"),
        ("root://evil.example.org:1094//srcnet/a", "no registered storage endpoint serves root on evil"),
        ("root://storage.uksrc.example.org:1095//srcnet/a", "on storage.uksrc.example.org:1095"),
        ("davs://storage.uksrc.example.org:1094/srcnet/a", "serves davs on storage.uksrc.example.org:1094"),
        ("root://storage.uksrc.example.org:1094//etc/shadow", "outside the storage endpoint UKSRC_DISK"),
        ("root://storage.uksrc.example.org:1094//srcnet/../etc/shadow", "'..' are not accepted"),
        ("root://storage.uksrc.example.org:1094//srcnet/%2e%2e/etc/shadow", "'..' are not accepted"),
        ("root://storage.uksrc.example.org:1094//srcnet/./a", "'..' are not accepted"),
        ("root://storage.uksrc.example.org:1094//srcnet//a", "empty segment"),
        ("root://storage.uksrc.example.org:1094//srcnet/", "no file name"),
        ("root://storage.uksrc.example.org:1094//srcnet/a b", "whitespace"),
        ("root://storage.uksrc.example.org:1094//srcnet/a%00b", "control character"),
        ("root://storage.uksrc.example.org:1094//srcnet/a\\b", "backslash"),
        ("root://u:p@storage.uksrc.example.org:1094//srcnet/a", "credentials"),
        ("root://storage.uksrc.example.org:1094//srcnet/a?oss.cgroup=x", "query string"),
        ("davs://storage.uksrc.example.org/srcnet/a?wanio.pace=2m", "only wanio.pace=<bytes per second>"),
        ("davs://storage.uksrc.example.org/srcnet/a?wanio.pace=0", "query string"),
        ("davs://storage.uksrc.example.org/srcnet/a?wanio.pace=1&authz=x", "query string"),
        ("davs://storage.uksrc.example.org/srcnet/a?wanio.pace=1?wanio.pace=2", "query string"),
        ("davs://storage.uksrc.example.org/srcnet/a?", "query string"),
        ("davs://storage.uksrc.example.org/srcnet/a?wanio.pace=1234567890123", "query string"),
        ("davs://storage.uksrc.example.org/srcnet/a#frag", "fragment"),
        ("root://storage.uksrc.example.org:99999//srcnet/a", "not a valid URL"),
        ("root:///srcnet/a", "no host"),
        ("root://storage.uksrc.example.org//srcnet/" + "a" * 2000, "longer than 1024"),
        ("", "a URL is required"),
        (None, "a URL is required"),
        (["root://x"], "a URL is required"),
    ],
)
def test_anything_else_is_refused_with_the_reason(url, why):
    with pytest.raises(UnregisteredStorageError) as caught:
        REGISTRY.resolve(url)
    assert why in str(caught.value)


def test_a_registry_answers_a_url_again_as_it_did_and_refuses_a_refused_one_again():
    registry = StorageRegistry(dict(REGISTRY.endpoints))
    url, bad = "root://storage.uksrc.example.org//srcnet/a", "root://storage.uksrc.example.org//elsewhere/a"
    assert registry.resolve(url) is registry.resolve(url) is UK
    for _ in range(2):
        with pytest.raises(UnregisteredStorageError, match="outside the storage endpoint"):
            registry.resolve(bad)
    assert registry == StorageRegistry(dict(REGISTRY.endpoints))  # what it remembers is not what it is


def test_an_error_quotes_a_long_url_bounded():
    with pytest.raises(UnregisteredStorageError) as caught:
        REGISTRY.resolve("root://evil.example.org//" + "x" * 900)
    assert len(str(caught.value)) < 300


def test_a_paced_url_asks_whole_bytes_per_second_and_passes_the_gate():
    url = paced("davs://storage.uksrc.example.org/srcnet/a", 2_500_000.7)
    assert url == "davs://storage.uksrc.example.org/srcnet/a?wanio.pace=2500000"
    assert REGISTRY.resolve(url).name == "UKSRC_DISK"
    # Never below what the wanio plugin accepts (64k bytes/s): it would refuse the ask.
    assert paced("root://127.0.0.1:21094//x", 0.2).endswith("?wanio.pace=65536")

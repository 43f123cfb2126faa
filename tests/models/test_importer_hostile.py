"""Topology files as an attacker (or a broken generator) writes them: each refused with an error naming the
line and field, nothing written, in bounded time and memory."""

from __future__ import annotations

import time
import tracemalloc

import pytest
from django.core.management import CommandError, call_command

from topology.models import Link, Site, StorageEndpoint
from topology.services.importer import import_topology
from topology.yamlio import TopologyFileError

from .test_importer import SMALL

pytestmark = pytest.mark.django_db


def counts() -> tuple[int, int, int]:
    return Site.objects.count(), Link.objects.count(), StorageEndpoint.objects.count()


def refused(text: str, *expected: str) -> TopologyFileError:
    before = counts()
    with pytest.raises(TopologyFileError) as caught:
        import_topology(text=text)
    assert counts() == before
    for part in expected:
        assert part in str(caught.value), str(caught.value)
    return caught.value


def test_two_sites_of_one_name_are_refused_naming_the_second():
    again = "  - {name: AUSRC, region: oceania, country: AU, latitude: -31.9, longitude: 115.8}\n"
    text = SMALL.replace("points_of_presence:\n", again + "points_of_presence:\n")
    error = refused(text, "AUSRC")
    assert error.line == 8 and "duplicate" in error.reason


def test_two_links_of_one_name_are_refused():
    text = SMALL.replace("name: campus", "name: access")
    assert refused(text, "access", "duplicate").line == 12


def test_a_link_to_a_missing_site_is_refused():
    refused(
        SMALL.replace("b: Perth, capacity: 100G, rtt_ms: 7", "b: Nowhere, capacity: 100G, rtt_ms: 7"),
        "line 11",
        "Nowhere",
    )


@pytest.mark.parametrize("value", ["-1G", "0", "-5"])
def test_a_negative_or_zero_capacity_is_refused(value):
    refused(
        SMALL.replace("capacity: 100G, rtt_ms: 7", f"capacity: {value}, rtt_ms: 7"), "line 11", "capacity"
    )


@pytest.mark.parametrize("value", ["-7", "0"])
def test_a_negative_or_zero_rtt_is_refused(value):
    refused(SMALL.replace("rtt_ms: 7", f"rtt_ms: {value}"), "line 11", "rtt_ms")


def test_an_alias_bomb_is_refused_fast_and_small():
    lines = ["version: 1", 'a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for i in range(1, 10):
        lines.append(f"a{i}: &a{i} [{', '.join(f'*a{i - 1}' for _ in range(9))}]")
    tracemalloc.start()
    started = time.monotonic()
    refused("\n".join(lines) + "\n", "alias")
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert time.monotonic() - started < 5 and peak < 50 * 2**20


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", "mapping"),
        ("- just\n- a list\n", "mapping"),
        ("version: 1\n---\nversion: 1\n", "another document"),
        ("version: 1\ntelescopes: {name: x}\n", "telescopes"),
        ("version: 1\nlinks:\n  - {name: l, a: x, b: y, capacity: fast, rtt_ms: 1}\n", "capacity"),
        ("version: 1\x00\n", "YAML"),
    ],
)
def test_wrong_shapes_are_refused(text, expected):
    refused(text, expected)


def test_hostile_names_are_refused_by_the_models():
    refused(SMALL.replace("name: AUSRC,", "name: ../../etc,"), "name")
    refused(SMALL.replace("name: AUSRC,", f"name: {'A' * 1_000_000},"), "name")


def test_the_command_refuses_non_utf8_and_a_huge_file_without_reading_it_whole(tmp_path):
    latin = tmp_path / "latin1.yaml"
    latin.write_bytes(SMALL.replace("Perth", "P\xe9rth").encode("latin-1"))
    with pytest.raises(CommandError, match="UTF-8"):
        call_command("import_topology", str(latin))
    huge = tmp_path / "huge.yaml"
    with open(huge, "wb") as fh:
        fh.write(SMALL.encode())
        fh.seek(100 * 2**20)
        fh.write(b"\n")
    tracemalloc.start()
    started = time.monotonic()
    with pytest.raises(CommandError, match="larger than"):
        call_command("import_topology", str(huge))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert time.monotonic() - started < 5 and peak < 20 * 2**20
    assert counts() == (0, 0, 0)


def test_the_api_refuses_non_utf8_and_a_huge_body(operator_client):
    latin = SMALL.replace("Perth", "P\xe9rth").encode("latin-1")
    response = operator_client.post("/api/topology/import/", latin, content_type="application/x-yaml")
    assert response.status_code == 400 and "UTF-8" in str(response.json())
    huge = SMALL.encode() + b"#" * (100 * 2**20)
    response = operator_client.post("/api/topology/import/", huge, content_type="application/x-yaml")
    assert response.status_code in (400, 413) and "larger than" in str(response.json())
    assert counts() == (0, 0, 0)

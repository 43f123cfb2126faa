"""Unit strings and line-numbered YAML."""

import pytest

from topology.yamlio import TopologyFileError, load, parse_bytes, parse_rate


@pytest.mark.parametrize(
    ("text", "bps"),
    [("100G", 100e9), ("40 Gbit/s", 40e9), ("20gbps", 20e9), ("2.5T", 2.5e12), ("800M", 800e6), (1000, 1000)],
)
def test_rates(text, bps):
    assert parse_rate(text) == bps


@pytest.mark.parametrize(
    ("text", "size"), [("2PB", 2 * 10**15), ("1GiB", 2**30), ("500 GB", 5 * 10**11), (42, 42)]
)
def test_sizes(text, size):
    assert parse_bytes(text) == size


@pytest.mark.parametrize("bad", ["fast", "100 furlongs", True, "G100"])
def test_bad_rates_say_what_is_wrong(bad):
    with pytest.raises(ValueError, match="rate"):
        parse_rate(bad)


def test_mappings_remember_their_line():
    doc = load("a: 1\nitems:\n  - {name: x}\n  - name: y\n    v: 2\n")
    assert doc.line == 1
    assert [item.line for item in doc["items"]] == [3, 4]


def test_duplicate_keys_are_an_error_with_the_line():
    with pytest.raises(TopologyFileError, match="line 3"):
        load("a: 1\nb: 2\na: 3\n")


def test_broken_yaml_names_the_line():
    with pytest.raises(TopologyFileError) as info:
        load("a: [1, 2\nb: 3\n")
    assert info.value.line is not None

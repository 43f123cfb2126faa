"""The local Rucio's [packet-marking] (localnet/rucio.py): the keys Rucio 41.5.1's FTS3 transfertool reads,
kept across calls as usercert is, dropped by a fresh instance, and a value Rucio could not use refused
naming it (Rucio itself would only log a warning at each submission and mark nothing)."""

from __future__ import annotations

import configparser
from pathlib import Path

import pytest

from localnet.processes import ServiceError
from localnet.rucio import PacketMarking, _marking_section

GOOD = PacketMarking(fetch_url="https://127.0.0.1:8443/api/scitags/", exp_name="ska-local", ca_file="/ca.pem")


def test_the_section_holds_the_keys_rucio_reads(tmp_path: Path) -> None:
    section, ca = _marking_section(tmp_path, GOOD, fresh=False)
    parsed = configparser.ConfigParser()
    parsed.read_string(section)
    assert dict(parsed["packet-marking"]) == {
        "enabled": "True",
        "fetch_url": "https://127.0.0.1:8443/api/scitags/",
        "exp_name": "ska-local",
        "fetch_interval": "3600",
        "fetch_timeout": "5",
    }
    assert ca == "/ca.pem"


def test_a_later_call_keeps_it_and_a_fresh_instance_drops_it(tmp_path: Path) -> None:
    first = _marking_section(tmp_path, GOOD, fresh=False)
    assert _marking_section(tmp_path, None, fresh=False) == first
    assert _marking_section(tmp_path, None, fresh=True) == ("", "")
    assert _marking_section(tmp_path, None, fresh=False) == ("", "")


@pytest.mark.parametrize(
    ("marking", "says"),
    [
        (
            PacketMarking(fetch_url="/srv/registry.json", exp_name="ska-local"),
            "fetch_url '/srv/registry.json' is not",
        ),
        (PacketMarking(fetch_url="", exp_name="ska-local"), "fetch_url '' must be one non-empty line"),
        (PacketMarking(fetch_url="https://x/\nenabled = False", exp_name="e"), "fetch_url .* must be one"),
        (PacketMarking(fetch_url="https://x/", exp_name=""), "exp_name '' must be one non-empty line"),
        (
            PacketMarking(fetch_url="https://x/", exp_name="e", fetch_interval=0),
            "fetch_interval and fetch_timeout",
        ),
    ],
)
def test_a_marking_rucio_could_not_use_is_refused_naming_it(
    tmp_path: Path, marking: PacketMarking, says: str
) -> None:
    with pytest.raises(ServiceError, match=f"^packet marking: {says}"):
        _marking_section(tmp_path, marking, fresh=False)
    assert not (tmp_path / "packet-marking.json").exists()

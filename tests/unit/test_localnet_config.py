"""The local network's XRootD configuration and its state bookkeeping."""

from pathlib import Path

import pytest

from localnet.__main__ import build_parser
from localnet.__main__ import main as localnet_main
from localnet.state import StateDir
from localnet.xrootd import pacing_line, render_config


def test_site_config_enables_both_tpc_protocols_and_adler32(tmp_path: Path):
    text = render_config(
        name="UKSRC_DISK",
        folder=tmp_path,
        root_port=21094,
        http_port=28001,
        ca_dir=tmp_path / "ca",
        run_dir=tmp_path / "run",
    )
    lines = text.splitlines()
    assert "xrootd.chksum adler32" in lines
    assert "xrd.port 21094" in lines
    assert "xrd.protocol XrdHttp:28001 libXrdHttp.so" in lines
    assert any(line.startswith("ofs.tpc ") for line in lines)
    assert "http.exthandler xrdtpc libXrdHttpTPC.so" in lines
    # HTTP-TPC is only loaded with TLS configured (XRootD 5.5).
    assert any(line.startswith("xrd.tls ") for line in lines)


def test_extra_lines_are_appended(tmp_path: Path):
    text = render_config(
        name="X",
        folder=tmp_path,
        root_port=1,
        http_port=2,
        ca_dir=tmp_path,
        run_dir=tmp_path,
        extra_lines=["ofs.osslib ++ /lib/libExample.so"],
    )
    assert text.splitlines()[-1] == "ofs.osslib ++ /lib/libExample.so"


def test_a_site_paces_its_readers_at_its_path_bottleneck_within_the_plugins_range():
    assert pacing_line(100e6) == "wanio.net.pacing 12500000"  # the long-haul network's 100 Mbit/s access link
    assert pacing_line(1e6) == "wanio.net.pacing 1048576"  # the plugin's floor, 1 MiB/s
    assert pacing_line(1e15) == f"wanio.net.pacing {64 * 2**30}"  # and its ceiling, 64 GiB/s


def test_ports_are_recorded_once_and_reused(tmp_path: Path):
    state = StateDir(tmp_path)
    first = state.port("redis")
    assert state.port("redis") == first
    assert state.port("postgres") != first
    assert StateDir(tmp_path).read_runtime()["ports"] == {"redis": first, "postgres": state.port("postgres")}


def test_a_new_port_is_none_that_another_state_beside_it_recorded(tmp_path: Path, monkeypatch):
    """A long-haul demo's site recorded a port it listens on in its own namespace; a state beside it that
    asked the kernel for a free loopback port got that number, and the demo's stop check found it open
    (CI of stop 46). Now the states of one root never share a port number."""
    from localnet import state as state_module

    other = StateDir(tmp_path / "longhaul")
    other.path.mkdir()
    other.write_runtime({"ports": {"xrootd:JPSRC_DISK:root": 40001, "xrootd:JPSRC_DISK:http": 40002}})
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "runtime.json").write_text("{not json")
    offered = iter([40002, 40001, 40003])  # what the kernel would hand out, in order
    asked: list[set[int]] = []

    def free_port(avoid: set[int] | None = None) -> int:
        asked.append(set(avoid or ()))
        return next(p for p in offered if p not in (avoid or set()))

    monkeypatch.setattr(state_module, "free_port", free_port)
    mine = StateDir(tmp_path / "rucio")
    mine.path.mkdir()
    assert mine.port("fireflies:metrics") == 40003
    assert asked == [{40001, 40002}]
    assert state_module.ports_recorded_beside(other.path) == {40003}  # and the other way round


def test_sites_load_the_plugin_unless_switched_off(tmp_path: Path, monkeypatch):
    from localnet import xrootd

    state = StateDir(tmp_path)
    build = tmp_path / "build"
    build.mkdir()
    (build / xrootd.PLUGIN_LIBRARY).write_bytes(b"\x7fELF")
    (build / xrootd.PLUGIN_TPC_PROGRAM).write_bytes(b"\x7fELF")
    (build / xrootd.FAST_OPEN_PRELOAD).write_bytes(b"\x7fELF")
    monkeypatch.setattr(xrootd, "PLUGIN_BUILD", build)
    monkeypatch.delenv("SRCNET_XROOTD_PLUGIN", raising=False)
    lines = xrootd.plugin_lines(state)
    assert lines[0].startswith("ofs.osslib ++ ") and lines[0].endswith("/xrootd-plugin/libXrdWanIO.so")
    assert lines[1].startswith("xrootd.fslib ++ ") and lines[1].endswith("/xrootd-plugin/libXrdWanIO.so")
    assert "xrdcp-wan --server" in lines[2] and "--rate" not in lines[2]
    # With the site's path rate the pull sizes its reads in flight from it (10 Gbit/s: 1 250 000 000 B/s).
    assert xrootd.plugin_lines(state, 10e9)[2].endswith(" --rate 1250000000")
    # What lands is written past the page cache, as the xrootd_site role configures it.
    assert "wanio.wb.odirect on" in lines
    assert (tmp_path / "xrootd-plugin" / xrootd.PLUGIN_LIBRARY).exists()
    # The server is started with the Fast Open preload, from the state folder's copy.
    preload = tmp_path / "xrootd-plugin" / xrootd.FAST_OPEN_PRELOAD
    assert xrootd.plugin_environment(state) == {"LD_PRELOAD": str(preload)} and preload.exists()
    monkeypatch.setenv("SRCNET_XROOTD_PLUGIN", "off")
    assert xrootd.plugin_lines(state) == []
    assert xrootd.plugin_environment(state) == {}


def test_a_site_asked_for_the_plugin_that_is_not_built_fails_clearly(tmp_path: Path, monkeypatch):
    from localnet import xrootd
    from localnet.processes import ServiceError

    monkeypatch.setattr(xrootd, "PLUGIN_BUILD", tmp_path / "nothing-built-here")
    monkeypatch.delenv("SRCNET_XROOTD_PLUGIN", raising=False)
    with pytest.raises(ServiceError, match=r"not built.*SRCNET_XROOTD_PLUGIN=off"):
        xrootd.plugin_lines(StateDir(tmp_path))
    monkeypatch.setenv("SRCNET_XROOTD_PLUGIN", "off")
    assert xrootd.plugin_lines(StateDir(tmp_path)) == []


@pytest.mark.parametrize(
    ("environment", "argv", "once", "fail_one"),
    [
        ({}, [], False, False),
        ({"SRCNET_DEMO_ONCE": "1"}, [], True, False),
        ({"SRCNET_DEMO_ONCE": "0"}, [], False, False),
        ({}, ["--once"], True, False),
        ({"SRCNET_DEMO_FAIL_ONE": "1"}, [], False, True),
        ({}, ["--once", "--fail-one"], True, True),
    ],
)
def test_demo_modes_come_from_flags_or_the_environment(monkeypatch, environment, argv, once, fail_one):
    for name in ("SRCNET_DEMO_ONCE", "SRCNET_DEMO_FAIL_ONE"):
        monkeypatch.delenv(name, raising=False)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    args = build_parser().parse_args(["demo", *argv])
    assert (args.once, args.fail_one) == (once, fail_one)


def test_demo_fail_one_is_refused_with_rucio(capsys):
    with pytest.raises(SystemExit) as info:
        localnet_main(["demo", "--rucio", "--fail-one"])
    assert info.value.code == 2
    assert "--fail-one works with the embedded transfer path only" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("script", "said"), [("exit 3", "exit status 3"), ("kill -9 $$", "killed by signal 9")]
)
def test_a_service_that_exits_before_opening_its_port_says_how_it_ended(tmp_path: Path, script, said):
    from localnet.processes import ServiceError, start_daemon, wait_for_port
    from localnet.state import free_port

    state = StateDir(tmp_path)
    pid = start_daemon(state, "short-lived", ["sh", "-c", script])
    with pytest.raises(ServiceError, match=f"short-lived exited before opening port \\d+, {said}"):
        wait_for_port(free_port(), pid=pid, what="short-lived", timeout=10)

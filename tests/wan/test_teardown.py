"""Clean teardown: no namespace, process, TUN or state left behind, including
after failures inside the `with` block, KeyboardInterrupt, SIGTERM of the
owning process, a failure half-way through bring-up, and the CLI."""

import contextlib
import json
import os
import signal
import subprocess
import sys
import time

import pytest
import wanpath
from wanpath import emulated_path

from tests.wan.conftest import WAN


def _gone(path, extra_pids=()):
    names = set(wanpath.list_namespaces())
    assert not names & {path.ns_a, path.ns_r, path.ns_b}, names
    for pid in (path.emulator_pid, *extra_pids):
        assert not os.path.exists(f"/proc/{pid}"), f"pid {pid} still running"
    assert not os.path.exists(path.state_dir)


def test_normal_exit_removes_everything():
    with emulated_path(rtt_ms=10, rate_mbit=100) as path:
        assert {path.ns_a, path.ns_r, path.ns_b} <= set(wanpath.list_namespaces())
        tuns = subprocess.run(
            ["ip", "-n", path.ns_r, "-o", "link", "show", "type", "tun"],
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout
        assert "tab" in tuns and "tba" in tuns
        sleeper = path.popen_b(["sleep", "300"])
    _gone(path, [sleeper.pid])
    sleeper.wait(5)
    # The final counters were collected before the emulator was stopped.
    assert path.stats()["final"] is True


def test_exception_inside_block_tears_down_and_propagates():
    procs = []
    with pytest.raises(RuntimeError, match="boom"), emulated_path(rtt_ms=10, rate_mbit=100) as path:
        procs.append(path.popen_a(["sleep", "300"]))
        procs.append(path.popen_b(["sleep", "300"]))
        raise RuntimeError("boom")
    _gone(path, [p.pid for p in procs])


def test_keyboard_interrupt_tears_down():
    with pytest.raises(KeyboardInterrupt), emulated_path(rtt_ms=10, rate_mbit=100) as path:
        raise KeyboardInterrupt
    _gone(path)


def test_sigterm_to_owner_process_tears_down(tmp_path):
    # A separate Python process owns the path and is killed with SIGTERM
    # while inside the block: the context manager must still clean up.
    # The owner writes the path's description whole (a rename), so the test
    # never reads a file created but not yet written; its output goes to a
    # file that every failure below quotes.
    info = tmp_path / "path.json"
    code = (
        f"import os, sys, json, time; sys.path.insert(0, {WAN!r})\n"
        "from wanpath import emulated_path\n"
        "with emulated_path(rtt_ms=10, rate_mbit=100) as p:\n"
        "    p.popen_b(['sleep', '300'])\n"
        f"    open({str(info)!r} + '.part', 'w').write(json.dumps(p.describe()))\n"
        f"    os.replace({str(info)!r} + '.part', {str(info)!r})\n"
        "    time.sleep(120)\n"
    )
    log_path = tmp_path / "owner.log"
    d = None
    killed = False
    with open(log_path, "w") as log:
        owner = subprocess.Popen([sys.executable, "-c", code], stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 40
        while not info.exists():
            assert owner.poll() is None, f"owner died during bring-up: {log_path.read_text()}"
            assert time.monotonic() < deadline, f"no path after 40 s: {log_path.read_text()}"
            time.sleep(0.05)
        d = json.loads(info.read_text())
        owner.send_signal(signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            owner.wait(40)
    finally:
        if owner.poll() is None:
            killed = True
            owner.kill()
            owner.wait()
            if d is not None:  # killed before its own teardown ended: remove what it left, then fail
                d["config"] = wanpath.PathConfig(**d["config"])
                wanpath.tear_down(wanpath.EmulatedPath(**d))
    said = log_path.read_text()
    assert not killed, f"the owner was still running 40 s after SIGTERM: {said}"
    names = set(wanpath.list_namespaces())
    assert not names & {d["ns_a"], d["ns_r"], d["ns_b"]}, (names, said)
    assert not os.path.exists(f"/proc/{d['emulator_pid']}"), said
    assert not os.path.exists(d["state_dir"]), said


def test_failed_bring_up_removes_what_it_created():
    name = f"{wanpath.PREFIX}{os.getpid()}-clash"
    # Someone else's namespace with the router's name: bring-up fails after
    # creating <name>-a, must remove that, and must not delete the other one.
    subprocess.run(["ip", "netns", "add", f"{name}-r"], check=True, timeout=10)
    try:
        with pytest.raises(wanpath.PathError):
            wanpath.bring_up(wanpath.PathConfig(rtt_ms=10, rate_mbit=100), name=name)
        names = set(wanpath.list_namespaces())
        assert f"{name}-a" not in names and f"{name}-b" not in names
        assert f"{name}-r" in names
        assert not os.path.exists(os.path.join(wanpath.STATE_DIR, name))
    finally:
        subprocess.run(["ip", "netns", "del", f"{name}-r"], timeout=10)


def test_cli_up_status_down():
    cli = [sys.executable, os.path.join(WAN, "wanpath.py")]
    name = f"{os.getpid()}-cli"
    up = subprocess.run(
        [*cli, "up", "--name", name, "--rtt-ms", "20", "--rate-mbit", "100"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    try:
        assert up.returncode == 0, up.stderr
        d = json.loads(up.stdout)
        assert d["name"] == wanpath.PREFIX + name
        st = subprocess.run([*cli, "status", name], capture_output=True, text=True, timeout=30)
        s = json.loads(st.stdout)[d["name"]]
        assert s["emulator_alive"] is True
        assert s["stats"]["ab"]["delay_ns"] == wanpath.load(name).config.one_way_delay_us() * 1000
    finally:
        down = subprocess.run([*cli, "down", name], capture_output=True, text=True, timeout=60)
    assert down.returncode == 0, down.stderr
    names = set(wanpath.list_namespaces())
    assert not names & {d["ns_a"], d["ns_r"], d["ns_b"]}
    assert not os.path.exists(f"/proc/{d['emulator_pid']}")

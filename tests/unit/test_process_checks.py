"""localnet.processes reads /proc of processes that may end at any moment: an end between two of its steps
means "gone", never an exception (a demo's teardown once failed on it, stopping its token issuer)."""

import subprocess

from localnet import processes


def _stale_proc_file(name: str):
    """A /proc file opened while its process lived, then the process killed and reaped: reading it now
    fails with ESRCH, as when a process ends between is_alive's open() and its read()."""
    child = subprocess.Popen(["sleep", "30"])
    handle = open(f"/proc/{child.pid}/{name}")  # noqa: SIM115 - read after the process is gone
    child.kill()
    child.wait()
    return handle


def test_a_process_reaped_between_the_open_and_the_read_is_not_alive(monkeypatch):
    stale = _stale_proc_file("stat")
    living = subprocess.Popen(["sleep", "30"])  # passes the signal check that comes before the read
    try:
        monkeypatch.setattr(processes, "open", lambda *_a, **_k: stale, raising=False)
        assert processes.is_alive(living.pid) is False
    finally:
        living.kill()
        living.wait()


def test_the_account_of_a_process_reaped_mid_read_is_empty(monkeypatch):
    stale = _stale_proc_file("status")
    monkeypatch.setattr(processes, "open", lambda *_a, **_k: stale, raising=False)
    assert processes.account_of(1) == ""


def test_a_living_process_is_alive_and_a_reaped_one_is_not():
    child = subprocess.Popen(["sleep", "30"])
    assert processes.is_alive(child.pid)
    child.kill()
    child.wait()
    assert not processes.is_alive(child.pid)

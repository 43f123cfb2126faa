"""A local site's xrootd logs to its stderr (log/xrootd-<name>.out), never through ``-l``: XRootD 5.5 starts a
log-rotation thread as soon as it opens a log file, and that thread's first localtime_r reads the
environment while the main thread's putenv calls reallocate it (two start-up segfaults in getenv in one
CI run). A server that does not start is reported with the end of that log."""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from localnet.fireflies import stop_collector
from localnet.processes import ServiceError, read_pid
from localnet.state import StateDir
from localnet.xrootd import SiteTokens, ensure_site, stop_site

pytestmark = pytest.mark.integration

# What these sites trust: an issuer that nobody runs, so they serve nobody (these tests start them, no more).
NOBODYS = SiteTokens(
    issuers=("https://issuer.invalid/realms/srcnet",), audience="nobody", base_path="/srcnet"
)


@pytest.fixture
def state() -> Iterator[StateDir]:
    folder = Path("/var/tmp") / f"srcnet-site-log-{uuid.uuid4().hex[:8]}"
    folder.mkdir(mode=0o755)
    state = StateDir(folder)
    try:
        yield state
    finally:
        stop_site(state, "UKSRC_DISK")
        stop_collector(state)  # the firefly collector its first site started (localnet/fireflies.py)
        shutil.rmtree(folder, ignore_errors=True)


def test_a_site_logs_to_its_stderr_file_without_a_log_rotation_thread(state: StateDir) -> None:
    ensure_site(state, "UKSRC_DISK", tokens=NOBODYS)
    pid = read_pid(state, "xrootd-UKSRC_DISK")
    argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    assert b"xrootd" in argv[0] and b"-l" not in argv, argv
    log = (state.sub("log") / "xrootd-UKSRC_DISK.out").read_text(errors="replace")
    assert "xrootd UKSRC_DISK@" in log and "initialization completed" in log


def test_a_site_that_does_not_start_is_reported_with_its_log(state: StateDir) -> None:
    with pytest.raises(
        ServiceError, match=r"xrootd UKSRC_DISK exited before opening port .*its log ends: .*"
    ):
        ensure_site(state, "UKSRC_DISK", extra_lines=["xrd.sched mint -1"], tokens=NOBODYS)

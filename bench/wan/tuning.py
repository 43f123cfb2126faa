"""TCP tuning profiles applied inside the end-host namespaces of a path.

Only per-namespace sysctls are used (tcp_rmem/tcp_wmem, tcp_no_metrics_save,
tcp_slow_start_after_idle): net.core.*mem_max and net.ipv4.tcp_mem are
host-global and read-only from a child namespace, so they are never touched.
Congestion control is set per route (``ip route ... congctl``) because the
per-namespace default only accepts algorithms in the host's
tcp_allowed_congestion_control list.
"""

import contextlib
from pathlib import Path

MIB = 1 << 20
GIB = 1 << 30

PROFILES = ("dtn", "default")


def buffer_max(bdp_bytes: int, queue_bytes: int) -> int:
    """Autotuning ceiling for one socket.

    A sender must keep BDP + queue in flight and the receiver advertises
    roughly half its buffer, so 2x(BDP+queue) is the minimum; 3x leaves
    margin.  Capped at 1 GiB (what the reference set-up used at 5 Gbit/s x
    300 ms) and floored at 16 MiB so short paths are not starved.
    """
    want = 3 * (bdp_bytes + queue_bytes)
    return max(16 * MIB, min(GIB, want))


def sysctls(profile: str, bdp_bytes: int, queue_bytes: int) -> dict:
    """sysctl name -> value for an end-host namespace."""
    if profile == "default":
        # Whatever a fresh namespace inherits from the host: the untuned
        # baseline (tcp_wmem max is 4 MiB here, ~90 Mbit/s at 300 ms).
        return {}
    if profile == "dtn":
        top = buffer_max(bdp_bytes, queue_bytes)
        return {
            "net.ipv4.tcp_rmem": f"4096 131072 {top}",
            "net.ipv4.tcp_wmem": f"4096 16384 {top}",
            # No ssthresh/cwnd caching between runs: each transfer starts
            # from the same state, which keeps benchmark cells comparable.
            "net.ipv4.tcp_no_metrics_save": "1",
            # A DTN reusing a connection between files should not fall back
            # to slow start after an idle gap of one RTO.
            "net.ipv4.tcp_slow_start_after_idle": "0",
            # TCP Fast Open as client, as server, and on listeners that do not ask for it (XRootD's):
            # a copy's new connection to a source it has pulled from before sends its first request in
            # the SYN (xrootd-plugins/src/tpc/FastOpen.hh), as the dtn_tuning role sets it.
            "net.ipv4.tcp_fastopen": "1027",
        }
    raise ValueError(f"unknown tuning profile {profile!r}; known: {PROFILES}")


# CUBIC's HyStart: a kernel-wide module parameter, not a per-namespace sysctl, so every CUBIC flow on
# the machine sees it. It decides how far slow start gets on a long path (xrootd-plugins/README.md,
# "A sending site on a long path").
HYSTART = Path("/sys/module/tcp_cubic/parameters/hystart")


def cubic_hystart_enabled() -> bool | None:
    """Whether HyStart is on in this host's kernel (None: no CUBIC module parameters here)."""
    try:
        return HYSTART.read_text().strip() != "0"
    except OSError:
        return None


@contextlib.contextmanager
def cubic_hystart(enabled: bool | None):
    """CUBIC's HyStart on or off for the run, restored afterwards; None leaves it as it is.

    HyStart ends slow start when it sees the RTT rise by a few milliseconds (at most 16); on an
    emulated 300 ms path a scheduling hiccup is enough, and CUBIC then needs about 40 s of cubic
    growth to reach a 37.5 MB window."""
    if enabled is None:
        yield
        return
    before = HYSTART.read_text().strip()
    HYSTART.write_text("1" if enabled else "0")
    try:
        yield
    finally:
        HYSTART.write_text(before)

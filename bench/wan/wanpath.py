#!/usr/bin/env python3
"""Emulated long-haul network path between two network namespaces.

Layout (all inside namespaces this module creates; nothing touches the host's
own interfaces)::

    <name>-a                <name>-r (router)                 <name>-b
    wan0 10.250.1.2 --veth-- ra 10.250.1.1   rb 10.250.2.1 --veth-- wan0 10.250.2.2
    (ipv6=True: also fd00:250:1::2    fd00:250:1::1  fd00:250:2::1    fd00:250:2::2)
                              |  policy routing  |
                              tab (A->B)   tba (B->A)   TUN devices
                                  \\          /
                                   wanemu (userspace: delay, rate, queue, loss)

Use as a context manager::

    with emulated_path(rtt_ms=300, rate_mbit=1000) as path:
        srv = path.popen_b(["iperf3", "-s", "-1"])
        path.run_a(["iperf3", "-c", path.ip_b, "-t", "10"], timeout=30)

or from the shell: ``python3 bench/wan/wanpath.py up|down|status ...``.
Requires root.  Standard library only.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field

try:  # imported as bench.wan.wanpath
    from . import tuning
except ImportError:  # run as a script or with bench/wan on sys.path
    import tuning

HERE = os.path.dirname(os.path.abspath(__file__))
EMULATOR = os.path.join(HERE, "build", "wanemu")
STATE_DIR = "/run/srcnet-wan"
PREFIX = "srcnet-wan-"

IP_A, IP_RA, IP_RB, IP_B = "10.250.1.2", "10.250.1.1", "10.250.2.1", "10.250.2.2"
NET_A, NET_B, NET_ALL = "10.250.1.0/24", "10.250.2.0/24", "10.250.0.0/16"
# IPv6 (PathConfig.ipv6): unique local addresses, routed through the emulator as IPv4 is.
IP6_A, IP6_RA, IP6_RB, IP6_B = "fd00:250:1::2", "fd00:250:1::1", "fd00:250:2::1", "fd00:250:2::2"
NET6_A, NET6_B, NET6_ALL = "fd00:250:1::/64", "fd00:250:2::/64", "fd00:250::/32"
CONGESTION = ("cubic", "bbr", "reno")

# Fixed round-trip cost of the emulated path itself (two veth hops, two TUN
# crossings, emulator timer wake-ups, softirq scheduling, end-host stacks):
# 0.4-0.8 ms on the 2-vCPU development VM depending on what else runs.  It is
# subtracted from the emulator's delay so the RTT the end hosts see matches
# rtt_ms.  overhead_ms=None (default) measures it at bring-up with a short
# calibration (~1.5 s) at a 10 ms setting; a number fixes it
# (SRCNET_WAN_OVERHEAD_MS sets that number for every path).  Not a smaller
# setting: below ~2 ms the idle vCPU is still polling and wakes faster, which
# underestimates the cost at real WAN delays.
_env_overhead = os.environ.get("SRCNET_WAN_OVERHEAD_MS")
DEFAULT_OVERHEAD_MS = float(_env_overhead) if _env_overhead else None
CALIBRATION_RTT_MS = 10.0
QUIET_SPREAD_MS = 1.0


class PathError(RuntimeError):
    """Bringing a path up or down failed."""


@dataclass
class PathConfig:
    rtt_ms: float = 300.0
    rate_mbit: float = 1000.0  # bottleneck per direction, IP-layer Mbit/s; 0 = none
    loss: float = 0.0  # Bernoulli loss per segment, each direction
    mtu: int = 1500
    tuning: str = "dtn"  # see tuning.PROFILES
    cc: str | None = "cubic"  # congestion control on the end hosts' routes
    queue_bytes: int | None = None  # bottleneck buffer; None = 1 BDP
    seed: int = 1
    # SCHED_FIFO priority for the emulator (0 = normal): the box is shared,
    # and a CFS wake-up behind a busy neighbour adds milliseconds of delay.
    rt_prio: int = 10
    overhead_ms: float | None = DEFAULT_OVERHEAD_MS  # fixed RTT cost; None = measure
    # IPv6 beside IPv4 (ip6_a, ip6_b), through the same emulator. The TUN devices offer no IPv6
    # segmentation offload, so the kernel hands the emulator MTU-sized IPv6 packets. With the "dtn"
    # tuning both hosts reflect flow labels (net.ipv6.flowlabel_reflect=1) as the dtn_tuning role sets it.
    ipv6: bool = False
    # One CPU for the emulator and for measure_rtt's probe and echo (None: the scheduler places them).
    # On a VM a wake-up that crosses CPUs costs a variable inter-processor interrupt: measured
    # 2026-11-29 (docs/benchmarks/idle-rtt.md), the fixed cost's spread over 18 probe runs
    # of six bring-ups at 7.5 ms was 0.061 ms free and 0.028 ms with all three on CPU 0. For idle-RTT
    # fidelity only: a copy's end hosts and the emulator on one CPU would share its cycles.
    cpu: int | None = None
    # Record up to this many TCP packets, as they enter the link, in the path's packet trace (``trace_file``;
    # packet_trace.py reads it); 0: no trace.
    trace_packets: int = 0

    def one_way_delay_us(self, rtt_ms: float | None = None) -> int:
        """Delay the emulator adds per direction so the end-to-end RTT is rtt_ms."""
        rtt = self.rtt_ms if rtt_ms is None else rtt_ms
        return max(0, round((rtt - (self.overhead_ms or 0.0)) * 1000 / 2))

    def bdp_bytes(self) -> int:
        return int(self.rate_mbit * 1e6 / 8 * self.rtt_ms / 1e3)

    def queue(self) -> int:
        """Bottleneck buffer in bytes: 1 BDP by default, but never less than
        one 64 KiB TSO burst (a smaller drop-tail buffer would cut every
        super-packet the sender emits)."""
        if self.queue_bytes is not None:
            return int(self.queue_bytes)
        return max(self.bdp_bytes(), 65536)

    def validate(self) -> None:
        if self.rtt_ms < 0 or self.rate_mbit < 0 or not 0 <= self.loss <= 1:
            raise ValueError("rtt_ms, rate_mbit must be >= 0 and loss in [0, 1]")
        if not 576 <= self.mtu <= 65000:
            raise ValueError("mtu must be in 576..65000")
        if self.tuning not in tuning.PROFILES:
            raise ValueError(f"tuning must be one of {tuning.PROFILES}")
        if self.cc is not None and self.cc not in CONGESTION:
            raise ValueError(f"cc must be one of {CONGESTION} or None")
        if self.trace_packets < 0:
            raise ValueError("trace_packets must be >= 0")


AVAILABLE_CONGESTION = "/proc/sys/net/ipv4/tcp_available_congestion_control"


def require_congestion_control(cc: str | None) -> None:
    """Make sure the kernel has ``cc`` before a route asks for it: load its module (tcp_<cc>, as Debian's
    kernel builds BBR) if it is missing, and say which one and how to choose another if that fails."""
    if cc is None or cc in _read(AVAILABLE_CONGESTION).split():
        return
    subprocess.run(["modprobe", f"tcp_{cc}"], capture_output=True, timeout=15, check=False)
    available = _read(AVAILABLE_CONGESTION).strip()
    if cc not in available.split():
        raise PathError(
            f"congestion control {cc!r} is not available in this kernel ({AVAILABLE_CONGESTION}: "
            f"{available}) and modprobe tcp_{cc} did not load it"
        )


def _read(path: str) -> str:
    with open(path) as fh:
        return fh.read()


@dataclass
class EmulatedPath:
    """A live path.  Attributes are plain data so the CLI can persist them."""

    name: str
    config: PathConfig
    ns_a: str = ""
    ns_r: str = ""
    ns_b: str = ""
    ip_a: str = IP_A
    ip_b: str = IP_B
    ip6_a: str = ""  # IPv6 addresses of the ends when the path has IPv6 (config.ipv6)
    ip6_b: str = ""
    emulator_pid: int = 0
    owner_pid: int = 0
    state_dir: str = ""
    created: list = field(default_factory=list)  # namespaces this path made
    final_stats: dict | None = field(default=None, repr=False)
    # How busy other work kept the CPUs while the fixed cost was calibrated (CpuLoad), if it was.
    calibration_cpu_busy: float | None = None

    # -- running commands at either end ------------------------------------
    def ns(self, side: str) -> str:
        return {"a": self.ns_a, "b": self.ns_b, "r": self.ns_r}[side]

    def cmd(self, side: str, argv: list[str]) -> list[str]:
        """argv wrapped to execute inside namespace `side` ('a', 'b' or 'r')."""
        return ["ip", "netns", "exec", self.ns(side), *map(str, argv)]

    def run_a(self, argv, **kw) -> subprocess.CompletedProcess:
        """subprocess.run inside end A; keyword arguments as for subprocess.run."""
        return subprocess.run(self.cmd("a", argv), **kw)

    def run_b(self, argv, **kw) -> subprocess.CompletedProcess:
        return subprocess.run(self.cmd("b", argv), **kw)

    def popen_a(self, argv, **kw) -> subprocess.Popen:
        """subprocess.Popen inside end A (stopped at teardown if still running)."""
        return subprocess.Popen(self.cmd("a", argv), **kw)

    def popen_b(self, argv, **kw) -> subprocess.Popen:
        return subprocess.Popen(self.cmd("b", argv), **kw)

    # -- emulator counters --------------------------------------------------
    @property
    def stats_file(self) -> str:
        return os.path.join(self.state_dir, "emulator-stats.json")

    @property
    def trace_file(self) -> str:
        """The emulator's per-packet trace (with ``trace_packets``), rewritten each time it starts."""
        return os.path.join(self.state_dir, "packets.trace")

    def stats(self, fresh: bool = True) -> dict:
        """Emulator counters.  The emulator rewrites its stats file every
        200 ms; with fresh=True wait for a version written after this call,
        so counters include everything that happened before it."""
        if self.final_stats is not None:
            return self.final_stats
        t0 = time.time()
        deadline = time.monotonic() + 2
        while True:
            with open(self.stats_file) as f:
                d = json.load(f)
            if not fresh or d["time"] >= t0 or time.monotonic() > deadline:
                return d
            time.sleep(0.05)

    def describe(self) -> dict:
        d = asdict(self)
        d.pop("final_stats")
        return d

    def down(self) -> None:
        tear_down(self)


# -- helpers ---------------------------------------------------------------


def _sh(argv: list[str], timeout: float = 15) -> str:
    p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        raise PathError(f"{' '.join(argv)} failed ({p.returncode}): {p.stderr.strip()}")
    return p.stdout


def _nsexec(ns: str, *argv: str) -> str:
    return _sh(["ip", "netns", "exec", ns, *argv])


def _sysctl(ns: str, key: str, value: str) -> None:
    _nsexec(ns, "sysctl", "-q", "-w", f"{key}={value}")


def list_namespaces() -> list[str]:
    out = _sh(["ip", "netns", "list"])
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def _pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def build_emulator() -> str:
    """Run build.sh (a no-op when up to date); returns the binary's path."""
    _sh([os.path.join(HERE, "build.sh")], timeout=120)
    return EMULATOR


def _unique_name() -> str:
    taken = set(list_namespaces())
    base = f"{PREFIX}{os.getpid()}"
    for i in range(1000):
        name = base if i == 0 else f"{base}-{i}"
        if not taken & {f"{name}-{s}" for s in "arb"} and not os.path.exists(os.path.join(STATE_DIR, name)):
            return name
    raise PathError("no free path name")


# -- bring up / tear down ---------------------------------------------------


def bring_up(config: PathConfig | None = None, name: str | None = None, **kw) -> EmulatedPath:
    """Create namespaces, links, routes and tuning, start the emulator.

    On any failure everything created so far is removed before the
    exception propagates.  The caller owns the result: call tear_down().
    """
    cfg = config or PathConfig(**kw)
    cfg.validate()
    if os.geteuid() != 0:
        raise PathError("root is required (network namespaces, TUN, sysctls)")
    require_congestion_control(cfg.cc)
    binary = build_emulator()
    name = name or _unique_name()
    if not name.startswith(PREFIX):
        name = PREFIX + name
    path = EmulatedPath(
        name=name,
        config=cfg,
        ns_a=f"{name}-a",
        ns_r=f"{name}-r",
        ns_b=f"{name}-b",
        ip6_a=IP6_A if cfg.ipv6 else "",
        ip6_b=IP6_B if cfg.ipv6 else "",
        owner_pid=os.getpid(),
        state_dir=os.path.join(STATE_DIR, name),
    )
    os.makedirs(STATE_DIR, exist_ok=True)
    os.mkdir(path.state_dir)  # fails if the name is taken: nothing to undo yet
    try:
        _save(path)
        _make_topology(path)
        if cfg.overhead_ms is None:
            _calibrate(path, binary)
        _start_emulator(path, binary)
        _route(path)
        _save(path)
    except BaseException:
        tear_down(path)
        raise
    return path


def _make_topology(p: EmulatedPath) -> None:
    cfg = p.config
    for ns in (p.ns_a, p.ns_r, p.ns_b):
        _sh(["ip", "netns", "add", ns])
        p.created.append(ns)  # teardown deletes only what we created
        _save(p)
        # IPv4 only unless asked: the emulator splits TCPv4 super-packets; no IPv6 traffic
        # (router solicitations etc.) should wander through the path. With IPv6, no router
        # advertisements are listened to: the routes are the ones set here.
        disable = "0" if cfg.ipv6 else "1"
        _sysctl(ns, "net.ipv6.conf.all.disable_ipv6", disable)
        _sysctl(ns, "net.ipv6.conf.default.disable_ipv6", disable)
        if cfg.ipv6:
            _sysctl(ns, "net.ipv6.conf.all.accept_ra", "0")
            _sysctl(ns, "net.ipv6.conf.default.accept_ra", "0")
        _sh(["ip", "-n", ns, "link", "set", "lo", "up"])
    for end, rif, ip, rip in ((p.ns_a, "ra", IP_A, IP_RA), (p.ns_b, "rb", IP_B, IP_RB)):
        _sh(
            [
                "ip",
                "-n",
                end,
                "link",
                "add",
                "wan0",
                "mtu",
                str(cfg.mtu),
                "type",
                "veth",
                "peer",
                "name",
                rif,
                "mtu",
                str(cfg.mtu),
                "netns",
                p.ns_r,
            ]
        )
        _sh(["ip", "-n", end, "addr", "add", f"{ip}/24", "dev", "wan0"])
        _sh(["ip", "-n", end, "link", "set", "wan0", "up"])
        _sh(["ip", "-n", p.ns_r, "addr", "add", f"{rip}/24", "dev", rif])
        _sh(["ip", "-n", p.ns_r, "link", "set", rif, "up"])
    if cfg.ipv6:  # nodad: usable at once, no duplicate detection on a link of two
        for ns, dev, ip in ((p.ns_a, "wan0", IP6_A), (p.ns_r, "ra", IP6_RA), (p.ns_r, "rb", IP6_RB),
                            (p.ns_b, "wan0", IP6_B)):  # fmt: skip
            _sh(["ip", "-n", ns, "-6", "addr", "add", f"{ip}/64", "dev", dev, "nodad"])
    for tun in ("tab", "tba"):
        _sh(["ip", "-n", p.ns_r, "tuntap", "add", "dev", tun, "mode", "tun", "vnet_hdr"])
        # A long TUN queue absorbs the bursts of the sender between two
        # emulator reads; drops here would be outside the model.
        _sh(["ip", "-n", p.ns_r, "link", "set", tun, "mtu", str(cfg.mtu), "txqueuelen", "10000", "up"])
    _sysctl(p.ns_r, "net.ipv4.ip_forward", "1")
    if cfg.ipv6:
        _sysctl(p.ns_r, "net.ipv6.conf.all.forwarding", "1")
    for conf in ("all", "default", "ra", "rb", "tab", "tba"):
        _sysctl(p.ns_r, f"net.ipv4.conf.{conf}.rp_filter", "0")
    sysctls = tuning.sysctls(cfg.tuning, cfg.bdp_bytes(), cfg.queue())
    if cfg.ipv6 and cfg.tuning == "dtn":
        # As the dtn_tuning role: a host answers a connection with the flow label its SYN carried, so a
        # source's data packets carry the label the puller's connection was given (docs/network.md).
        sysctls = {**sysctls, "net.ipv6.flowlabel_reflect": "1"}
    for end in (p.ns_a, p.ns_b):
        for key, value in sysctls.items():
            _sysctl(end, key, value)


def _calibrate(p: EmulatedPath, binary: str) -> None:
    """Measure the path's fixed RTT cost now, on this machine, under its
    current load: run the emulator at a CALIBRATION_RTT_MS setting without
    compensation, take the median of UDP probes, then stop it again."""
    p.config.overhead_ms = 0.0
    # Calibrate at the target RTT for short paths (where 2 % is 0.15 ms), at
    # CALIBRATION_RTT_MS otherwise (the cost does not grow with the delay).
    cal_rtt = min(p.config.rtt_ms, CALIBRATION_RTT_MS)
    _start_emulator(p, binary, rtt_ms=cal_rtt, rate_mbit=0)
    _route(p)
    try:
        # Same probe cadence as measure_rtt callers use for idle RTT.  A busy
        # neighbour shows up as spread between the 10th and 90th percentile:
        # keep the quietest of up to three measurements.
        r = None
        load = CpuLoad().start()
        for _ in range(3):
            m = measure_rtt(p, count=50, interval_s=0.02)
            if m["received"] and (r is None or _spread(m) < _spread(r)):
                r = m
            if r is not None and _spread(r) <= QUIET_SPREAD_MS:
                break
        p.calibration_cpu_busy = round(load.stop(), 3)
    finally:
        _stop_pid(p.emulator_pid)
        p.emulator_pid = 0
        _unroute(p)
    if r is None:
        raise PathError("calibration: no RTT probe came back")
    # Clamp: above 1 ms the excess is a neighbour's load at that moment, not
    # a property of the path (0.4-0.8 ms measured on the idle-ish VM).
    p.config.overhead_ms = round(min(1.0, max(0.0, r["median_ms"] - cal_rtt)), 3)
    _save(p)


def fixed_cost_now(p: EmulatedPath) -> float:
    """The path's fixed RTT cost measured again now, as bring-up measured it; the path is left as it was
    (the emulator restarted, compensated by the bring-up figure). A caller that needs the cost not to have
    moved while it measured (the machine's load changed under it) compares this with
    ``p.config.overhead_ms``."""
    binary = EMULATOR  # built when the path was brought up
    at_bring_up = p.config.overhead_ms
    _stop_pid(p.emulator_pid)
    p.emulator_pid = 0
    _unroute(p)
    try:
        _calibrate(p, binary)
        now = float(p.config.overhead_ms or 0.0)
    finally:
        p.config.overhead_ms = at_bring_up
        _start_emulator(p, binary)
        _route(p)
        _save(p)
    return now


def retune(p: EmulatedPath, rtt_ms: float) -> None:
    """Run the path at another RTT from now on: the emulator restarted with the new delay (compensated by the
    bring-up's fixed cost), everything else as it was. Packets in flight at that moment are lost, so retune
    between copies, not during one."""
    if rtt_ms < 0:
        raise ValueError("rtt_ms must be >= 0")
    _stop_pid(p.emulator_pid)
    p.emulator_pid = 0
    _unroute(p)
    p.config.rtt_ms = rtt_ms
    _start_emulator(p, EMULATOR)
    _route(p)
    _save(p)


class CpuLoad:
    """How busy other work kept the machine's CPUs between start() and stop().

    From /proc/stat: user, nice, system, irq, softirq and steal time (the last
    is the hypervisor running other guests on our vCPUs: on a shared VM that
    is the neighbour load that stretches every wake-up on the path), minus the
    CPU time of this process and of the children it waited for (the test's own
    `ip` commands, probes and emulator).  The fraction is of all CPUs together
    (1.0 = every CPU busy with other work all the time)."""

    def __init__(self) -> None:
        self._start: tuple[float, float, float] | None = None
        self.fraction: float | None = None

    @staticmethod
    def _read() -> tuple[float, float, float]:
        """(busy seconds of all CPUs, wall seconds, CPU seconds of this process tree)."""
        with open("/proc/stat") as f:
            fields = [int(x) for x in f.readline().split()[1:]]
        user, nice, system, _idle, _iowait, irq, softirq, steal = fields[:8]
        hz = os.sysconf("SC_CLK_TCK")
        t = os.times()
        own = t.user + t.system + t.children_user + t.children_system
        return (user + nice + system + irq + softirq + steal) / hz, time.monotonic(), own

    def start(self) -> CpuLoad:
        self._start = self._read()
        return self

    def stop(self) -> float:
        assert self._start is not None, "CpuLoad.stop() before start()"
        busy, wall, own = self._read()
        span = (wall - self._start[1]) * (os.cpu_count() or 1)
        other = (busy - self._start[0]) - (own - self._start[2])
        self.fraction = max(0.0, other) / span if span > 0 else 0.0
        return self.fraction


def _spread(r: dict) -> float:
    return (r["p90_ms"] or 0.0) - (r["p10_ms"] or 0.0)


def rtt_is_quiet(r: dict) -> bool:
    """True if an RTT measurement was not disturbed by other load: p90 - p10
    within QUIET_SPREAD_MS (an idle path's spread here is ~0.1-0.5 ms)."""
    return r["received"] == r["count"] and _spread(r) <= QUIET_SPREAD_MS


def _start_emulator(
    p: EmulatedPath, binary: str, rtt_ms: float | None = None, rate_mbit: float | None = None
) -> None:
    cfg = p.config
    one_way_us = cfg.one_way_delay_us(rtt_ms)
    rate_bps = int((cfg.rate_mbit if rate_mbit is None else rate_mbit) * 1e6)
    argv = [
        binary,
        "--dev-ab",
        "tab",
        "--dev-ba",
        "tba",
        "--delay-ab-us",
        str(one_way_us),
        "--delay-ba-us",
        str(one_way_us),
        "--rate-ab-bps",
        str(rate_bps),
        "--rate-ba-bps",
        str(rate_bps),
        "--queue-ab-bytes",
        str(cfg.queue()),
        "--queue-ba-bytes",
        str(cfg.queue()),
        "--loss-ab",
        repr(cfg.loss),
        "--loss-ba",
        repr(cfg.loss),
        "--seed",
        str(cfg.seed),
        "--stats",
        p.stats_file,
        "--stats-ms",
        "200",
        "--rt",
        str(cfg.rt_prio),
    ]
    if cfg.cpu is not None:
        argv += ["--cpu", str(cfg.cpu)]
    if cfg.trace_packets:
        argv += ["--trace", p.trace_file, "--trace-max", str(cfg.trace_packets)]
    # The stats file doubles as the readiness signal: drop a previous
    # (calibration) emulator's file first.
    with contextlib.suppress(FileNotFoundError):
        os.unlink(p.stats_file)
    with open(os.path.join(p.state_dir, "emulator.log"), "wb") as log:
        # Own session: a Ctrl-C in the caller's terminal reaches us first, and
        # we stop the emulator ourselves (after collecting final counters).
        proc = subprocess.Popen(
            ["ip", "netns", "exec", p.ns_r, *argv],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,
        )
    p.emulator_pid = proc.pid  # `ip netns exec` execs, so this is wanemu itself
    _save(p)
    deadline = time.monotonic() + 10
    while not os.path.exists(p.stats_file):
        if proc.poll() is not None or time.monotonic() > deadline:
            with open(os.path.join(p.state_dir, "emulator.log")) as f:
                raise PathError(f"emulator did not start: {f.read().strip()}")
        time.sleep(0.02)


def _route(p: EmulatedPath) -> None:
    r = p.ns_r
    # Traffic entering from A goes into TUN tab, from B into tba; what the
    # emulator writes back enters with iif tab/tba and takes the main table.
    _sh(["ip", "-n", r, "rule", "add", "iif", "ra", "lookup", "100", "pref", "100"])
    _sh(["ip", "-n", r, "rule", "add", "iif", "rb", "lookup", "101", "pref", "101"])
    _sh(["ip", "-n", r, "route", "add", NET_B, "dev", "tab", "table", "100"])
    _sh(["ip", "-n", r, "route", "add", NET_A, "dev", "tba", "table", "101"])
    cc = ["congctl", p.config.cc] if p.config.cc else []
    _sh(["ip", "-n", p.ns_a, "route", "add", NET_ALL, "via", IP_RA, *cc])
    _sh(["ip", "-n", p.ns_b, "route", "add", NET_ALL, "via", IP_RB, *cc])
    if p.config.ipv6:
        _sh(["ip", "-n", r, "-6", "rule", "add", "iif", "ra", "lookup", "100", "pref", "100"])
        _sh(["ip", "-n", r, "-6", "rule", "add", "iif", "rb", "lookup", "101", "pref", "101"])
        _sh(["ip", "-n", r, "-6", "route", "add", NET6_B, "dev", "tab", "table", "100"])
        _sh(["ip", "-n", r, "-6", "route", "add", NET6_A, "dev", "tba", "table", "101"])
        _sh(["ip", "-n", p.ns_a, "-6", "route", "add", NET6_ALL, "via", IP6_RA, *cc])
        _sh(["ip", "-n", p.ns_b, "-6", "route", "add", NET6_ALL, "via", IP6_RB, *cc])


def _unroute(p: EmulatedPath) -> None:
    for prio in ("100", "101"):
        _sh(["ip", "-n", p.ns_r, "rule", "del", "pref", prio])
    _sh(["ip", "-n", p.ns_r, "route", "del", NET_B, "table", "100"])
    _sh(["ip", "-n", p.ns_r, "route", "del", NET_A, "table", "101"])
    for ns in (p.ns_a, p.ns_b):
        _sh(["ip", "-n", ns, "route", "del", NET_ALL])
    if p.config.ipv6:
        for prio in ("100", "101"):
            _sh(["ip", "-n", p.ns_r, "-6", "rule", "del", "pref", prio])
        _sh(["ip", "-n", p.ns_r, "-6", "route", "del", NET6_B, "table", "100"])
        _sh(["ip", "-n", p.ns_r, "-6", "route", "del", NET6_A, "table", "101"])
        for ns in (p.ns_a, p.ns_b):
            _sh(["ip", "-n", ns, "-6", "route", "del", NET6_ALL])


def _stop_pid(pid: int, grace: float = 3.0) -> None:
    """SIGTERM, then SIGKILL after `grace` seconds; reaps if it is our child."""
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
            if done == pid:
                return
        except ChildProcessError:
            if not _pid_alive(pid):
                return
        time.sleep(0.02)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)


def _ns_pids(ns: str) -> list[int]:
    try:
        out = _sh(["ip", "netns", "pids", ns], timeout=10)
    except (PathError, subprocess.TimeoutExpired):
        return []
    return [int(x) for x in out.split()]


def tear_down(path: EmulatedPath | str) -> dict | None:
    """Stop every process in the path's namespaces, delete them and the state.

    Safe to call repeatedly and on a half-built path.  Returns the emulator's
    final counters when available.  Errors are collected and raised at the
    end so that one failure does not leave the rest behind.
    """
    if isinstance(path, str):
        path = load(path)
    errors = []
    if path.emulator_pid and _pid_alive(path.emulator_pid):
        _stop_pid(path.emulator_pid)  # SIGTERM: it writes final counters
    with contextlib.suppress(OSError, ValueError), open(path.stats_file) as f:
        path.final_stats = json.load(f)
    existing = set(list_namespaces())
    for ns in (path.ns_a, path.ns_b, path.ns_r):
        if ns not in existing or ns not in path.created:
            continue
        # Everything running in our namespaces was started through this
        # path (servers, clients); stop those PIDs before deleting the netns,
        # which would otherwise live on as long as a process holds it.
        for pid in _ns_pids(ns):
            _stop_pid(pid)
        try:
            _sh(["ip", "netns", "del", ns])
        except PathError as e:
            errors.append(str(e))
    if path.state_dir.startswith(STATE_DIR + "/"):
        for fn in ("state.json", "emulator-stats.json", "emulator-stats.json.tmp", "emulator.log"):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(os.path.join(path.state_dir, fn))
        with contextlib.suppress(FileNotFoundError, OSError):
            os.rmdir(path.state_dir)
    if errors:
        raise PathError("; ".join(errors))
    return path.final_stats


# -- persistence for the CLI ----------------------------------------------


def _save(p: EmulatedPath) -> None:
    tmp = os.path.join(p.state_dir, "state.json.tmp")
    with open(tmp, "w") as f:
        json.dump(p.describe(), f, indent=1)
    os.replace(tmp, os.path.join(p.state_dir, "state.json"))


def load(name: str) -> EmulatedPath:
    if not name.startswith(PREFIX):
        name = PREFIX + name
    with open(os.path.join(STATE_DIR, name, "state.json")) as f:
        d = json.load(f)
    d["config"] = PathConfig(**d["config"])
    return EmulatedPath(**d)


def list_paths() -> list[str]:
    try:
        return sorted(n for n in os.listdir(STATE_DIR) if n.startswith(PREFIX))
    except FileNotFoundError:
        return []


def measure_rtt(
    path: EmulatedPath, count: int = 40, interval_s: float = 0.02, port: int = 7007, rt: bool = True
) -> dict:
    """Idle RTT A->B->A with UDP probes (rttprobe.py); times in ms.

    With rt=True the probe and echo processes run SCHED_FIFO (chrt), so a
    busy neighbour on the shared CPUs delays neither: the figure is the
    path's RTT, not the probe's scheduling latency."""
    prio = ["chrt", "-f", "5"] if rt else []
    pin = ["taskset", "-c", str(path.config.cpu)] if path.config.cpu is not None else []
    probe = [*pin, *prio, sys.executable, os.path.join(HERE, "rttprobe.py")]
    srv = path.popen_b([*probe, "serve", str(port)])
    try:
        budget = 15 + count * (interval_s + 2 * path.config.rtt_ms / 1e3)
        deadline = time.monotonic() + 5
        out = None
        while out is None or (out["received"] == 0 and time.monotonic() < deadline):
            # first probe also waits for the echo server to bind
            out = json.loads(
                path.run_a(
                    [*probe, "probe", path.ip_b, str(port), "2", "0.01"],
                    capture_output=True,
                    text=True,
                    timeout=budget,
                    check=True,
                ).stdout
            )
        out = json.loads(
            path.run_a(
                [*probe, "probe", path.ip_b, str(port), str(count), str(interval_s)],
                capture_output=True,
                text=True,
                timeout=budget,
                check=True,
            ).stdout
        )
        return out
    finally:
        srv.kill()
        srv.wait()


def calibrate(rtt_ms: float = 7.5, count: int = 100) -> dict:
    """Measure the path's own RTT cost at rtt_ms (for SRCNET_WAN_OVERHEAD_MS)."""
    with emulated_path(rtt_ms=rtt_ms, rate_mbit=100, overhead_ms=0.0) as p:
        r = measure_rtt(p, count=count)
    r["setting_ms"] = rtt_ms
    r["overhead_median_ms"] = r["median_ms"] - rtt_ms
    r["overhead_min_ms"] = r["min_ms"] - rtt_ms
    return r


@contextlib.contextmanager
def emulated_path(
    rtt_ms: float = 300.0,
    rate_mbit: float = 1000.0,
    loss: float = 0.0,
    mtu: int = 1500,
    tuning: str = "dtn",
    cc: str | None = "cubic",
    queue_bytes: int | None = None,
    seed: int = 1,
    rt_prio: int = 10,
    overhead_ms: float | None = DEFAULT_OVERHEAD_MS,
    name: str | None = None,
    ipv6: bool = False,
    cpu: int | None = None,
    trace_packets: int = 0,
):
    """Bring a path up for the duration of a `with` block.

    Teardown runs on normal exit, on exceptions, on KeyboardInterrupt and on
    SIGTERM (converted to KeyboardInterrupt while the block runs, if no other
    handler was installed).
    """
    cfg = PathConfig(
        rtt_ms=rtt_ms,
        rate_mbit=rate_mbit,
        loss=loss,
        mtu=mtu,
        tuning=tuning,
        cc=cc,
        queue_bytes=queue_bytes,
        seed=seed,
        rt_prio=rt_prio,
        overhead_ms=overhead_ms,
        ipv6=ipv6,
        cpu=cpu,
        trace_packets=trace_packets,
    )
    restore = None
    if _main_thread() and signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:

        def _on_term(signum, frame):
            raise KeyboardInterrupt("SIGTERM")

        restore = signal.signal(signal.SIGTERM, _on_term)
    path = None
    try:
        path = bring_up(cfg, name=name)
        yield path
    finally:
        try:
            if path is not None:
                tear_down(path)
        finally:
            if restore is not None:
                signal.signal(signal.SIGTERM, restore)


def _main_thread() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()


# -- CLI -------------------------------------------------------------------


def _cli(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="wanpath.py", description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    up = sub.add_parser("up", help="bring a path up and leave it running")
    up.add_argument("--name", help=f"path name (prefix {PREFIX} added); default from pid")
    up.add_argument("--rtt-ms", type=float, default=300.0)
    up.add_argument("--rate-mbit", type=float, default=1000.0)
    up.add_argument("--loss", type=float, default=0.0, help="per-segment probability")
    up.add_argument("--mtu", type=int, default=1500)
    up.add_argument("--tuning", choices=tuning.PROFILES, default="dtn")
    up.add_argument("--cc", choices=CONGESTION, default="cubic")
    up.add_argument("--queue-bytes", type=int, help="bottleneck buffer; default 1 BDP")
    up.add_argument("--seed", type=int, default=1)
    up.add_argument("--rt-prio", type=int, default=10)
    up.add_argument(
        "--overhead-ms",
        type=float,
        default=DEFAULT_OVERHEAD_MS,
        help="fixed path RTT cost subtracted from the emulator delay (default: measured at bring-up)",
    )
    up.add_argument("--ipv6", action="store_true", help=f"IPv6 beside IPv4 ({IP6_A} and {IP6_B})")
    cal = sub.add_parser("calibrate", help="measure the fixed RTT cost of a path here")
    cal.add_argument("--rtt-ms", type=float, default=7.5)
    cal.add_argument("--count", type=int, default=100)
    down = sub.add_parser("down", help="tear a path down")
    down.add_argument("names", nargs="*")
    down.add_argument("--all", action="store_true", help="every path in " + STATE_DIR)
    down.add_argument("--stale", action="store_true", help="paths whose owner process is gone")
    st = sub.add_parser("status", help="show paths and emulator counters")
    st.add_argument("names", nargs="*")
    a = ap.parse_args(argv)

    if a.cmd == "up":
        cfg = PathConfig(
            rtt_ms=a.rtt_ms,
            rate_mbit=a.rate_mbit,
            loss=a.loss,
            mtu=a.mtu,
            tuning=a.tuning,
            cc=a.cc,
            queue_bytes=a.queue_bytes,
            seed=a.seed,
            rt_prio=a.rt_prio,
            overhead_ms=a.overhead_ms,
            ipv6=a.ipv6,
        )
        p = bring_up(cfg, name=a.name)
        # The path outlives this command: `down` identifies it by name.
        p.owner_pid = 0
        _save(p)
        print(json.dumps(p.describe(), indent=1))
        return 0
    if a.cmd == "down":
        names = list(a.names)
        if a.all or a.stale:
            for n in list_paths():
                try:
                    owner = load(n).owner_pid
                except (OSError, ValueError, TypeError):
                    owner = 0
                if a.all or (owner and not _pid_alive(owner)):
                    names.append(n)
        rc = 0
        for n in names:
            try:
                tear_down(n)
                print(f"down {n}")
            except (PathError, OSError) as e:
                print(f"down {n}: {e}", file=sys.stderr)
                rc = 1
        return rc
    if a.cmd == "calibrate":
        print(json.dumps(calibrate(a.rtt_ms, a.count), indent=1))
        return 0
    if a.cmd == "status":
        out = {}
        for n in a.names or list_paths():
            p = load(n)
            d = p.describe()
            d["emulator_alive"] = _pid_alive(p.emulator_pid)
            with contextlib.suppress(OSError, ValueError):
                d["stats"] = p.stats()
            out[p.name] = d
        print(json.dumps(out, indent=1))
        return 0
    return 2


if __name__ == "__main__":
    sys.exit(_cli(sys.argv[1:]))

#!/usr/bin/env python3
"""An emulated long-haul network between several sites, each in a network namespace of its own.

wanpath.py emulates one path between two namespaces; this module emulates a whole network: links with
their own delay, rate, queue and loss, and a route (a list of links) between every pair of sites, all
in one emulator process (``build/wannet``, src/wannet.c)::

    host namespace                         <name>-r (router)                         <name>-s1 ...
    wn<hash> 10.B.0.1 --veth-- host 10.B.0.2                s1 10.B.1.1 --veth-- wan0 10.B.1.2  (site 1)
                                  policy routing:           s2 10.B.2.1 --veth-- wan0 10.B.2.2  (site 2)
                                  site -> site: TUN "wan"   ...
                                  host <-> site: direct
                                           |
                              wannet: per-link queues, route by address

Sites talk to each other through the emulator (the pair's route: the sum of its links' delays, each
link's rate, queue and loss, shared by every flow that crosses it); the host reaches every site directly
(10.B.0.0/16 routed into the router namespace), so control traffic from the host has no WAN delay.  Links
can be cut and restored while the network runs (``Network.cut``/``restore``): a cut link loses what it
holds and everything sent over it, so the routes across it are black-holed until it is restored (the
emulator does not re-route).

Use as a context manager::

    spec = NetworkSpec(sites=["A", "B"], links=[LinkSpec("a-b", "A", "B", rtt_ms=50, rate_bps=100e6)],
                       routes={("A", "B"): ["a-b"]})
    with emulated_network(spec, name="srcnet-net-demo", state_dir="/tmp/x") as net:
        net.run("B", ["ping", "-c1", net.address("A")])

Requires root.  Standard library only (and wanpath.py, tuning.py next to it).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field

try:  # imported as bench.wan.wannet
    from . import tuning, wanpath
except ImportError:  # run as a script or with bench/wan on sys.path
    import tuning
    import wanpath

HERE = os.path.dirname(os.path.abspath(__file__))
EMULATOR = os.path.join(HERE, "build", "wannet")
BLOCKS = range(240, 250)  # 10.B.0.0/16 per network, the first free one on this host
HOST_PREFIX = "wn"  # host-side interface names: wn<8 hex of the network name>
CALIBRATION_RTT_MS = wanpath.CALIBRATION_RTT_MS
MIN_QUEUE = 65536  # one TSO burst
LOCK_FILE = "/run/srcnet-wannet.lock"  # held while a network takes its address block


class NetworkError(RuntimeError):
    """Bringing the network up, down or changing it failed."""


@dataclass
class LinkSpec:
    name: str
    a: str  # the names of the ends: sites or transit nodes (points of presence)
    b: str
    rtt_ms: float
    rate_bps: float  # per direction, IP layer; 0 = unlimited
    loss: float = 0.0  # per packet and direction


@dataclass
class NetworkSpec:
    sites: list[str]
    links: list[LinkSpec]
    routes: dict[tuple[str, str], list[str]]  # (source, destination) -> link names; reverse if missing
    mtu: int = 1500
    tuning: str = "dtn"
    cc: str | None = "cubic"
    rt_prio: int = 10
    seed: int = 1
    overhead_ms: float | None = wanpath.DEFAULT_OVERHEAD_MS  # None: measured at bring-up

    def route(self, source: str, destination: str) -> list[str]:
        if (source, destination) in self.routes:
            return list(self.routes[(source, destination)])
        if (destination, source) in self.routes:
            return list(reversed(self.routes[(destination, source)]))
        raise KeyError(f"no route from {source} to {destination}")

    def hops(self, source: str, destination: str) -> list[str]:
        """The route as directed hops ``<link>><node it leads to>``."""
        links = {lk.name: lk for lk in self.links}
        here, out = source, []
        for name in self.route(source, destination):
            lk = links[name]
            if here not in (lk.a, lk.b):
                raise NetworkError(f"route {source}->{destination}: link {name} does not start at {here}")
            here = lk.b if here == lk.a else lk.a
            out.append(f"{name}>{here}")
        if here != destination:
            raise NetworkError(f"route {source}->{destination} ends at {here}")
        return out

    def rtt_ms(self, source: str, destination: str) -> float:
        links = {lk.name: lk for lk in self.links}
        return sum(links[n].rtt_ms for n in self.route(source, destination))

    def pairs(self) -> list[tuple[str, str]]:
        """Every ordered pair of sites that has a route (given either way)."""
        routed = {*self.routes, *((t, s) for s, t in self.routes)}
        return [(s, d) for s in self.sites for d in self.sites if (s, d) in routed]

    def to_json(self) -> dict:
        d = asdict(self)
        d["routes"] = [[s, t, links] for (s, t), links in self.routes.items()]
        return d

    @classmethod
    def from_json(cls, d: dict) -> NetworkSpec:
        d = dict(d)
        d["links"] = [LinkSpec(**lk) for lk in d["links"]]
        d["routes"] = {(s, t): links for s, t, links in d["routes"]}
        return cls(**d)


def emulator_config(spec: NetworkSpec, addresses: dict[str, str], overhead_ms: float = 0.0) -> str:
    """The emulator's configuration: one hop per link direction some route uses, its queue one
    bandwidth-delay product of the longest route across it; one address per site; every route."""
    links = {lk.name: lk for lk in spec.links}
    routes = {pair: spec.hops(*pair) for pair in spec.pairs()}
    longest: dict[str, float] = {}
    for (s, t), hops in routes.items():
        for hop in hops:
            longest[hop] = max(longest.get(hop, 0.0), spec.rtt_ms(s, t))
    lines = [f"# wannet configuration; entry credit {overhead_ms} ms"]
    for hop in sorted(longest):
        lk = links[hop.split(">", 1)[0]]
        queue = max(MIN_QUEUE, int(lk.rate_bps / 8 * longest[hop] / 1e3))
        lines.append(f"hop {hop} {round(lk.rtt_ms * 500)} {int(lk.rate_bps)} {queue} {lk.loss!r}")
    lines += [f"site {site} {addresses[site]}" for site in spec.sites]
    lines += [f"route {s} {t} {' '.join(hops)}" for (s, t), hops in routes.items()]
    return "\n".join(lines) + "\n"


@dataclass
class Network:
    """A live network; plain data, saved to ``state_dir/network.json`` so another process can drive it."""

    name: str
    spec: NetworkSpec
    state_dir: str
    block: int = 0
    ns_router: str = ""
    ns_sites: dict[str, str] = field(default_factory=dict)
    host_if: str = ""
    emulator_pid: int = 0
    overhead_ms: float = 0.0
    down_links: list[str] = field(default_factory=list)
    created: list[str] = field(default_factory=list)  # namespaces and host links this network made
    final_stats: dict | None = field(default=None, repr=False)

    # -- addresses and commands in a site ---------------------------------
    def address(self, site: str) -> str:
        return f"10.{self.block}.{self.spec.sites.index(site) + 1}.2"

    @property
    def host_address(self) -> str:
        return f"10.{self.block}.0.1"

    @property
    def subnet(self) -> str:
        return f"10.{self.block}.0.0/16"

    def ns(self, site: str) -> str:
        return self.ns_sites[site]

    def cmd(self, site: str, argv: list[str]) -> list[str]:
        return ["ip", "netns", "exec", self.ns(site), *map(str, argv)]

    def run(self, site: str, argv: list[str], **kw) -> subprocess.CompletedProcess:
        return subprocess.run(self.cmd(site, argv), **kw)

    def popen(self, site: str, argv: list[str], **kw) -> subprocess.Popen:
        return subprocess.Popen(self.cmd(site, argv), **kw)

    # -- files ----------------------------------------------------------------
    def file(self, name: str) -> str:
        return os.path.join(self.state_dir, name)

    def save(self) -> None:
        d = asdict(self)
        d.pop("final_stats")
        d["spec"] = self.spec.to_json()
        tmp = self.file("network.json.tmp")
        with open(tmp, "w") as f:
            json.dump(d, f, indent=1)
        os.replace(tmp, self.file("network.json"))

    # -- the emulator -----------------------------------------------------------
    def stats(self, fresh: bool = True) -> dict:
        """The emulator's counters (rewritten every 500 ms); with fresh, a version written after this call."""
        if self.final_stats is not None:
            return self.final_stats
        t0 = time.time()
        deadline = time.monotonic() + 3
        while True:
            with open(self.file("emulator-stats.json")) as f:
                d = json.load(f)
            if not fresh or d["time"] >= t0 or time.monotonic() > deadline:
                return d
            time.sleep(0.05)

    def link_hops(self, link: str) -> list[str]:
        """The emulated hops (directions) of ``link``: none if no route between the sites crosses it."""
        hops = {h for pair in self.spec.pairs() for h in self.spec.hops(*pair)}
        return sorted(h for h in hops if h.split(">", 1)[0] == link)

    def cut(self, link: str) -> None:
        """Cut ``link`` (both directions) now: what it holds and everything sent over it is lost."""
        if not self.link_hops(link):
            raise NetworkError(f"no route between this network's sites crosses link {link!r}")
        self._control(sorted({*self.down_links, link}))

    def restore(self, link: str) -> None:
        self._control(sorted(set(self.down_links) - {link}))

    def _control(self, down: list[str], credit_ms: float | None = None) -> None:
        """Write the control file and make the emulator read it; returns once it has."""
        if credit_ms is not None:
            self.overhead_ms = credit_ms
        lines = [f"credit {round(self.overhead_ms * 1e6 / 2)}"]
        lines += [f"down {hop}" for link in down for hop in self.link_hops(link)]
        tmp = self.file("control.tmp")
        with open(tmp, "w") as f:
            f.write("\n".join(lines) + "\n")
        os.replace(tmp, self.file("control"))
        self.down_links = down
        self.save()
        if not self.emulator_pid:
            return
        before = self.stats(fresh=False)["generation"]
        os.kill(self.emulator_pid, signal.SIGHUP)
        deadline = time.monotonic() + 5
        while self.stats(fresh=False)["generation"] <= before:
            if time.monotonic() > deadline:
                raise NetworkError("the emulator did not take the new control file within 5 s")
            time.sleep(0.02)

    # -- measuring --------------------------------------------------------------
    def measure_rtt(self, source: str, destination: str, count: int = 20, interval_s: float = 0.02) -> dict:
        """Idle RTT source -> destination -> source with UDP probes (rttprobe.py, SCHED_FIFO); in ms."""
        probe_cmd = ["chrt", "-f", "5", sys.executable, os.path.join(HERE, "rttprobe.py")]
        port = "7008"
        server = self.popen(destination, [*probe_cmd, "serve", port])
        budget = 15 + count * (interval_s + 2 * self.spec.rtt_ms(source, destination) / 1e3)

        def probe(n: int, interval: float) -> dict:
            argv = [*probe_cmd, "probe", self.address(destination), port, str(n), str(interval)]
            return json.loads(
                self.run(source, argv, capture_output=True, text=True, timeout=budget, check=True).stdout
            )

        try:
            deadline = time.monotonic() + 5
            while not probe(2, 0.01)["received"] and time.monotonic() < deadline:
                pass  # the first probes also wait for the echo server to bind
            return probe(count, interval_s)
        finally:
            server.kill()
            server.wait()

    def down(self) -> dict | None:
        return tear_down(self)


def _sh(argv: list[str], timeout: float = 15, stdin: str | None = None) -> str:
    p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, input=stdin)
    if p.returncode != 0:
        raise NetworkError(f"{' '.join(argv[:6])} failed ({p.returncode}): {p.stderr.strip()[:500]}")
    return p.stdout


def _batch(commands: list[str], ns: str | None = None) -> None:
    """Many ``ip`` commands in one process (``ip -batch``): bring-up stays fast with many sites."""
    if commands:
        _sh(["ip", *(["-n", ns] if ns else []), "-batch", "-"], stdin="\n".join(commands) + "\n")


def _sysctls(ns: str, values: dict[str, str]) -> None:
    if values:
        _sh(["ip", "netns", "exec", ns, "sysctl", "-q", "-w", *[f"{k}={v}" for k, v in values.items()]])


def _free_block() -> int:
    """The first 10.B.0.0/16 (B in BLOCKS) no address or route of the host already uses."""
    used = _sh(["ip", "-4", "-o", "addr", "show"]) + _sh(["ip", "-4", "route", "show", "table", "all"])
    for block in BLOCKS:
        if f"10.{block}." not in used:
            return block
    raise NetworkError(f"no free 10.B.0.0/16 for B in {BLOCKS.start}..{BLOCKS.stop - 1}")


def host_interface(name: str) -> str:
    return HOST_PREFIX + hashlib.sha256(name.encode()).hexdigest()[:8]


def build_emulator() -> str:
    _sh([os.path.join(HERE, "build.sh")], timeout=120)
    return EMULATOR


def bring_up(spec: NetworkSpec, name: str, state_dir: str) -> Network:
    """Namespaces, links, addresses, routing, tuning and the emulator. On any failure everything made so
    far is removed before the exception propagates; the caller owns the result (tear_down)."""
    if os.geteuid() != 0:
        raise NetworkError("root is required (network namespaces, TUN, routes)")
    if not spec.sites or len(spec.sites) > 250:
        raise NetworkError("a network has 1 to 250 sites")
    try:
        wanpath.require_congestion_control(spec.cc)
    except wanpath.PathError as exc:
        raise NetworkError(str(exc)) from exc
    binary = build_emulator()
    os.makedirs(state_dir, exist_ok=True)
    net = Network(name, spec, state_dir, ns_router=f"{name}-r", host_if=host_interface(name))
    net.ns_sites = {site: f"{name}-s{i + 1}" for i, site in enumerate(spec.sites)}
    taken = set(wanpath.list_namespaces()) & {net.ns_router, *net.ns_sites.values()}
    if taken:
        raise NetworkError(f"namespaces already exist: {sorted(taken)} (python -m localnet down?)")
    try:
        # Two networks coming up at once must not both take the same free block: the host's route
        # makes a block used, so the lock is held until it is there.
        with open(LOCK_FILE, "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            net.block = _free_block()
            net.save()
            _make_namespaces(net)
            _make_links(net)
            _route(net)
        if spec.overhead_ms is None:
            _calibrate(net, binary)
        else:
            net.overhead_ms = spec.overhead_ms
        _start_emulator(net, binary, emulator_config(spec, {s: net.address(s) for s in spec.sites}))
        net.save()
    except BaseException:
        tear_down(net)
        raise
    return net


def _make_namespaces(net: Network) -> None:
    for ns in (net.ns_router, *net.ns_sites.values()):
        _sh(["ip", "netns", "add", ns])
        net.created.append(ns)
        net.save()
        # IPv4 only: the emulator routes IPv4; nothing else should wander between sites.
        _sysctls(ns, {"net.ipv6.conf.all.disable_ipv6": "1", "net.ipv6.conf.default.disable_ipv6": "1"})
        _batch(["link set lo up"], ns)


def _make_links(net: Network) -> None:
    spec, r, b, mtu = net.spec, net.ns_router, net.block, str(net.spec.mtu)
    if os.path.exists(f"/sys/class/net/{net.host_if}"):
        raise NetworkError(f"the host already has an interface {net.host_if} (python -m localnet down?)")
    net.created.append(f"link:{net.host_if}")
    net.save()
    _batch(
        [
            f"link add {net.host_if} type veth peer name host netns {r}",
            f"addr add 10.{b}.0.1/30 dev {net.host_if}",
            f"link set {net.host_if} up",
        ]
    )
    router = [f"addr add 10.{b}.0.2/30 dev host", "link set host up"]
    for i, site in enumerate(spec.sites, start=1):
        ns = net.ns_sites[site]
        _batch(
            [
                f"link add wan0 mtu {mtu} type veth peer name s{i} mtu {mtu} netns {r}",
                f"addr add 10.{b}.{i}.2/24 dev wan0",
                "link set wan0 up",
            ],
            ns,
        )
        router += [f"addr add 10.{b}.{i}.1/24 dev s{i}", f"link set s{i} up"]
    router += ["tuntap add dev wan mode tun vnet_hdr", f"link set wan mtu {mtu} txqueuelen 10000 up"]
    _batch(router, r)
    conf = ["all", "default", "host", "wan", *[f"s{i}" for i in range(1, len(spec.sites) + 1)]]
    _sysctls(r, {"net.ipv4.ip_forward": "1", **{f"net.ipv4.conf.{c}.rp_filter": "0" for c in conf}})
    # Socket buffers for the longest route (a site's flows may cross it).
    longest = max((spec.rtt_ms(s, t) for s, t in spec.pairs()), default=1.0)
    rate = max((lk.rate_bps for lk in spec.links), default=1e9) or 1e9
    bdp = int(rate / 8 * longest / 1e3)
    for ns in net.ns_sites.values():
        _sysctls(ns, tuning.sysctls(spec.tuning, bdp, max(bdp, MIN_QUEUE)))


def _route(net: Network) -> None:
    r, b = net.ns_router, net.block
    _batch(
        [
            f"rule add to 10.{b}.0.0/24 lookup main pref 90",  # anything for the host: direct
            "rule add iif host lookup main pref 91",  # the host to a site: direct
            "rule add iif wan lookup main pref 92",  # what the emulator delivers
            f"rule add to 10.{b}.0.0/16 lookup 100 pref 100",  # site to site: into the emulator
            f"route add 10.{b}.0.0/16 dev wan table 100",
        ],
        r,
    )
    cc = f" congctl {net.spec.cc}" if net.spec.cc else ""
    for i, site in enumerate(net.spec.sites, start=1):
        _batch([f"route add 10.{b}.0.0/16 via 10.{b}.{i}.1{cc}"], net.ns_sites[site])
    _batch([f"route add 10.{b}.0.0/16 via 10.{b}.0.2 dev {net.host_if}"])


def _start_emulator(net: Network, binary: str, config: str) -> None:
    with open(net.file("emulator.cfg"), "w") as f:
        f.write(config)
    net._control(net.down_links)  # the control file the emulator reads at start (no emulator yet)
    stats = net.file("emulator-stats.json")
    with contextlib.suppress(FileNotFoundError):
        os.unlink(stats)
    argv = [binary, "--tun", "wan", "--config", net.file("emulator.cfg"), "--control", net.file("control")]
    argv += ["--stats", stats, "--stats-ms", "500", "--rt", str(net.spec.rt_prio)]
    argv += ["--seed", str(net.spec.seed)]
    with open(net.file("emulator.log"), "ab") as log:
        # Own session: a Ctrl-C in the terminal reaches the owner, which stops the emulator itself.
        proc = subprocess.Popen(
            ["ip", "netns", "exec", net.ns_router, *argv],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,
        )
    net.emulator_pid = proc.pid  # `ip netns exec` execs: this is the emulator itself
    net.save()
    deadline = time.monotonic() + 10
    while not os.path.exists(stats):
        if proc.poll() is not None or time.monotonic() > deadline:
            with open(net.file("emulator.log")) as f:
                raise NetworkError(f"emulator did not start: {f.read().strip()[-1000:]}")
        time.sleep(0.02)


def _calibrate(net: Network, binary: str) -> None:
    """The fixed RTT cost of crossing the namespaces and the emulator, measured now: an emulator whose
    only route joins two sites over one link of CALIBRATION_RTT_MS (wanpath calibrates the same way)."""
    sites = net.spec.sites
    if len(sites) < 2:
        net.overhead_ms = 0.0
        return
    a, b = sites[0], sites[1]
    half = round(CALIBRATION_RTT_MS * 500)
    config = f"hop cal>{b} {half} 0 {MIN_QUEUE} 0\nhop cal>{a} {half} 0 {MIN_QUEUE} 0\n"
    config += f"site {a} {net.address(a)}\nsite {b} {net.address(b)}\n"
    config += f"route {a} {b} cal>{b}\nroute {b} {a} cal>{a}\n"
    saved = net.spec.routes
    net.spec.routes = {(a, b): ["cal"]}
    net.spec.links.append(LinkSpec("cal", a, b, CALIBRATION_RTT_MS, 0))
    try:
        net.overhead_ms = 0.0
        _start_emulator(net, binary, config)
        best = None
        for _ in range(3):  # the quietest of up to three: a busy neighbour shows as spread
            m = net.measure_rtt(a, b, count=40, interval_s=0.02)
            if m["received"] and (best is None or wanpath._spread(m) < wanpath._spread(best)):
                best = m
            if best is not None and wanpath._spread(best) <= wanpath.QUIET_SPREAD_MS:
                break
    finally:
        wanpath._stop_pid(net.emulator_pid)
        net.emulator_pid = 0
        net.spec.routes = saved
        net.spec.links.pop()
    if best is None:
        raise NetworkError("calibration: no RTT probe came back")
    # Clamped as wanpath does: above 1 ms the excess is a neighbour's load, not the path's cost.
    net.overhead_ms = round(min(1.0, max(0.0, best["median_ms"] - CALIBRATION_RTT_MS)), 3)


def tear_down(net: Network) -> dict | None:
    """Stop the emulator and every process in the network's namespaces, delete the namespaces and the
    host's interface, remove the state files. Safe to repeat and on a half-built network; errors are
    collected and raised at the end so that one failure does not leave the rest behind."""
    errors = []
    if net.emulator_pid and wanpath._pid_alive(net.emulator_pid):
        wanpath._stop_pid(net.emulator_pid)  # SIGTERM: it writes its final counters
    with contextlib.suppress(OSError, ValueError), open(net.file("emulator-stats.json")) as f:
        net.final_stats = json.load(f)
    existing = set(wanpath.list_namespaces())
    for ns in [*net.ns_sites.values(), net.ns_router]:
        if ns not in existing or ns not in net.created:
            continue
        # Everything still running in our namespaces was started in them by us (sites, probes, copies).
        for pid in wanpath._ns_pids(ns):
            wanpath._stop_pid(pid)
        try:
            _sh(["ip", "netns", "del", ns])
        except NetworkError as e:
            errors.append(str(e))
    # Deleting the router namespace takes the veth pair with it, but the kernel does that after `ip netns
    # del` returns: the host end may still be listed, then gone before our own delete reaches it. Only an
    # end that outlives a failed delete is an error.
    host_end = f"/sys/class/net/{net.host_if}"
    if f"link:{net.host_if}" in net.created and os.path.exists(host_end):
        try:
            _sh(["ip", "link", "del", net.host_if])
        except NetworkError as e:
            if os.path.exists(host_end):
                errors.append(str(e))
    for fn in (
        "network.json",
        "network.json.tmp",
        "emulator.cfg",
        "control",
        "control.tmp",
        "emulator-stats.json",
        "emulator-stats.json.tmp",
    ):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(net.file(fn))
    if errors:
        raise NetworkError("; ".join(errors))
    return net.final_stats


def load(state_dir: str) -> Network | None:
    """The network recorded in ``state_dir``, or None."""
    try:
        with open(os.path.join(state_dir, "network.json")) as f:
            d = json.load(f)
    except FileNotFoundError:
        return None
    d["spec"] = NetworkSpec.from_json(d["spec"])
    return Network(**d)


def leftovers(net: Network) -> list[str]:
    """What of ``net`` still exists: namespaces, the host interface, the emulator (for cleanup checks)."""
    names = set(wanpath.list_namespaces())
    left = [ns for ns in (net.ns_router, *net.ns_sites.values()) if ns in names]
    if os.path.exists(f"/sys/class/net/{net.host_if}"):
        left.append(f"interface {net.host_if}")
    if net.emulator_pid and wanpath._pid_alive(net.emulator_pid):
        left.append(f"emulator pid {net.emulator_pid}")
    return left


@contextlib.contextmanager
def emulated_network(spec: NetworkSpec, name: str, state_dir: str):
    """Bring a network up for a ``with`` block; torn down on exit, on exceptions, on Ctrl-C, and on
    SIGTERM (turned into KeyboardInterrupt while the block runs, if no other handler was installed)."""
    restore = None
    if wanpath._main_thread() and signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:

        def _on_term(signum, frame):
            raise KeyboardInterrupt("SIGTERM")

        restore = signal.signal(signal.SIGTERM, _on_term)
    net = None
    try:
        net = bring_up(spec, name, state_dir)
        yield net
    finally:
        try:
            if net is not None:
                tear_down(net)
        finally:
            if restore is not None:
                signal.signal(signal.SIGTERM, restore)

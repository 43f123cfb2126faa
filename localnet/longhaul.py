"""The long-haul local network: every site in a network namespace of its own, behind bench/wan's packet-level
emulator, with each link's RTT and loss from the topology and its capacity divided by CAPACITY_SCALE.

One ``wannet`` emulator process carries the whole network (bench/wan/wannet.py, src/wannet.c): every link
of the topology that a route between two of the sites crosses is emulated in both directions (delay half
its RTT, its loss, capacity / CAPACITY_SCALE, a drop-tail queue of one bandwidth-delay product of the
longest route across it), and flows that cross a link share it. A route between two sites is the platform's
own network path between them (the lowest-RTT one, either way round), or the lowest-RTT walk over the links
that are up, through no other storage site, where the platform has none. The platform's processes stay in
the host namespace and reach every site directly; third-party copies go site to site (the destination
pulls), across the emulator.

The network belongs to a state folder (``<state>/longhaul/``): ``python -m localnet down`` tears it down
with the rest, and another process can cut and restore its links (``python -m localnet link``)."""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import sys
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any
from urllib.parse import urlsplit

from .forwarder import wait_until_listening
from .pki import address_credentials
from .processes import ServiceError, is_alive, start_daemon, stop_daemon
from .state import PROJECT_ROOT, StateDir
from .users import grant_traversal, service_account
from .xrootd import LocalSite, SiteTokens, ensure_site, stop_site

# Capacities are divided by this: the reference topology's 100 Gbit/s links become 100 Mbit/s. Two cores
# then carry the whole network with room to spare: the emulator copies every packet once per hop (about
# 6-12 % of a core per Gbit/s and hop, shared/reference/wan-emulation.md), the two telescopes' access links
# admit at most 2 x 100 Mbit/s into it, and the XRootD servers pulling at that rate with adler32 need a
# few per cent of a core each. RTT and loss are not scaled.
CAPACITY_SCALE = float(os.environ.get("SRCNET_LONGHAUL_SCALE", "1000"))
# The sites' TCP congestion control (set on every emulated route): BBR, what the dtn_tuning role deploys on
# a site's hosts (`dtn_tuning_congestion_control`); SRCNET_LONGHAUL_CC=cubic runs the kernel's usual one.
# CUBIC's losses to the one-BDP queues left the access link 84-91 % busy while products waited, BBR 95-97 %
# (docs/benchmarks.md, "The sites' congestion control as deployed").
SITE_CONGESTION_CONTROL = os.environ.get("SRCNET_LONGHAUL_CC", "bbr")
WAN_DIR = PROJECT_ROOT / "bench" / "wan"
NETWORK_MTU = 1500  # every emulated link's (wannet's NetworkSpec.mtu)


def platform_settings(congestion_control: str = SITE_CONGESTION_CONTROL) -> dict[str, str]:
    """The platform's settings for running on this network, set before Django's settings load: the
    capacities the emulator carries (the push loop plans on them) and the sites' congestion control and MTU
    (what the simulator of simulated campaigns models: schedulers/simulations.deployed_stack)."""
    return {
        "SRCNET_NETWORK_SCALE": f"{CAPACITY_SCALE:g}",
        "SRCNET_SITES_CONGESTION_CONTROL": congestion_control,
        "SRCNET_NETWORK_MTU": str(NETWORK_MTU),
    }


def wannet() -> ModuleType:
    """bench/wan/wannet.py (standard library only, outside the Python package tree)."""
    if str(WAN_DIR) not in sys.path:
        sys.path.insert(0, str(WAN_DIR))
    import wannet as module

    return module


@dataclass
class Plan:
    """What to emulate: the network (a wannet NetworkSpec) and which site each storage endpoint is at."""

    spec: Any
    endpoints: dict[str, str] = field(default_factory=dict)  # endpoint name -> site name

    def to_json(self) -> dict[str, Any]:
        return {"spec": self.spec.to_json(), "endpoints": self.endpoints}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Plan:
        return cls(spec=wannet().NetworkSpec.from_json(data["spec"]), endpoints=data["endpoints"])


def plan_network(
    endpoints: Iterable[str] | None = None,
    *,
    scale: float = CAPACITY_SCALE,
    congestion_control: str = SITE_CONGESTION_CONTROL,
) -> Plan:
    """The emulated network for the active storage endpoints named (all of them when None), from the
    topology in the database (needs Django set up); its sites' routes use ``congestion_control``."""
    from topology.choices import SiteKind
    from topology.graph import LinkEdge, NoPathError, build_graph, shortest_paths
    from topology.models import Link, NetworkPath, Site, StorageEndpoint

    wn = wannet()
    if congestion_control not in wn.wanpath.CONGESTION:
        known = ", ".join(wn.wanpath.CONGESTION)
        raise ValueError(f"SRCNET_LONGHAUL_CC must be one of {known}, not {congestion_control!r}")
    rows = StorageEndpoint.objects.filter(is_active=True).select_related("site").order_by("name")
    if endpoints is not None:
        wanted = set(endpoints)
        rows = rows.filter(name__in=wanted)
        missing = wanted - {e.name for e in rows}
        if missing:
            raise ValueError(f"no active storage endpoint named {', '.join(sorted(missing))}")
    endpoint_sites = {e.name: e.site.name for e in rows}
    sites = sorted(set(endpoint_sites.values()))
    links = {lk.name: lk for lk in Link.objects.select_related("a_end", "b_end")}
    storage = [s.name for s in Site.objects.exclude(kind=SiteKind.POP)]
    graph = build_graph(
        LinkEdge(lk.name, lk.a_end.name, lk.b_end.name, lk.capacity_bps, lk.rtt_ms, lk.is_up)
        for lk in links.values()
    )
    declared: dict[tuple[str, str], list[str]] = {}
    paths = NetworkPath.objects.filter(source__name__in=sites, destination__name__in=sites).select_related(
        "source", "destination"
    )
    for path in paths.order_by("-rtt_ms"):  # the lowest RTT is written last and wins
        declared[(path.source.name, path.destination.name)] = [lk.name for lk in path.ordered_links()]
    routes: dict[tuple[str, str], list[str]] = {}
    for i, source in enumerate(sites):
        for destination in sites[i + 1 :]:
            forward, backward = declared.get((source, destination)), declared.get((destination, source))
            if forward is not None:
                routes[(source, destination)] = forward
            if backward is not None:
                routes[(destination, source)] = backward
            if forward is None and backward is None:
                with contextlib.suppress(NoPathError):
                    routes[(source, destination)] = shortest_paths(
                        graph, source, destination, avoid_sites=storage
                    )[0]
    used = {name for route in routes.values() for name in route}
    spec = wn.NetworkSpec(
        sites=sites,
        mtu=NETWORK_MTU,
        links=[
            wn.LinkSpec(
                name=lk.name,
                a=lk.a_end.name,
                b=lk.b_end.name,
                rtt_ms=lk.rtt_ms,
                rate_bps=lk.capacity_bps / scale,
                loss=lk.loss_rate,
            )
            for name, lk in sorted(links.items())
            if name in used
        ],
        routes=routes,
        cc=congestion_control,
    )
    return Plan(spec=spec, endpoints=endpoint_sites)


# -- the network of a state folder ----------------------------------------------------------------------


def network_dir(state: StateDir) -> str:
    return str(state.path / "longhaul")


def network_name(state: StateDir) -> str:
    """Namespace names of this state's network: srcnet-lh<hash of the state folder>-r, -s1, ..."""
    return "srcnet-lh" + hashlib.sha256(str(state.path.resolve()).encode()).hexdigest()[:6]


@dataclass
class LongHaul:
    """A running long-haul network and the XRootD sites started in it (by storage endpoint)."""

    state: StateDir
    plan: Plan
    net: Any  # wannet.Network
    sites: dict[str, LocalSite] = field(default_factory=dict)
    _forwarders: list[str] = field(default_factory=list)

    def site_of(self, endpoint: str) -> str:
        return self.plan.endpoints[endpoint]

    def address(self, endpoint: str) -> str:
        return str(self.net.address(self.site_of(endpoint)))

    def netns(self, endpoint: str) -> str:
        return str(self.net.ns(self.site_of(endpoint)))

    def route(self, source: str, destination: str) -> list[str]:
        """The links from one endpoint's site to another's."""
        return list(self.plan.spec.route(self.site_of(source), self.site_of(destination)))

    def rtt_ms(self, source: str, destination: str) -> float:
        return float(self.plan.spec.rtt_ms(self.site_of(source), self.site_of(destination)))

    def capacity_bps(self, source: str, destination: str) -> float:
        """The emulated bottleneck (scaled) of the route between two endpoints."""
        rates = {lk.name: lk.rate_bps for lk in self.plan.spec.links}
        return min(rates[name] for name in self.route(source, destination))

    def measure_rtt(self, source: str, destination: str, count: int = 20) -> dict[str, Any]:
        return dict(self.net.measure_rtt(self.site_of(source), self.site_of(destination), count=count))

    def cut(self, link: str) -> None:
        """Cut a link in both directions: the routes across it lose every packet until it is restored."""
        self.net.cut(link)

    def restore(self, link: str) -> None:
        self.net.restore(link)

    def stats(self) -> dict[str, Any]:
        return dict(self.net.stats())

    def start_sites(
        self,
        names: dict[str, str] | None = None,
        *,
        pacing: bool = True,
        tokens: Mapping[str, SiteTokens],
        **site_options: Any,
    ) -> dict[str, LocalSite]:
        """One XRootD server per endpoint in its site's namespace, reached at the namespace's address.
        ``names`` maps an endpoint to the local site's name (default: the endpoint's own name). Each site
        paces the connections reading its files at its path bottleneck (``pacing_bps``), as a deployed site
        is configured; ``pacing=False`` leaves them unpaced, for comparisons. ``tokens``: the token
        configuration of every endpoint's site (the issuer must be reachable from the namespaces); there is
        no site without one (localnet/binding.py start_long_haul_token_sites makes them)."""
        missing = sorted(set(self.plan.endpoints) - set(tokens))
        if missing:
            raise ValueError(f"no token configuration for the sites of {', '.join(missing)}")
        for endpoint in self.plan.endpoints:
            name = (names or {}).get(endpoint, endpoint)
            address = self.address(endpoint)
            site_tokens = tokens[endpoint]
            self._reach_loopback_issuers(endpoint, site_tokens)
            self.sites[endpoint] = ensure_site(
                self.state,
                name,
                netns=self.netns(endpoint),
                host=address,
                credentials=address_credentials(self.state, address),
                pacing_bps=self.pacing_bps(endpoint) if pacing else None,
                tokens=site_tokens,
                # Its namespace has no way to the host's loopback, where the firefly collector listens.
                fireflies=False,
                **site_options,
            )
        return self.sites

    def _reach_loopback_issuers(self, endpoint: str, tokens: SiteTokens) -> None:
        """For each issuer the host serves on loopback (the tests' session issuer), a forwarder in the
        endpoint's namespace from 127.0.0.1:<port> to the host's address on the network's host link
        (localnet/forwarder.py): the site fetches the issuer's keys by the URL its tokens name."""
        for issuer in tokens.issuers:
            parts = urlsplit(issuer)
            if parts.hostname != "127.0.0.1" or parts.port is None:
                continue
            script = PROJECT_ROOT / "localnet" / "forwarder.py"
            account = service_account()
            if account is not None:
                grant_traversal(account, script)
            # Into the namespace as root (setns), then the account's own (setpriv execs: the PID recorded
            # is the forwarder's).
            argv = ["ip", "netns", "exec", self.netns(endpoint)]
            if account is not None:
                argv += ["setpriv", f"--reuid={account}", f"--regid={account}", "--clear-groups"]
            argv += [sys.executable, str(script), str(parts.port), f"{self.net.host_address}:{parts.port}"]
            name = _forwarder_name(endpoint, parts.port)
            stop_daemon(self.state, name)
            log = self.state.sub("log") / f"{name}.log"
            since = log.stat().st_size if log.exists() else 0  # the log is appended to
            pid = start_daemon(self.state, name, argv)
            self._forwarders.append(name)
            try:
                wait_until_listening(log, functools.partial(is_alive, pid), name, since=since)
            except RuntimeError as exc:
                raise ServiceError(str(exc)) from exc

    def pacing_bps(self, endpoint: str) -> float | None:
        """What the endpoint's site sends at most per connection: the widest bottleneck (scaled) of its
        routes to the other sites, so that no route is paced below what it carries (the xrootd_site
        Ansible role's ``xrootd_site_path_capacity_gbps``). None for a site with no route."""
        rates = {lk.name: lk.rate_bps for lk in self.plan.spec.links}
        site = self.site_of(endpoint)
        bottlenecks = [
            min(rates[name] for name in links)
            for ends, links in self.plan.spec.routes.items()
            if site in ends and links  # a route's bottleneck is the same either way
        ]
        return max(bottlenecks, default=None)

    def stop_sites(self) -> None:
        for site in self.sites.values():
            stop_site(self.state, site.name)
        self.sites.clear()
        for name in self._forwarders:
            stop_daemon(self.state, name)
        self._forwarders.clear()


def _forwarder_name(endpoint: str, port: int) -> str:
    return f"issuer-path-{endpoint}-{port}"


def start_network(state: StateDir, plan: Plan) -> LongHaul:
    """Bring the state's network up (tearing down one a previous run left behind)."""
    stop_network(state)
    folder = network_dir(state)
    os.makedirs(folder, exist_ok=True)
    net = wannet().bring_up(plan.spec, network_name(state), folder)
    _write_plan(folder, plan)
    return LongHaul(state=state, plan=plan, net=net)


def current_network(state: StateDir) -> LongHaul | None:
    """The state's network if one is up (for another process: the CLI, the demo's down)."""
    folder = network_dir(state)
    net = wannet().load(folder)
    if net is None:
        return None
    try:
        with open(os.path.join(folder, "plan.json")) as fh:
            plan = Plan.from_json(json.load(fh))
    except FileNotFoundError:
        plan = Plan(spec=net.spec)
    return LongHaul(state=state, plan=plan, net=net)


def stop_network(state: StateDir) -> bool:
    """Tear the state's network down (its namespaces, what still runs in them, the emulator, the host's
    interface); True if there was one."""
    folder = network_dir(state)
    net = wannet().load(folder)
    if net is None:
        return False
    try:
        wannet().tear_down(net)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(os.path.join(folder, "plan.json"))
    return True


@contextlib.contextmanager
def long_haul(state: StateDir, plan: Plan) -> Iterator[LongHaul]:
    """The network for a ``with`` block: torn down on exit and on any exception (sites started in it
    are stopped first)."""
    network = start_network(state, plan)
    try:
        yield network
    finally:
        try:
            network.stop_sites()
        finally:
            stop_network(state)


def _write_plan(folder: str, plan: Plan) -> None:
    tmp = os.path.join(folder, "plan.json.tmp")
    with open(tmp, "w") as fh:
        json.dump(plan.to_json(), fh, indent=1)
    os.replace(tmp, os.path.join(folder, "plan.json"))


def describe_network(state: StateDir) -> str:
    """One line on the state's network, for the demo's log."""
    network = current_network(state)
    if network is None:
        return "no long-haul network is up"
    net, spec = network.net, network.plan.spec
    return (
        f"long-haul network: {len(spec.sites)} sites in namespaces {net.name}-s1..s{len(spec.sites)}, "
        f"{len(spec.links)} links emulated (RTT and loss as in the topology, capacity / {CAPACITY_SCALE:g}), "
        f"fixed path cost {net.overhead_ms} ms taken off; cut a link with "
        f"`python -m localnet longhaul cut LINK --state {state.path.name}`"
    )

"""``python -m localnet longhaul {up,status,cut,restore}``: the long-haul network from the shell.

``up`` starts PostgreSQL and Redis, loads the reference topology when the database has none, brings the
state's long-haul network up and one XRootD server per active storage endpoint in its site's namespace,
and points the endpoints at them; it all stays up until ``python -m localnet down``. ``cut`` and
``restore`` act on the running emulator (from any process: it reads its control file on SIGHUP)."""

from __future__ import annotations

import argparse
import json
import os
from typing import Any

from .state import StateDir


def add_commands(sub: Any) -> None:
    """Add the ``longhaul`` command to ``python -m localnet``'s sub-parsers."""
    parser = sub.add_parser(
        "longhaul", help="sites in network namespaces behind the WAN emulator (up, cut, ...)"
    )
    commands = parser.add_subparsers(dest="longhaul_command", required=True)
    for name, func, text in (
        ("up", _up, "the databases, the topology, the emulated network and a site per endpoint in it"),
        ("status", _status, "the network's sites, links and the emulator's counters"),
        ("cut", _cut, "cut a link (both directions) of the running network"),
        ("restore", _restore, "restore a cut link"),
    ):
        p = commands.add_parser(name, help=text)
        p.add_argument("--state", default="demo")
        if name in ("cut", "restore"):
            p.add_argument("link", help="a link of the topology, e.g. singapore-london")
        p.set_defaults(func=func)


def _up(args: argparse.Namespace) -> int:
    from .stack import ensure_core, service_env

    state = StateDir.named(args.state)
    ports = ensure_core(state)
    os.environ.update(service_env(state, args.state))
    import django

    django.setup()
    from django.core.management import call_command

    from topology.management.commands.import_topology import REFERENCE
    from topology.models import StorageEndpoint
    from topology.services.importer import import_topology

    from .binding import bind_local_sites

    call_command("migrate", verbosity=0)
    if not StorageEndpoint.objects.exists():
        import_topology(text=REFERENCE.read_text())
    sites = bind_local_sites(state, long_haul=True)
    print(json.dumps({**ports, "sites": {name: site.root_url("") for name, site in sites.items()}}, indent=2))
    return 0


def _network(args: argparse.Namespace) -> Any:
    from .longhaul import current_network

    network = current_network(StateDir.named(args.state))
    if network is None:
        raise SystemExit(f"no long-haul network is up for the state {args.state!r}")
    return network


def _status(args: argparse.Namespace) -> int:
    network = _network(args)
    net, stats = network.net, network.stats()
    links: dict[str, Any] = {}
    for link in network.plan.spec.links:
        hops = {hop: stats["hops"][hop] for hop in net.link_hops(link.name)}
        links[link.name] = {
            "rtt_ms": link.rtt_ms,
            "rate_bps": link.rate_bps,
            "loss": link.loss,
            "down": link.name in net.down_links,
            "tx_bytes": {hop: h["tx_bytes"] for hop, h in hops.items()},
            "dropped": {
                hop: h["drop_loss"] + h["drop_queue"] + h["drop_ring"] + h["drop_down"]
                for hop, h in hops.items()
            },
        }
    print(
        json.dumps(
            {
                "name": net.name,
                "emulator_pid": net.emulator_pid,
                "overhead_ms": net.overhead_ms,
                "sites": {
                    site: {"namespace": net.ns(site), "address": net.address(site)} for site in net.spec.sites
                },
                "endpoints": network.plan.endpoints,
                "links": links,
            },
            indent=2,
        )
    )
    return 0


def _cut(args: argparse.Namespace) -> int:
    try:
        _network(args).cut(args.link)
    except RuntimeError as error:  # an unknown link, an emulator that does not answer
        raise SystemExit(f"cut {args.link}: {error}") from error
    print(f"cut {args.link}")
    return 0


def _restore(args: argparse.Namespace) -> int:
    try:
        _network(args).restore(args.link)
    except RuntimeError as error:
        raise SystemExit(f"restore {args.link}: {error}") from error
    print(f"restored {args.link}")
    return 0

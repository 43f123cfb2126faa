"""``python -m localnet monitoring {up,down}``: the local Prometheus beside a running local network.

``up`` starts the XRootD summary exporter, the node exporter, Alertmanager and Prometheus (or makes them
re-read their configuration), scraping the state's web server and FTS3 service if they run, and prints
where each answers; ``down`` stops them, by PID (``python -m localnet down`` does too)."""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from typing import Any

from .state import StateDir


def add_commands(sub: Any) -> None:
    """Add the ``monitoring`` command to ``python -m localnet``'s sub-parsers."""
    parser = sub.add_parser("monitoring", help="Prometheus, Alertmanager and exporters (docs/monitoring.md)")
    commands = parser.add_subparsers(dest="monitoring_command", required=True)
    for name, func, text in (
        ("up", _up, "start them (scraping the state's web server and FTS3 service if they run)"),
        ("down", _down, "stop them"),
    ):
        p = commands.add_parser(name, help=text)
        p.add_argument("--state", default="demo")
        if name == "up":
            p.add_argument("--interval", default="15s", help="scrape and evaluation interval (default 15s)")
        p.set_defaults(func=func)


def _up(args: argparse.Namespace) -> int:
    from .monitoring import ensure_monitoring
    from .processes import running

    state = StateDir.named(args.state)
    ports = state.read_runtime().get("ports", {})
    # Both over HTTPS, scraped with the local CA (ensure_monitoring gives Prometheus its certificate).
    web = f"https://127.0.0.1:{ports['web']}" if running(state, "web") and "web" in ports else None
    fts3 = f"https://127.0.0.1:{ports['fts3']}" if running(state, "fts3") and "fts3" in ports else None
    monitoring = ensure_monitoring(state, args.state, control_plane=web, fts3=fts3, interval=args.interval)
    print(json.dumps({**asdict(monitoring), "control_plane": web, "fts3": fts3}, indent=2))
    return 0


def _down(args: argparse.Namespace) -> int:
    from .monitoring import stop_monitoring

    stopped = stop_monitoring(StateDir.named(args.state))
    print("stopped: " + (", ".join(stopped) if stopped else "nothing was running"))
    return 0

"""The local network's firefly collector (monitoring/fireflies) and what its XRootD sites need to send it
their fireflies (``xrootd.pmark``): every copy's connections are then reported, with the experiment of the
local SciTags registry (localnet/scitags.py), their bytes and RTT (docs/network.md).

Debian's XRootD 5.5.3 marks a connection at the client's login, before any file's ``scitag.flow`` is seen:
every flow of a site carries the experiment (``map2exp default``) and activity 0."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

from .processes import port_open, running, start_daemon, stop_daemon, wait_for_port
from .scitags import EXPERIMENT, REGISTRY
from .state import FIREFLIES_TOKEN, PROJECT_ROOT, StateDir
from .users import chown_tree

DAEMON = "fireflies"


def collector_ports(state: StateDir) -> tuple[int, int]:
    """Its UDP port (the sites' ``ffdest``) and its /metrics port."""
    return state.port("fireflies:udp"), state.port("fireflies:metrics")


def collector_token(state: StateDir) -> str:
    """The bearer token its /metrics and /flows demand (the platform's processes get it in their
    environment, SRCNET_FIREFLIES_TOKEN)."""
    return state.secret(FIREFLIES_TOKEN)


def ensure_collector(state: StateDir) -> tuple[int, int]:
    """Start the state's collector unless it runs (as the service account: it refuses root)."""
    from .stack import platform_process

    udp, metrics = collector_ports(state)
    if running(state, DAEMON) and port_open(metrics):
        return udp, metrics
    env, account = platform_process(state, state.path.name)
    token_file = state.sub(DAEMON) / "http.token"  # its own copy, readable by its account only
    token_file.write_text(collector_token(state) + "\n")
    token_file.chmod(0o600)
    if account is not None:
        chown_tree(token_file, account)
    argv = [
        sys.executable,
        "-m",
        "monitoring.fireflies",
        "--listen",
        f"127.0.0.1:{udp}",
        "--metrics",
        f"127.0.0.1:{metrics}",
        "--http-token-file",
        str(token_file),
    ]
    pid = start_daemon(state, DAEMON, argv, env=env, cwd=PROJECT_ROOT, user=account)
    wait_for_port(metrics, pid=pid, what="firefly collector", timeout=30)
    return udp, metrics


def stop_collector(state: StateDir) -> bool:
    return stop_daemon(state, DAEMON, timeout=10)


def pmark_lines(state: StateDir, folder: Path) -> list[str]:
    """The packet-marking directives of a local site whose files are under ``folder``: its fireflies to the
    state's collector (started if need be), every flow (``domain any``: the default skips private
    addresses, every address here), the registry copied beside its configuration (the xrootd account reads
    it; XRootD's parser needs its top-level ``modified``)."""
    udp, _ = ensure_collector(state)
    registry = folder / "scitags-registry.json"
    shutil.copyfile(REGISTRY, registry)
    json.loads(registry.read_text())  # a broken copy fails here, naming the file, not in the server's log
    return [
        f"xrootd.pmark ffdest 127.0.0.1:{udp}",
        "xrootd.pmark domain any",
        f"xrootd.pmark defsfile {registry}",
        f"xrootd.pmark map2exp default {EXPERIMENT}",
    ]

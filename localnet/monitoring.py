"""The local network's monitoring: Debian's Prometheus, Alertmanager and node exporter on loopback.

Prometheus scrapes the control plane's and the FTS3 service's ``/metrics`` and the node exporter (which also
serves the sites' XRootD plugin counters from their textfiles), and
evaluates the platform's alert rules (``monitoring/prometheus/rules/``); Alertmanager receives what fires.
All three run as the ``srcnet`` service account when we are root, each recorded by PID like every other
daemon of the state (``pids/prometheus.pid``...), their data and configuration under
``<state>/monitoring/`` (docs/monitoring.md, "The local Prometheus")."""

from __future__ import annotations

import json
import os
import shutil
import signal
import time
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from .processes import (
    ServiceError,
    port_open,
    read_pid,
    running,
    start_daemon,
    stop_daemon,
    wait_for_port,
)
from .stack import VENV_BIN, platform_process
from .state import PROJECT_ROOT, StateDir
from .users import chown_tree, require_binary
from .xrootd import plugin_metrics_dir

RULES_DIR = PROJECT_ROOT / "monitoring" / "prometheus" / "rules"
# Stopped in this order: Prometheus first (it scrapes the others and sends to Alertmanager).
DAEMONS = ("prometheus", "alertmanager", "node-exporter", "xrootd-exporter")


@dataclass(frozen=True)
class Monitoring:
    """Where the running monitoring answers."""

    prometheus_url: str
    alertmanager_url: str
    node_exporter_url: str
    xrootd_exporter_url: str


def prometheus_config(
    *,
    control_plane: str | None,
    fts3: str | None,
    node_exporter: str,
    alertmanager: str,
    xrootd_exporter: str | None = None,
    rule_files: Sequence[Path],
    ca_file: Path | None,
    interval: str = "15s",
    token_file: Path | None = None,
) -> dict[str, Any]:
    """prometheus.yml as a mapping: one job per part of the platform (``srcnet-control-plane``,
    ``srcnet-fts3``, ``srcnet-node``, ``srcnet-xrootd``: the sites' summary reports); ``control_plane`` and
    ``fts3`` are base URLs (http[s]://host:port)."""

    def job(name: str, url: str, **extra: Any) -> dict[str, Any]:
        scheme, _, address = url.partition("://")
        entry: dict[str, Any] = {
            "job_name": name,
            "scheme": scheme,
            "metrics_path": "/metrics",
            "static_configs": [{"targets": [address.rstrip("/")]}],
            **extra,
        }
        if scheme == "https" and ca_file is not None:
            entry["tls_config"] = {"ca_file": str(ca_file)}
        return entry

    auth = {"authorization": {"type": "Bearer", "credentials_file": str(token_file)}} if token_file else {}
    jobs = [job("srcnet-node", f"http://{node_exporter}")]
    if xrootd_exporter:
        jobs.append(job("srcnet-xrootd", f"http://{xrootd_exporter}"))
    if control_plane:
        jobs.append(job("srcnet-control-plane", control_plane, **auth))
    if fts3:
        jobs.append(job("srcnet-fts3", fts3, **auth))
    return {
        "global": {"scrape_interval": interval, "scrape_timeout": interval, "evaluation_interval": interval},
        "alerting": {"alertmanagers": [{"static_configs": [{"targets": [alertmanager]}]}]},
        "rule_files": [str(path) for path in rule_files],
        "scrape_configs": jobs,
    }


def alertmanager_config(*, group_wait: str = "30s") -> dict[str, Any]:
    """One route to one receiver with no integrations: alerts are kept and shown (API, web UI) and go
    nowhere else; a deployment adds its e-mail, chat or pager configuration to the receiver."""
    return {
        "route": {
            "receiver": "operators",
            "group_by": ["alertname", "telescope"],
            "group_wait": group_wait,
            "group_interval": "1m",
            "repeat_interval": "4h",
        },
        "receivers": [{"name": "operators"}],
    }


def ensure_monitoring(
    state: StateDir,
    name: str,
    *,
    control_plane: str | None,
    fts3: str | None,
    rule_files: Sequence[Path] | None = None,
    interval: str = "15s",
    group_wait: str = "30s",
) -> Monitoring:
    """Start the XRootD summary exporter, the node exporter, Alertmanager and Prometheus unless they run;
    (re)write their configuration first, so a second start picks up new targets (Prometheus and
    Alertmanager, running, are told to re-read it)."""
    folder = state.sub("monitoring")
    env, account = platform_process(state, name)
    ports = {daemon: state.port(daemon) for daemon in DAEMONS}
    urls = {daemon: f"127.0.0.1:{port}" for daemon, port in ports.items()}
    # The UDP port the sites report to (localnet/xrootd.py, summary_report_lines).
    summary_udp = f"127.0.0.1:{state.port('xrootd-summary')}"
    rules = list(rule_files) if rule_files is not None else sorted(RULES_DIR.glob("*.yml"))
    ca = state.path / "pki" / "ca.pem"
    config = prometheus_config(
        control_plane=control_plane,
        fts3=fts3,
        node_exporter=urls["node-exporter"],
        alertmanager=urls["alertmanager"],
        xrootd_exporter=urls["xrootd-exporter"],
        rule_files=rules,
        ca_file=ca if ca.exists() else None,
        interval=interval,
    )
    (folder / "prometheus.yml").write_text(yaml.safe_dump(config, sort_keys=False))
    (folder / "alertmanager.yml").write_text(yaml.safe_dump(alertmanager_config(group_wait=group_wait)))
    for data in ("prometheus-data", "alertmanager-data"):
        (folder / data).mkdir(exist_ok=True)
    if account is not None:
        chown_tree(folder, account)
    argv = {
        "xrootd-exporter": [
            str(VENV_BIN / "python"),
            "-m",
            "monitoring.xrootd_exporter",
            f"--udp={summary_udp}",
            f"--http={urls['xrootd-exporter']}",
        ],
        "node-exporter": [
            require_binary("prometheus-node-exporter"),
            f"--web.listen-address={urls['node-exporter']}",
            # The sites' plugin counters (localnet/xrootd.py, plugin_metrics_lines).
            f"--collector.textfile.directory={plugin_metrics_dir(state)}",
        ],
        "alertmanager": [
            require_binary("prometheus-alertmanager"),
            f"--config.file={folder / 'alertmanager.yml'}",
            f"--storage.path={folder / 'alertmanager-data'}",
            f"--web.listen-address={urls['alertmanager']}",
            # One instance, no gossip port opened.
            "--cluster.listen-address=",
        ],
        "prometheus": [
            require_binary("prometheus"),
            f"--config.file={folder / 'prometheus.yml'}",
            f"--storage.tsdb.path={folder / 'prometheus-data'}",
            f"--web.listen-address={urls['prometheus']}",
            "--storage.tsdb.retention.time=7d",
        ],
    }
    for daemon in reversed(DAEMONS):
        pid = read_pid(state, daemon)
        if pid and running(state, daemon) and port_open(ports[daemon]):
            if daemon in ("prometheus", "alertmanager"):  # they re-read their configuration on SIGHUP
                os.kill(pid, signal.SIGHUP)
            continue
        stop_daemon(state, daemon)  # a PID file left by a process that no longer answers
        cwd = PROJECT_ROOT if daemon == "xrootd-exporter" else folder
        pid = start_daemon(state, daemon, argv[daemon], env=env, user=account, cwd=cwd)
        wait_for_port(ports[daemon], pid=pid, what=daemon, timeout=30)
    monitoring = Monitoring(
        prometheus_url=f"http://{urls['prometheus']}",
        alertmanager_url=f"http://{urls['alertmanager']}",
        node_exporter_url=f"http://{urls['node-exporter']}",
        xrootd_exporter_url=f"http://{urls['xrootd-exporter']}",
    )
    _wait_ready(monitoring)
    return monitoring


def _wait_ready(monitoring: Monitoring, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    for url in (f"{monitoring.prometheus_url}/-/ready", f"{monitoring.alertmanager_url}/-/ready"):
        while True:
            try:
                with urllib.request.urlopen(url, timeout=2) as answer:
                    if answer.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise ServiceError(f"{url} not ready within {timeout:.0f} s")
            time.sleep(0.2)


def stop_monitoring(state: StateDir) -> list[str]:
    """Stop what ``ensure_monitoring`` started, by PID; the names of those that ran."""
    return [daemon for daemon in DAEMONS if stop_daemon(state, daemon, timeout=15)]


def reset_monitoring_data(state: StateDir) -> None:
    """Forget the stored series and alerts (the daemons must be stopped)."""
    folder = state.path / "monitoring"
    for data in ("prometheus-data", "alertmanager-data"):
        shutil.rmtree(folder / data, ignore_errors=True)


def get_json(url: str, *, timeout: float = 5.0) -> Any:
    """GET a Prometheus or Alertmanager API URL and decode its JSON answer."""
    with urllib.request.urlopen(url, timeout=timeout) as answer:
        return json.loads(answer.read())

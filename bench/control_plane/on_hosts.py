"""The end-to-end benchmark (end_to_end.py) on booted Debian 12 hosts deployed by the project's Ansible roles:
one database host (PostgreSQL and Redis, roles platform_database and platform_broker) and 1, 2 or 4 worker
hosts (roles srcnet_app and platform_worker), so that the rate's growth with the worker hosts, and the
database's share of the work, show (issue 33, item 3).

    .venv/bin/python bench/control_plane/on_hosts.py --hosts 1 --hosts 2 --hosts 4 [--repeat 1]
        [--products 200] [--files 50] [--slots-per-host 8] [--failure-fraction 0.01] [--timeout 900]
        [--out FILE]

The fleet is the deployment tests' (tests/deploy/conftest.py ``booted_deployment``: database and broker,
control plane with its issuer and monitoring, two storage sites, and as many worker hosts as the largest
``--hosts``), booted from the cached root file system and deployed by site.yml; it is stopped and removed at
the end, also after a failure. Root is needed.

Each measurement (``measure``, also the smoke run of tests/deploy/test_control_plane_on_hosts.py on the
deployment tests' own fleet) runs on a database and a broker database of the benchmark's own on the database
host (``srcnet_bench``, Redis database 2), so the deployed platform's own data is never touched: a pg_hba line
lets the platform's account into it from the hosts' network while the measurement runs, and is removed after.
On each worker host the benchmark puts gfal2's mock plugin (the library and configuration this machine has
installed, copied over SSH: the hosts have no mirror; the roles never install it; removed after) and runs one
Celery worker of the deployed release (``systemd-run`` as the platform's unprivileged account, with the
deployed /etc/srcnet/srcnet.env and, over it, the benchmark's database, broker, mock storage and copy slots);
the first host's worker also runs the beat, as the single-machine benchmark's does. Copies carry no tokens (no
issuer is set for the benchmark's workers), as on the single machine. The copy slots are deployment-wide
(srcnet/workers.py), so they grow with the hosts: ``--slots-per-host`` x hosts.

The driver (registration, the acceptance baseline, the wait, the figures) runs on this machine inside the
hosts' network namespace, a process of its own (``--drive CONFIG``). CPU seconds are read per host: each
host's whole process tree, from this machine's /proc (the hosts are its containers).

All hosts share this machine's cores: on a 2-core machine more worker hosts add processes, not cores, and
the figures that carry to a real deployment are the CPU milliseconds each role spends per file
(docs/deployment.md, "Sizing").
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shlex
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from functools import partial
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
# The project (tests.deploy's hosts) and this folder's modules, whether run as a script or imported.
sys.path.insert(0, str(ROOT))

sys.path.insert(0, str(ROOT / "bench" / "control_plane"))

import cpu  # noqa: E402

from tests.deploy.hosts import SUBNET  # noqa: E402

BENCH_DATABASE = "srcnet_bench"
BENCH_BROKER_DB = 2
BENCH_UNIT = "srcnet-bench-worker"  # and the measurement's start: a unit name never reused
BENCH_ENV = "/run/srcnet-bench.env"
MOCK_PLUGIN = "gfal2-plugin-mock"
MOCK_PLUGIN_MARK = "/run/srcnet-bench.mock-plugin"  # the plugin's files the benchmark put on a host
# The deployed release's commands and environment (roles srcnet_app and platform_worker).
RELEASE_CELERY = "/opt/srcnet/current/venv/bin/celery"
DEPLOYED_ENV = "/etc/srcnet/srcnet.env"
APP_HOME = "/var/lib/srcnet"
BEAT_SCHEDULER = "django_celery_beat.schedulers:DatabaseScheduler"
PG_HBA = "/etc/postgresql/15/main/pg_hba.conf"
# cgroup v1's cpu controller (this machine's; the hosts see it read-only).
CPU_CGROUPS = Path("/sys/fs/cgroup/cpu")
CFS_PERIOD_US = 100_000
HBA_MARK = "# srcnet-bench-database"  # marks the benchmark's pg_hba line, removed after the run


PSQL = "runuser -u postgres -- psql -q -v ON_ERROR_STOP=1"
# The benchmark's pg_hba line gone and its database dropped, as a shell command on the database host.
DATABASE_REMOVED = (
    f"sed -i '/{HBA_MARK}/d' {PG_HBA} && {PSQL} -c 'SELECT pg_reload_conf()'"
    f" && {PSQL} -c 'DROP DATABASE IF EXISTS {BENCH_DATABASE} WITH (FORCE)'"
)


# The files the benchmark put on a host removed (none if it found the package there).
MOCK_PLUGIN_REMOVED = (
    f"test ! -e {MOCK_PLUGIN_MARK} || (cd / && xargs -r rm -f < {MOCK_PLUGIN_MARK} && rm {MOCK_PLUGIN_MARK})"
)


class BenchHostsError(RuntimeError):
    pass


# --- on this machine: the hosts ---


def mock_plugin_archive() -> bytes:
    """gfal2's mock plugin as this machine has it installed (scripts/bootstrap.sh installs it), its library
    and configuration as a tar from ``/``: the hosts have no mirror to install it from, and the test's need
    not reach one."""
    listed = subprocess.run(["dpkg-query", "-L", MOCK_PLUGIN], capture_output=True, text=True, check=False)
    files = [
        p.lstrip("/") for p in listed.stdout.split() if not p.startswith("/usr/share/") and Path(p).is_file()
    ]
    if listed.returncode != 0 or not files:
        raise BenchHostsError(f"{MOCK_PLUGIN} is not installed on this machine: run scripts/bootstrap.sh")
    return subprocess.run(["tar", "-C", "/", "-cf", "-", *files], capture_output=True, check=True).stdout


@contextmanager
def cpu_quotas(deployment: Any, cores: dict[str, float]) -> Iterator[dict[str, float]]:
    """Each host of ``cores`` held to that many of this machine's cores (a CFS quota on a cpu cgroup of its
    own, every process of the host moved into it; what the host forks after stays in it, since its systemd
    cannot move processes in a hierarchy it sees read-only): a host of a given size, emulated. Every
    process moved back and the cgroups removed on leaving; the dict yielded then holds the seconds each host
    was held back (its cgroup's throttled time: the quota bound it)."""
    made: list[Path] = []
    throttled: dict[str, float] = {}
    try:
        for name, share in cores.items():
            group = CPU_CGROUPS / f"srcnet-bench-{name}"
            group.mkdir(exist_ok=True)
            made.append(group)
            (group / "cpu.cfs_period_us").write_text(str(CFS_PERIOD_US))
            (group / "cpu.cfs_quota_us").write_text(str(max(1000, int(share * CFS_PERIOD_US))))
            _move_all(partial(cpu.descendants, deployment.host(name).pid), group)
        yield throttled
    finally:
        for group in made:
            stat = dict(line.split() for line in (group / "cpu.stat").read_text().splitlines())
            throttled[group.name.removeprefix("srcnet-bench-")] = round(int(stat["throttled_time"]) / 1e9, 2)
            _move_all(partial(_members, group), CPU_CGROUPS)
            group.rmdir()


def _members(group: Path) -> set[int]:
    return {int(pid) for pid in (group / "cgroup.procs").read_text().split()}


def _move_all(processes: Callable[[], set[int]], group: Path) -> None:
    """Every process ``processes()`` lists into ``group``, again until none is left out (a fork between the
    listing and the move leaves its child where its parent was)."""
    for _ in range(10):
        outside = processes() - _members(group)
        if not outside:
            return
        for pid in outside:
            with suppress(OSError):  # it ended meanwhile
                (group / "cgroup.procs").write_text(str(pid))
    raise BenchHostsError(f"processes still outside {group} after ten passes")


def measure(deployment: Any, workers: list[str], params: dict[str, Any], label: str) -> dict[str, Any]:
    """One run of the benchmark on ``deployment`` (tests/deploy/conftest.py's Deployment, site.yml applied)
    with the worker hosts ``workers``: the driver's result (raises BenchHostsError if the driver fails)."""
    fleet = deployment.fleet
    folder = fleet.workdir / f"bench-{label}"
    folder.mkdir(parents=True, exist_ok=True)
    config = {
        "label": label,
        "params": params,
        "ssh": ["ssh", *fleet.ssh_options()],
        # Each host's nspawn process: its tree is the host's every process.
        "database": {
            "name": "db",
            "address": deployment.host("db").address,
            "pid": deployment.host("db").pid,
        },
        "workers": [
            {"name": name, "address": deployment.host(name).address, "pid": deployment.host(name).pid}
            for name in workers
        ],
        "db_password": deployment.secrets["vault_srcnet_db_password"],
        "broker_password": deployment.secrets["vault_srcnet_broker_password"],
        "subnet": f"{SUBNET}.0/24",
        "folder": str(folder),
    }
    path = folder / "config.json"
    path.touch(mode=0o600)
    path.write_text(json.dumps(config))
    result_path = folder / "result.json"
    result_path.unlink(missing_ok=True)
    timeout = float(params["timeout"]) + 600  # the run's own bound, and its set-up (migrations, workers)
    cores = {name: float(params["worker_cores"]) for name in workers if params.get("worker_cores")}
    if params.get("database_cores"):
        cores["db"] = float(params["database_cores"])
    try:
        with cpu_quotas(deployment, cores) as throttled:
            completed = _drive_in_hosts_network(fleet.lan, path, timeout)
    finally:
        remove_leftovers(deployment, workers)
    (folder / "driver.log").write_text(completed.stdout + completed.stderr)
    if completed.returncode != 0 or not result_path.exists():
        raise BenchHostsError(
            f"the driver failed (exit {completed.returncode}; {folder / 'driver.log'}):\n"
            f"{completed.stderr[-3000:]}"
        )
    result: dict[str, Any] = json.loads(result_path.read_text())
    result["cpu_quota_cores"] = cores
    result["cpu_throttled_s"] = throttled
    return result


def remove_leftovers(deployment: Any, workers: list[str]) -> None:
    """What the measurement leaves, also when its driver was killed (its timeout) or failed: the benchmark's
    workers, their environment file and gfal2's mock plugin on the worker hosts, its pg_hba line and
    database. Idempotent."""
    for name in workers:
        deployment.ssh(
            name,
            [
                "sh",
                "-c",
                f"systemctl stop '{BENCH_UNIT}-*'; rm -f {BENCH_ENV}; {MOCK_PLUGIN_REMOVED}",
            ],
            check=False,
        )
    deployment.ssh("db", ["sh", "-c", DATABASE_REMOVED], check=False)


def _drive_in_hosts_network(lan: str, config: Path, timeout: float) -> subprocess.CompletedProcess[str]:
    """This file's driver (``--drive``) run inside the hosts' network namespace."""
    return subprocess.run(
        [
            "ip",
            "netns",
            "exec",
            lan,
            sys.executable,
            str(Path(__file__).resolve()),
            "--drive",
            str(config),
        ],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        cwd=ROOT,
    )


# --- inside the hosts' network: the driver ---


class Hosts:
    """SSH to the hosts from inside their network (the driver's namespace)."""

    def __init__(self, config: dict[str, Any]) -> None:
        self.config = config
        self.ssh_argv: list[str] = config["ssh"]
        self.started = int(time.time())
        self.unit = f"{BENCH_UNIT}-{self.started}"

    def run(
        self, address: str, command: str, *, stdin: bytes | None = None, timeout: float = 120
    ) -> subprocess.CompletedProcess[bytes]:
        completed = subprocess.run(
            [*self.ssh_argv, f"root@{address}", command],
            input=stdin,
            capture_output=True,
            timeout=timeout,
            check=False,
        )
        if completed.returncode != 0:
            raise BenchHostsError(
                f"{address}: {command[:200]} exited {completed.returncode}: "
                f"{completed.stderr.decode(errors='replace')[-2000:]}"
            )
        return completed


def open_database(hosts: Hosts) -> None:
    """The benchmark's database, empty, owned by the platform's account, which may reach it from the hosts'
    network (one pg_hba line, marked, removed by ``close_database``)."""
    db = hosts.config["database"]["address"]
    subnet = hosts.config["subnet"]
    line = f"host {BENCH_DATABASE} srcnet {subnet} scram-sha-256 {HBA_MARK}"
    hosts.run(
        db,
        f"{PSQL} -c {shlex.quote(f'DROP DATABASE IF EXISTS {BENCH_DATABASE} WITH (FORCE)')}"
        f" -c {shlex.quote(f'CREATE DATABASE {BENCH_DATABASE} OWNER srcnet')}"
        f" && (grep -qF {shlex.quote(HBA_MARK)} {PG_HBA} || echo {shlex.quote(line)} >> {PG_HBA})"
        f" && {PSQL} -c 'SELECT pg_reload_conf()'",
    )


def close_database(hosts: Hosts) -> None:
    """The pg_hba line gone and the benchmark's database dropped (the deployed platform's untouched)."""
    hosts.run(hosts.config["database"]["address"], DATABASE_REMOVED)


def driver_environment(config: dict[str, Any]) -> dict[str, str]:
    """The settings the driver and the benchmark's workers share (srcnet/settings.py reads SRCNET_*)."""
    params = config["params"]
    db = config["database"]["address"]
    slots = int(params["slots_per_host"]) * len(config["workers"])
    return {
        "SRCNET_DB_HOST": db,
        "SRCNET_DB_PORT": "5432",
        "SRCNET_DB_NAME": BENCH_DATABASE,
        "SRCNET_DB_USER": "srcnet",
        "SRCNET_DB_PASSWORD": config["db_password"],
        "SRCNET_REDIS_URL": f"redis://:{config['broker_password']}@{db}:6379/{BENCH_BROKER_DB}",
        "SRCNET_MOCK_STORAGE": "1",
        "SRCNET_MOCK_FAILURE_FRACTION": str(params["failure_fraction"]),
        "SRCNET_COPY_SLOTS": str(slots),
        "SRCNET_PUSH_INTERVAL": str(params["push_interval"]),
        "SRCNET_TRANSFER_SESSION_FILES": str(params["session_files"]),
        # As on the single machine: copies without tokens, no flow accounting against a collector.
        "SRCNET_TOKEN_ISSUER": "",
        "SRCNET_FIREFLIES_URL": "",
    }


def start_workers(hosts: Hosts, environment: dict[str, str]) -> None:
    """gfal2's mock plugin installed (removed after by ``remove_leftovers``) and one worker of the deployed
    release started on each worker host (the first with the beat); returns once every worker answers a
    ping."""
    from celery import current_app

    from srcnet.workers import worker_concurrency

    plugin = mock_plugin_archive()
    slots = int(hosts.config["params"]["slots_per_host"])
    # The driver's own values, except what the deployed file already says of this host (its secret key...).
    env_file = "".join(f"{key}={value}\n" for key, value in sorted(environment.items()))
    names = []
    for index, worker in enumerate(hosts.config["workers"]):
        address = worker["address"]
        hosts.run(
            address,
            # Unless the host has the package: its files put in place, and listed for their removal.
            f"dpkg -s {MOCK_PLUGIN} >/dev/null 2>&1 || test -e {MOCK_PLUGIN_MARK}"
            f" || tar -C / -xvf - > {MOCK_PLUGIN_MARK}",
            stdin=plugin,
        )
        hosts.run(
            address,
            f"umask 027 && cat > {BENCH_ENV} && chgrp srcnet {BENCH_ENV}",
            stdin=env_file.encode(),
        )
        name = f"bench@{worker['name']}"
        names.append(name)
        argv = [
            RELEASE_CELERY, "-A", "srcnet", "worker", "--loglevel", "INFO", "--pool", "prefork",
            "--concurrency", str(worker_concurrency(slots)), "--hostname", name,
            "--without-gossip", "--without-mingle",
        ]  # fmt: skip
        if index == 0:
            argv += ["--beat", "--scheduler", BEAT_SCHEDULER]
        properties = [
            "User=srcnet",
            "Group=srcnet",
            f"EnvironmentFile={DEPLOYED_ENV}",
            f"EnvironmentFile={BENCH_ENV}",  # the later file's values win
            f"WorkingDirectory={APP_HOME}",
            "KillMode=mixed",
            "TimeoutStopSec=30",
        ]
        hosts.run(
            address,
            f"systemd-run --unit {hosts.unit} --collect "
            + " ".join(f"--property {shlex.quote(p)}" for p in properties)
            + " "
            + " ".join(shlex.quote(a) for a in argv),
        )
    deadline = time.monotonic() + 180
    answered: set[str] = set()
    while time.monotonic() < deadline:
        for reply in current_app.control.ping(timeout=2.0) or []:
            answered.update(reply)
        if answered >= set(names):
            return
    raise BenchHostsError(f"workers that never answered: {sorted(set(names) - answered)}")


def stop_workers(hosts: Hosts, folder: Path) -> dict[str, Path]:
    """Every benchmark worker stopped, its journal kept: {host: its log} (the worker's seconds by task)."""
    logs = {}
    for worker in hosts.config["workers"]:
        address = worker["address"]
        log = logs[worker["name"]] = folder / f"worker-{worker['name']}.log"
        try:
            hosts.run(address, f"systemctl stop {hosts.unit}; rm -f {BENCH_ENV}", timeout=90)
            journal = hosts.run(address, f"journalctl --no-pager -o cat -u {hosts.unit}", timeout=60)
            log.write_text(journal.stdout.decode(errors="replace"))
        except BenchHostsError as error:
            log.write_text(f"# {worker['name']}: {error}\n")
    return logs


def tasks_by_host(logs: dict[str, Path]) -> dict[str, dict[str, int]]:
    """How many of each task every worker host ran (a host that ran none took no share of the work)."""
    from figures import _TASK_LINE

    counts: dict[str, dict[str, int]] = {}
    for name, log in logs.items():
        counts[name] = {}
        for match in _TASK_LINE.finditer(log.read_text(errors="replace")):
            counts[name][match.group(1)] = counts[name].get(match.group(1), 0) + 1
    return counts


def drive(config_path: Path) -> int:
    config = json.loads(config_path.read_text())
    params = config["params"]
    folder = Path(config["folder"])
    hosts = Hosts(config)
    environment = driver_environment(config)
    os.environ.update(environment)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "srcnet.settings")
    open_database(hosts)
    try:
        import django

        django.setup()
        from django.core.management import call_command
        from django.utils import timezone
        from end_to_end import (
            acceptance_baseline,
            mock_storage_everywhere,
            register_backlog,
            wait_until_accounted,
        )
        from figures import accounted, timeline, worker_time

        from srcnet.task_queue import broker_redis
        from topology.services.importer import import_topology

        call_command("migrate", verbosity=0)
        import_topology(text=(ROOT / "topology" / "data" / "reference.yaml").read_text())
        mock_storage_everywhere()
        broker_redis().flushdb()
        baseline = acceptance_baseline(int(params["baseline_files"]))
        scope = "e2e"
        logs: dict[str, Path] = {}
        try:
            start_workers(hosts, environment)
            pids = {f"host_{config['database']['name']}": int(config["database"]["pid"])}
            pids.update({f"host_{w['name']}": int(w["pid"]) for w in config["workers"]})
            pids["bench"] = os.getpid()
            # The platform idle first (the beat's periodic tasks, the workers' broker polling, the hosts' own
            # services): what a run costs whatever its rate, apart from what each file costs.
            idle_before = cpu.snapshot(pids)
            idle_t0 = time.monotonic()
            time.sleep(float(params.get("idle_seconds", 20)))
            idle = cpu.cores_busy(idle_before, cpu.snapshot(pids), time.monotonic() - idle_t0)
            before = cpu.snapshot(pids)
            started = timezone.now()
            registration_s = register_backlog(int(params["products"]), int(params["files"]), scope)
            finished = wait_until_accounted(float(params["timeout"]), scope)
            after = cpu.snapshot(pids)
        finally:
            logs = stop_workers(hosts, folder)
        log = folder / "workers.log"
        log.write_text("".join(path.read_text() for path in logs.values()))
        figures = timeline(scope, started)
        files = figures.get("files_finished", 0)
        rate = figures.get("files_per_second", 0.0)
        result = {
            "label": config["label"],
            "worker_hosts": len(config["workers"]),
            "copy_slots": int(environment["SRCNET_COPY_SLOTS"]),
            **{k: params[k] for k in ("products", "files", "failure_fraction", "push_interval")},
            "registration_s": round(registration_s, 2),
            "all_accounted": finished,
            "accounted": accounted(scope),
            **figures,
            "worker_time": worker_time(log, files),
            "tasks_by_host": tasks_by_host(logs),
            # CPU ms per file made AVAILABLE by host (its whole process tree): the database host is
            # PostgreSQL and Redis; "other" is the rest of the machine (the other hosts, the driver's
            # registration is "bench").
            "cpu_ms_per_file": cpu.per_file(before, after, files),
            # Each host's cores busy while the platform was idle, before the products were registered.
            "idle_cores": idle,
            "baseline_acceptance_files_per_second": round(baseline, 1),
            "rate_to_baseline": round(rate / baseline, 4) if baseline else None,
        }
        from django.db import connections

        connections.close_all()
    finally:
        close_database(hosts)
    (folder / "result.json").write_text(json.dumps(result, indent=1) + "\n")
    return 0


# --- the command ---


def run_fleet(args: argparse.Namespace, out: Path) -> list[dict[str, Any]]:
    """Boot and deploy the fleet with ``max(args.hosts)`` worker hosts, then each measurement in turn."""
    from tests.deploy.conftest import LAYOUT, booted_deployment

    most = max(args.hosts)
    layout = {name: groups for name, groups in LAYOUT.items() if "workers" not in groups}
    workers = [f"w{i}" for i in range(1, most + 1)]
    layout.update({name: ["workers"] for name in workers})
    params = {
        "products": args.products,
        "files": args.files,
        "slots_per_host": args.slots_per_host,
        "failure_fraction": args.failure_fraction,
        "push_interval": args.push_interval,
        "session_files": args.session_files,
        "timeout": args.timeout,
        "baseline_files": 1000,
        "worker_cores": args.worker_cores,
        "database_cores": args.database_cores,
    }
    results = []
    workdir = Path(f"/var/tmp/srcnet-bench-hosts-{os.getpid()}")
    with booted_deployment(workdir, layout) as deployment:
        deployed = deployment.playbook(label="bench-on-hosts")
        if deployed.returncode != 0:
            raise BenchHostsError(f"site.yml failed ({deployed.seconds:.0f} s):\n{deployed.output[-4000:]}")
        for repeat in range(args.repeat):
            for count in args.hosts:
                label = f"{count}-hosts-{repeat + 1}"
                result = measure(deployment, workers[:count], params, label)
                result["site_yml_s"] = round(deployed.seconds, 1)
                results.append(result)
                write_results(out, results)
                print(
                    json.dumps({k: result.get(k) for k in ("label", "files_per_second", "cpu_ms_per_file")})
                )
    return results


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--drive", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--hosts", type=int, action="append", help="worker hosts of a run (repeatable)")
    parser.add_argument("--repeat", type=int, default=1, help="the series of --hosts this many times")
    from end_to_end import add_workload_arguments

    add_workload_arguments(parser)
    parser.add_argument("--slots-per-host", type=int, default=8, help="copies each worker host runs at once")
    parser.add_argument(
        "--worker-cores",
        type=float,
        help="hold each worker host to this many of the machine's cores (a CFS quota; default: no limit)",
    )
    parser.add_argument(
        "--database-cores", type=float, help="hold the database host to this many cores (default: no limit)"
    )
    parser.add_argument("--out", type=Path, help="the result file (default bench/control_plane/results/)")
    args = parser.parse_args()
    if args.drive:
        return drive(args.drive)
    args.hosts = args.hosts or [1, 2, 4]
    if min([*args.hosts, args.products, args.files, args.slots_per_host, args.repeat]) < 1:
        parser.error("--hosts, --products, --files, --slots-per-host and --repeat must be positive")
    if not 0 <= args.failure_fraction < 1:
        parser.error("--failure-fraction must be at least 0 and below 1")
    if any(cores is not None and cores <= 0 for cores in (args.worker_cores, args.database_cores)):
        parser.error("--worker-cores and --database-cores must be positive")
    out = args.out or ROOT / "bench" / "control_plane" / "results" / f"on_hosts-{dt.date.today()}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    results = run_fleet(args, out)
    return 0 if results and all(r["all_accounted"] for r in results) else 1


def write_results(out: Path, results: list[dict[str, Any]]) -> None:
    """The result file, rewritten after each measurement (a later failure keeps the earlier ones)."""
    document = {
        "machine": os.uname().nodename,
        "cores": os.cpu_count(),
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "runs": results,
    }
    out.write_text(json.dumps(document, indent=1) + "\n")


if __name__ == "__main__":
    raise SystemExit(main())

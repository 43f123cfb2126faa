"""The smoke run of bench/control_plane/on_hosts.py (the control plane end to end on booted hosts, issue 33
item 3) on the deployment tests' own fleet, at a tiny size: products registered on a database of the
benchmark's own on the database host, planned by the beat of one worker, copied (gfal2's mock plugin) by the
workers of both worker hosts (each held to half a core), every file accounted for; the CPU of each host read;
and the deployed platform left as it was (the pg_hba line and the database gone, no benchmark worker
left running, gfal2's mock plugin removed, no quota left on this machine)."""

from __future__ import annotations

from bench.control_plane.on_hosts import (
    BENCH_DATABASE,
    BENCH_UNIT,
    CPU_CGROUPS,
    HBA_MARK,
    MOCK_PLUGIN_MARK,
    PG_HBA,
    measure,
)

from .conftest import DEPLOY_TIMEOUT, Deployment

pytestmark = DEPLOY_TIMEOUT

PRODUCTS = 6
FILES = 5
COPY_TASKS = ("transfers.execute_session", "transfers.execute_attempt")


def test_the_benchmark_runs_on_two_worker_hosts_and_leaves_the_deployment_as_it_was(
    deployment: Deployment, deployed: object
) -> None:
    params = {
        "products": PRODUCTS,
        "files": FILES,
        "slots_per_host": 4,
        "failure_fraction": 0.1,
        "push_interval": 2.0,
        "session_files": 5,
        "timeout": 240,
        "baseline_files": 50,
        "idle_seconds": 2,
        # Each worker host held to half a core (the benchmark's emulated host size), the database not.
        "worker_cores": 0.5,
        "database_cores": None,
    }
    result = measure(deployment, ["w1", "w2"], params, "smoke")

    assert result["all_accounted"], result
    accounted = result["accounted"]
    # The reference topology pushes each product to its regional centres: every copy AVAILABLE or FAILED
    # with a reason (a tenth of the attempts fail, and are retried), none twice, none stuck.
    assert accounted["destination_replicas"] >= PRODUCTS, accounted
    assert sum(accounted["states"].values()) == accounted["destination_replicas"], accounted
    assert set(accounted["states"]) <= {"available", "failed"}, accounted
    assert accounted["states"].get("available", 0) >= 1, accounted
    assert accounted["failed_without_reason"] == 0 and accounted["available_twice"] == 0, accounted
    assert result["files_per_second"] > 0 and result["baseline_acceptance_files_per_second"] > 0, result
    assert result["worker_hosts"] == 2 and result["copy_slots"] == 8, result
    # Both hosts' workers took copies (the dispatcher's tasks go to whichever worker is free).
    copies = {
        host: sum(tasks.get(task, 0) for task in COPY_TASKS)
        for host, tasks in result["tasks_by_host"].items()
    }
    assert set(copies) == {"w1", "w2"} and all(copies.values()), result["tasks_by_host"]
    # Each host's CPU was read (its whole process tree): the database host's and both workers'.
    cpu = result["cpu_ms_per_file"]
    assert cpu["host_db"] > 0 and cpu["host_w1"] > 0 and cpu["host_w2"] > 0, cpu
    assert {"host_db", "host_w1", "host_w2"} <= set(result["idle_cores"]), result["idle_cores"]
    assert result["cpu_quota_cores"] == {"w1": 0.5, "w2": 0.5}, result["cpu_quota_cores"]
    assert set(result["cpu_throttled_s"]) == {"w1", "w2"}, result["cpu_throttled_s"]

    # Nothing of the benchmark is left on the deployment, nor of its quotas on this machine.
    assert not list(CPU_CGROUPS.glob("srcnet-bench-*"))
    hba = deployment.ssh("db", ["cat", PG_HBA]).stdout
    assert HBA_MARK not in hba
    databases = deployment.ssh(
        "db", ["runuser", "-u", "postgres", "--", "psql", "-Atc", "SELECT datname FROM pg_database"]
    ).stdout.split()
    assert BENCH_DATABASE not in databases and "srcnet" in databases, databases
    for host in ("w1", "w2"):
        units = deployment.ssh(
            host, ["systemctl", "list-units", "--all", "--plain", "--no-legend", f"{BENCH_UNIT}-*"]
        ).stdout
        assert " active " not in units and " activating " not in units, (host, units)
        plugins = deployment.ssh(
            host, ["sh", "-c", f"ls /usr/lib/*/gfal2-plugins/; ls {MOCK_PLUGIN_MARK}"], check=False
        )
        assert "mock" not in plugins.stdout and "No such file" in plugins.stderr, (host, plugins.stdout)
        worker = deployment.ssh(host, ["systemctl", "is-active", "srcnet-worker"], check=False).stdout.strip()
        assert worker == "active", (host, worker)

"""The platform's FTS3-compatible service for the Rucio end-to-end tests: HTTPS with client certificates.

The same gunicorn command line as ``localnet.fts3.ensure_fts3`` (``srcnet.fts3_urls`` over TLS with the
local CA's host certificate, an optional client certificate checked against the CA), but one per pytest
run, on a free port, with the run's Django test database and a Celery queue of its own:
``ensure_fts3`` keeps one service per state, and the ``test`` state is shared by concurrent pytest runs
whose test databases differ.
"""

from __future__ import annotations

import os
import time

from localnet.fts3 import service_key, token_audience_env
from localnet.pki import ensure_pki, host_credentials
from localnet.processes import ServiceError, is_alive, stop_pid
from localnet.stack import VENV_BIN, platform_process, spawn_platform_process, wait_for_worker, worker_argv
from localnet.state import StateDir, free_port
from localnet.users import chown_tree, service_account


def isolated_env(state: StateDir, db_name: str, queue: str) -> dict[str, str]:
    """The environment of this run's FTS3 service and its worker: the run's test database and a Celery
    queue of its own (the test state's Redis is shared by concurrent pytest runs and their workers)."""
    env, _ = platform_process(state, state.path.name)
    env["SRCNET_DB_NAME"] = db_name
    env["SRCNET_CELERY_QUEUE"] = queue
    env["SRCNET_TRANSFER_RETRY_BACKOFF"] = "0.5"
    # The tests drive the push loop's cycles themselves (tests/rucio/test_transfers.py). A cycle of the
    # beat's own would plan every product a test registers by its telescope's policy, and so place a
    # policy replica where a scientist's rule was meant to be the only reason for one (CI, 2026-11-27:
    # tests/rucio/test_scientist_rule.py found 'SKA1-Low-1-replica-by-share' on the rule's replica).
    env["SRCNET_PUSH_INTERVAL"] = str(7 * 24 * 3600)
    env["SRCNET_PUSH_ON_SETTLE"] = "0"
    return env


class TransferWorker:
    """A real Celery worker (with the periodic dispatch sweep) on the run's own queue and database."""

    def __init__(self, state: StateDir, env: dict[str, str]) -> None:
        argv = worker_argv(f"pytest-rucio-{os.getpid()}@%h")
        account = service_account()
        # Beat's schedule file is written by the worker, as the platform's account.
        schedules = state.sub("celery")
        if account:
            chown_tree(schedules, account)
        argv += ["--beat", "--schedule", str(schedules / f"beat-pytest-rucio-{os.getpid()}")]
        self.log = state.sub("log") / f"pytest-rucio-worker-{os.getpid()}.log"
        self.proc = spawn_platform_process(argv, env, account, self.log)
        wait_for_worker(self.proc, self.log)

    def stop(self) -> None:
        stop_pid(self.proc.pid, timeout=20)


class Fts3Service:
    def __init__(self, state: StateDir, env: dict[str, str], port: int | None = None) -> None:
        self.state = state
        self.port = port or free_port()
        self.url = f"https://127.0.0.1:{self.port}"
        account = service_account()
        cert, _ = host_credentials(state)
        key = service_key(state, account)
        ca = ensure_pki(state).parent / "ca.pem"
        env = {**env, "SRCNET_ROOT_URLCONF": "srcnet.fts3_urls", **token_audience_env()}
        argv = [
            str(VENV_BIN / "gunicorn"),
            # Stopped by PID: no control socket (its default path is under $HOME).
            "--no-control-socket",
            "--bind",
            f"127.0.0.1:{self.port}",
            "--workers",
            "2",
            "--timeout",
            "120",
            "--certfile",
            str(cert),
            "--keyfile",
            str(key),
            "--ca-certs",
            str(ca),
            "--cert-reqs",
            "1",  # ssl.CERT_OPTIONAL: a client certificate is checked against the CA when one is sent
            "srcnet.wsgi:application",
        ]
        self.log = state.sub("log") / f"pytest-fts3-{os.getpid()}.log"
        self.proc = spawn_platform_process(argv, env, account, self.log)
        self._wait()

    def _wait(self, timeout: float = 60.0) -> None:
        import socket

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not is_alive(self.proc.pid):
                raise ServiceError(f"FTS3 service exited; see {self.log}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    if b"Booting worker" in self.log.read_bytes():
                        return
            except OSError:
                pass
            time.sleep(0.2)
        raise ServiceError(f"FTS3 service not up after {timeout} s; see {self.log}")

    def stop(self) -> None:
        stop_pid(self.proc.pid, timeout=20)

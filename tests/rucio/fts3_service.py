"""The platform's FTS3-compatible service for the Rucio end-to-end tests: HTTPS with client certificates.

Started here until ``localnet.fts3.ensure_fts3``/``localnet.pki.ensure_client_cert`` exist: gunicorn serving
``srcnet.fts3_urls`` over TLS (the local CA's host certificate), asking for an optional client certificate
signed by the local CA, on the pytest run's Django test database; and a client certificate for the Rucio
conveyor (``[conveyor] usercert``), whose DN the tests register as a ``ClientIdentity``.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from localnet.pki import ensure_pki, host_credentials
from localnet.processes import ServiceError, is_alive, run, stop_pid
from localnet.stack import VENV_BIN, service_env, worker_argv
from localnet.state import PROJECT_ROOT, StateDir, free_port


def client_cert(state: StateDir, name: str) -> tuple[Path, str]:
    """A PEM with certificate and key for ``name``, signed by the local CA; and its subject DN."""
    ensure_pki(state)
    folder = state.sub("pki", "clients")
    pem = folder / f"{name}.pem"
    dn = f"/O=srcnet-local/CN={name}"
    if not pem.exists():
        key, csr, crt = folder / f"{name}.key", folder / f"{name}.csr", folder / f"{name}.crt"
        ext = folder / "client.ext"
        ext.write_text("extendedKeyUsage=clientAuth\n")
        run(
            [
                "openssl",
                "req",
                "-newkey",
                "rsa:2048",
                "-nodes",
                "-subj",
                dn,
                "-keyout",
                str(key),
                "-out",
                str(csr),
            ]
        )
        pki = state.path / "pki"
        run(
            [
                "openssl",
                "x509",
                "-req",
                "-in",
                str(csr),
                "-CA",
                str(pki / "ca.pem"),
                "-CAkey",
                str(pki / "ca.key"),
                "-CAcreateserial",
                "-days",
                "30",
                "-extfile",
                str(ext),
                "-out",
                str(crt),
            ]
        )
        pem.write_text(crt.read_text() + key.read_text())
        pem.chmod(0o600)
    return pem, dn


def isolated_env(state: StateDir, db_name: str, queue: str) -> dict[str, str]:
    """The environment of this run's FTS3 service and its worker: the run's test database and a Celery
    queue of its own (the test state's Redis is shared by concurrent pytest runs and their workers)."""
    env = service_env(state, state.path.name)
    env["SRCNET_DB_NAME"] = db_name
    env["SRCNET_CELERY_QUEUE"] = queue
    env["SRCNET_TRANSFER_RETRY_BACKOFF"] = "0.5"
    return env


class TransferWorker:
    """A real Celery worker (with the periodic dispatch sweep) on the run's own queue and database."""

    def __init__(self, state: StateDir, env: dict[str, str]) -> None:
        argv = worker_argv(f"pytest-rucio-{os.getpid()}@%h", concurrency=2)
        argv += ["--beat", "--schedule", str(state.sub("celery") / f"beat-pytest-rucio-{os.getpid()}")]
        self.log = state.sub("log") / f"pytest-rucio-worker-{os.getpid()}.log"
        with open(self.log, "wb") as out:
            self.proc = subprocess.Popen(
                argv, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=PROJECT_ROOT, start_new_session=True
            )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if not is_alive(self.proc.pid):
                raise ServiceError(f"celery worker exited; see {self.log}")
            if b" ready." in self.log.read_bytes()[-20000:]:
                return
            time.sleep(0.2)
        raise ServiceError(f"celery worker not ready; see {self.log}")

    def stop(self) -> None:
        stop_pid(self.proc.pid, timeout=20)


class Fts3Service:
    def __init__(self, state: StateDir, env: dict[str, str]) -> None:
        self.state = state
        self.port = free_port()
        self.url = f"https://127.0.0.1:{self.port}"
        cert, key = host_credentials(state)
        ca = ensure_pki(state).parent / "ca.pem"
        env = {**env, "SRCNET_ROOT_URLCONF": "srcnet.fts3_urls"}
        argv = [
            str(VENV_BIN / "gunicorn"),
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
        with open(self.log, "wb") as out:
            self.proc = subprocess.Popen(
                argv, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=PROJECT_ROOT, start_new_session=True
            )
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

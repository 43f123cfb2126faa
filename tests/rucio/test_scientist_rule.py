"""A scientist's own rule, as production runs it: a non-root Rucio account makes it with the ordinary
``rucio`` command-line client, and nothing else is done by hand.

Rucio's running daemons (submitter, poller, finisher) carry it out through the platform's FTS3 endpoint;
the platform's worker copies the files between real XRootD servers; its beat follows the rule into a
replica, which the REST API shows, and the transfer is listed with the others.
"""

from __future__ import annotations

import os
import re
import secrets
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from localnet.rucio import RucioServer
from replicas.rucio import RucioAdapter

from ..conftest import wait_until
from ..integration.conftest import adler32_of
from .helpers import assert_copied_with_rucios_tokens, product_on_disk, rule_outcome

pytestmark = pytest.mark.integration

# The ordinary Rucio client of the platform's venv (rucio-clients 41.5.1).
RUCIO_CLI = Path(sys.executable).parent / "rucio"
DESTINATION = "AUSRC_DISK"


class Scientist:
    """A USER account of the Rucio server with a userpass identity, and a client configuration for it."""

    def __init__(self, account: str, config: Path) -> None:
        self.account = account
        self.config = config

    def rucio(self, *args: str, timeout: float = 60) -> str:
        """Run the ``rucio`` command line as this scientist; its standard output."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("RUCIO_")}
        env["RUCIO_CONFIG"] = str(self.config)
        proc = subprocess.run(
            [str(RUCIO_CLI), *args], env=env, capture_output=True, text=True, timeout=timeout, check=False
        )
        assert proc.returncode == 0, f"rucio {' '.join(args)}: {proc.stderr[-2000:]}"
        return proc.stdout


@pytest.fixture
def rucio_scientist(rucio: RucioAdapter, rucio_server: RucioServer, tmp_path: Path) -> Iterator[Scientist]:
    """Made by the Rucio administrator (root): the account, its password identity, a quota at the
    destination; the scientist's own client file names nothing else."""
    account, password = f"sci{uuid.uuid4().hex[:10]}", secrets.token_urlsafe(16)
    email = f"{account}@example.org"
    rucio.client.add_account(account, "USER", email)
    rucio.client.add_identity(account, account, "USERPASS", email, password=password)
    rucio.client.set_local_account_limit(account, DESTINATION, -1)
    config = tmp_path / "rucio.cfg"
    config.write_text(
        "[client]\n"
        f"rucio_host = {rucio_server.url}\n"
        f"auth_host = {rucio_server.url}\n"
        "auth_type = userpass\n"
        f"username = {account}\n"
        f"password = {password}\n"
        f"account = {account}\n"
        "request_retries = 1\n"
    )
    config.chmod(0o600)
    yield Scientist(account, config)


def test_a_scientists_rule_made_with_the_rucio_client_is_carried_out_and_shown(  # type: ignore[no-untyped-def]
    rucio_sites,
    rucio: RucioAdapter,
    conveyor_cert,
    scope,
    rucio_scientist: Scientist,
    scientist_client,
    operator_client,
    rucio_token_client,
):
    scientist = rucio_scientist
    # An observation the platform registered (files on the telescope's SDP storage, known to Rucio).
    product = product_on_disk(rucio_sites, scope, {"vis.ms": 384 * 1024, "flags.ms": 96 * 1024})
    rucio.register_product(product)
    assert scientist.account in scientist.rucio("whoami")

    out = scientist.rucio(
        "rule",
        "add",
        "--copies",
        "1",
        "--rses",
        DESTINATION,
        "--activity",
        "SKA User Request",
        "--comment",
        "for my analysis",
        f"{scope}:{product.name}",
    )
    rule_ids = re.findall(r"\b[0-9a-f]{32}\b", out)
    assert len(rule_ids) == 1, out
    rule_id = rule_ids[0]
    assert rucio.rule(rule_id).account == scientist.account

    # No further step: Rucio's daemons carry the rule out.
    assert rule_outcome(rucio, rule_id, timeout=150) == "OK"
    shown = scientist.rucio("rule", "show", rule_id)
    assert "OK" in shown and scientist.account in shown, shown
    for f in product.files.all():
        copy = rucio_sites[DESTINATION].local_path(f"srcnet/{f.relative_path}")
        assert copy.stat().st_size == f.size_bytes
        assert adler32_of(copy) == f.adler32

    # The platform follows the rule by itself and shows the replica it made.
    def replica_shown() -> dict[str, object] | None:
        answer = scientist_client.get(
            "/api/replicas/replicas/", {"product": product.pk, "endpoint": DESTINATION}
        )
        assert answer.status_code == 200, answer.content
        rows = answer.json()["results"]
        return rows[0] if rows and rows[0]["state"] == "available" else None

    replica = wait_until(replica_shown, timeout=60, what="the scientist's replica in the platform's API")
    assert replica["policy"] is None
    assert f"rucio rule {rule_id} created by account {scientist.account}" in str(replica["reason"])

    # The copy went through the platform's FTS3 endpoint: a job of the scientist's activity, listed as any
    # other, submitted by the conveyor's identity, its files verified.
    answer = operator_client.get("/api/transfers/jobs/", {"activity": "SKA User Request"})
    jobs = [j for j in answer.json()["results"] if product.name in str(j["files"])]
    assert len(jobs) == 1, answer.json()
    job = jobs[0]
    assert job["state"] == "FINISHED" and job["submitter"] == "rucio-conveyor", job
    assert sorted(f["state"] for f in job["files"]) == ["FINISHED", "FINISHED"], job["files"]
    # ... with Rucio's own tokens, as with SKA-IAM: the conveyor's at the FTS3 endpoint, one per copy's end.
    assert_copied_with_rucios_tokens(scope, rucio_token_client, copies=2)
    # Not shown to the scientist: a job of no product is its submitter's (the conveyor's) and the operators'.
    theirs = scientist_client.get("/api/transfers/jobs/", {"activity": "SKA User Request"}).json()["results"]
    assert job["job_id"] not in {j["job_id"] for j in theirs}

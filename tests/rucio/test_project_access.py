"""Rucio keeps a proprietary product to its project's members, as the platform does (issue 31): with the plain
``rucio`` client, a scientist outside the project cannot ask for the product's dataset or any of its files,
a member can, a member who leaves no longer can, and once the proprietary period is over anyone can. Rucio's
server decides it (the platform's policy package, rucio/policy/ska_rucio_policy/permission.py) from what the
platform writes: the dataset's project and proprietary end, each user's Rucio account's projects."""

from __future__ import annotations

import datetime as dt
import os
import re
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
from django.utils import timezone

from localnet.rucio import RucioServer
from projects.models import Project
from replicas.rucio import RucioAdapter
from replicas.rucio_access import access
from replicas.rucio_accounts import ensure_account

from .helpers import product_on_disk

pytestmark = pytest.mark.integration

RUCIO_CLI = Path(sys.executable).parent / "rucio"
DESTINATION = "AUSRC_DISK"


class RucioUser:
    """A platform user's Rucio account, as the platform makes it, with a password identity Rucio's
    administrator gave it, and the plain ``rucio`` client configured for it."""

    def __init__(self, rucio: RucioAdapter, server: RucioServer, user, folder: Path) -> None:  # type: ignore[no-untyped-def]
        self.account = ensure_account(rucio, user, [DESTINATION])
        password = secrets.token_urlsafe(16)
        rucio.client.add_identity(
            self.account, self.account, "USERPASS", f"{self.account}@example.org", password=password
        )
        self.config = folder / f"{self.account}.cfg"
        self.config.write_text(
            f"[client]\nrucio_host = {server.url}\nauth_host = {server.url}\nauth_type = userpass\n"
            f"username = {self.account}\npassword = {password}\naccount = {self.account}\n"
            "request_retries = 1\n"
        )
        self.config.chmod(0o600)

    def add_rule(self, did: str) -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("RUCIO_")}
        env["RUCIO_CONFIG"] = str(self.config)
        argv = [str(RUCIO_CLI), "rule", "add", "--copies", "1", "--rses", DESTINATION, did]
        return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60, check=False)


def _made(answer: subprocess.CompletedProcess[str]) -> str:
    assert answer.returncode == 0, answer.stderr[-1500:]
    (rule_id,) = re.findall(r"\b[0-9a-f]{32}\b", answer.stdout)
    return rule_id


def _refused(answer: subprocess.CompletedProcess[str], did: str) -> None:
    assert answer.returncode != 0, answer.stdout
    said = answer.stderr + answer.stdout
    assert "can not add replication rule" in said and "proprietary to project" in said, said[-1500:]


def test_a_proprietary_product_is_asked_for_with_the_rucio_client_by_its_members_only(  # type: ignore[no-untyped-def]
    rucio_sites, rucio: RucioAdapter, rucio_server: RucioServer, rucio_mode, scope, tmp_path,
    django_user_model, django_capture_on_commit_callbacks,
):  # fmt: skip
    project = Project.objects.create(code=f"P{secrets.token_hex(3)}.private-survey")
    outsider = django_user_model.objects.create_user(f"out{secrets.token_hex(3)}", password="x")
    member = django_user_model.objects.create_user(f"mem{secrets.token_hex(3)}", password="x")
    project.members.add(member)
    product = product_on_disk(rucio_sites, scope, {"vis.ms": 64 * 1024})
    product.project, product.proprietary_until = project, timezone.now() + dt.timedelta(days=30)
    product.save(update_fields=["project", "proprietary_until"])
    rucio.register_product(product)
    dataset, file_did = f"{scope}:{product.name}", f"{scope}:{product.name}/vis.ms"
    meta = rucio.client.get_metadata(scope, product.name, plugin="ALL")
    assert meta["project"] == project.code and access.PROPRIETARY_UNTIL in meta

    them, us = (
        RucioUser(rucio, rucio_server, outsider, tmp_path),
        RucioUser(rucio, rucio_server, member, tmp_path),
    )
    _refused(them.add_rule(dataset), dataset)
    _refused(them.add_rule(file_did), file_did)  # nor any of its files
    assert not list(rucio.client.list_did_rules(scope, product.name))
    _made(us.add_rule(dataset))  # a member asks for it as before

    # The member leaves the project: Rucio hears of it when the change is committed.
    with django_capture_on_commit_callbacks(execute=True):
        project.members.remove(member)
    _refused(us.add_rule(file_did), file_did)

    # The proprietary period ends early (an operator's change, carried to Rucio): now anyone may ask.
    product.proprietary_until = timezone.now() - dt.timedelta(minutes=1)
    product.save(update_fields=["proprietary_until"])
    rucio.register_product(product)  # already there: its proprietary end is brought in step
    ended = rucio.client.get_metadata(scope, product.name, plugin="JSON")[access.PROPRIETARY_UNTIL]
    assert dt.datetime.fromisoformat(ended) == product.proprietary_until
    _made(them.add_rule(file_did))

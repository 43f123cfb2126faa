"""The FTS3 endpoint takes per-file ``source_tokens`` / ``destination_tokens`` as the real ``fts3`` client
(and Rucio's FTS3 transfertool) sends them: checked at submission, kept sealed, exchanged and refreshed when
managed (FTS 3.14's default), passed through when unmanaged, and used by the copy at each end.

The submitted tokens come from the same local issuer as the service's own (Rucio asks SKA-IAM for them in
production); a Celery worker of this module's own, with the service's issuer settings, runs the copies."""

from __future__ import annotations

import os
import time
import uuid
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.conf import settings
from fts3.rest.client import easy
from fts3.rest.client.context import Context
from fts3.rest.client.exceptions import ClientError

from identity.tokens import issue
from localnet.issuer_rucio import RucioClient
from localnet.processes import stop_pid
from localnet.stack import platform_process, spawn_platform_process, wait_for_worker, worker_argv
from localnet.state import StateDir
from tests.conftest import wait_until
from tests.forgeries import claims
from transfers.fts3.submission import SubmissionError, parse_submission

from .conftest import PREFIX, TokenBench, rucio_style_token, token_settings

CONTENT = bytes(range(256)) * 2048  # 512 KiB


@pytest.fixture(scope="module")
def token_worker(token_bench: TokenBench, test_state: StateDir, django_db_setup) -> Iterator[str]:  # type: ignore[no-untyped-def]
    """A Celery worker on the test database and a queue of its own, with the service's issuer settings
    (SRCNET_TOKEN_*): what the submissions of this module dispatch goes to it only."""
    from srcnet.celery import app

    queue = f"srcnet-tokens-{os.getpid()}-{time.monotonic_ns()}"
    env, account = platform_process(test_state, test_state.path.name)
    conf = token_settings(token_bench)
    env.update(
        {
            "SRCNET_DB_NAME": str(settings.DATABASES["default"]["NAME"]),
            "SRCNET_CELERY_QUEUE": queue,
            "SRCNET_PUSH_ON_SETTLE": "0",
            "SRCNET_TOKEN_ISSUER": conf["ISSUER"],
            "SRCNET_TOKEN_CLIENT_ID": conf["CLIENT_ID"],
            "SRCNET_TOKEN_CLIENT_SECRET": conf["CLIENT_SECRET"],
            "SRCNET_TOKEN_CA_FILE": conf["CA_FILE"],
            "SRCNET_TOKEN_AUDIENCE_STYLE": conf["AUDIENCE_STYLE"],
        }
    )
    log = test_state.sub("log") / f"pytest-token-worker-{os.getpid()}.log"
    proc = spawn_platform_process(worker_argv(f"tokens-{os.getpid()}@%h", concurrency=2), env, account, log)
    before = app.conf.task_default_queue
    app.conf.task_default_queue = queue
    try:
        wait_for_worker(proc, log)
        yield str(log)
    finally:
        app.conf.task_default_queue = before
        stop_pid(proc.pid, timeout=30)


@pytest.fixture
def fts(live_server, operator, token_bench: TokenBench, endpoints: None, settings) -> Context:  # type: ignore[no-untyped-def]
    settings.SRCNET_TOKENS = token_settings(token_bench)
    key = issue(operator, name="test", scope="fts3")[1]
    return Context(f"{live_server.url}/fts3", fts_access_token=key, verify=False)


def _adler32(data: bytes) -> str:
    return f"{zlib.adler32(data) & 0xFFFFFFFF:08x}"


def _product(bench: TokenBench) -> tuple[str, str, str]:
    """A new file at TOKEN-A; its davs:// URL there and at TOKEN-B, and its folder below the base path."""
    folder = f"/fts3-{uuid.uuid4().hex[:8]}"
    local = bench.sites["TOKEN-A"].local_path(f"{PREFIX}{folder}/product.fits")
    local.parent.mkdir(parents=True, exist_ok=True)
    local.write_bytes(CONTENT)
    for part in (local, local.parent):
        part.chmod(0o777 if part.is_dir() else 0o666)
    return (
        f"davs://127.0.0.1:{bench.sites['TOKEN-A'].http_port}{PREFIX.rstrip('/')}{folder}/product.fits",
        f"davs://127.0.0.1:{bench.sites['TOKEN-B'].http_port}{PREFIX.rstrip('/')}{folder}/product.fits",
        folder,
    )


def _tokens(bench: TokenBench, folder: str) -> tuple[str, str]:
    """What Rucio's transfertool asks for: read at the source, create/modify/read at the destination."""
    source = bench.client.fetch_new([f"storage.read:{folder}"], bench.audiences["TOKEN-A"])
    destination = bench.client.fetch_new(
        [f"storage.create:{folder}", f"storage.modify:{folder}", f"storage.read:{folder}"],
        bench.audiences["TOKEN-B"],
    )
    return source.value, destination.value


def _finished(context: Context, job_id: str) -> dict:  # type: ignore[type-arg]
    def ended():  # type: ignore[no-untyped-def]
        status = easy.get_job_status(context, job_id, list_files=True)
        return status if status["job_state"] in ("FINISHED", "FAILED", "FINISHEDDIRTY", "CANCELED") else None

    return wait_until(ended, timeout=120, what=f"job {job_id}")  # type: ignore[no-any-return]


def _copied(  # type: ignore[no-untyped-def]
    fts: Context, source: str, destination: str, source_token: str, destination_token: str, unmanaged=False
) -> tuple[str, dict]:  # type: ignore[type-arg]
    """One verified copy submitted with its two tokens, and its job's status once it ended."""
    transfer = easy.new_transfer(
        source,
        destination,
        checksum=f"ADLER32:{_adler32(CONTENT)}",
        source_token=source_token,
        destination_token=destination_token,
    )
    job_id = easy.submit(fts, easy.new_job([transfer], verify_checksum="both", unmanaged_tokens=unmanaged))
    return job_id, _finished(fts, job_id)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("unmanaged", [False, True], ids=["managed", "unmanaged"])
def test_a_job_with_per_file_tokens_copies_with_them_and_keeps_them_sealed(
    token_bench: TokenBench, token_worker: str, fts: Context, unmanaged: bool
) -> None:
    from transfers.models import SubmittedToken, TransferFile
    from transfers.submitted_tokens import token_id, unseal

    source, destination, folder = _product(token_bench)
    source_token, destination_token = _tokens(token_bench, folder)
    job_id, status = _copied(fts, source, destination, source_token, destination_token, unmanaged)
    assert status["job_state"] == "FINISHED", status["files"][0].get("reason")
    copied = token_bench.sites["TOKEN-B"].local_path(f"{PREFIX}{folder}/product.fits")
    assert copied.read_bytes() == CONTENT

    row = TransferFile.objects.select_related("source_token", "destination_token").get(job__job_id=job_id)
    kept = {"source": row.source_token, "destination": row.destination_token}
    assert SubmittedToken.objects.filter(job__job_id=job_id).count() == 2
    for role, given in (("source", source_token), ("destination", destination_token)):
        stored = kept[role]
        assert stored is not None and stored.token_id == token_id(given) and stored.managed is not unmanaged
        assert given not in stored.sealed_value and given not in stored.sealed_refresh
        used = unseal(stored.sealed_value)
        # Managed: exchanged for the service's own token, same scope and audience, renewable; unmanaged:
        # the submitted token itself, nothing to renew it with.
        assert (used == given) is unmanaged
        assert bool(stored.sealed_refresh) is not unmanaged
        assert claims(used)["aud"] == claims(given)["aud"]
        assert set(str(claims(used)["scope"]).split()) == set(str(claims(given)["scope"]).split())
    # Neither the FTS3 API's answers nor the worker's log hold a token in clear.
    shown = str(easy.get_job_status(fts, job_id, list_files=True))
    log = Path(token_worker).read_text(errors="replace")
    for given in (source_token, destination_token):
        assert given not in shown and given not in log


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    "case, field, reason",
    [
        ("audience", "source_tokens", "names neither TOKEN-A's audience (token-a.srcnet.test) nor its host"),
        ("read-only destination", "destination_tokens", "grants no storage.create or storage.modify"),
        ("other folder", "source_tokens", "grants no storage.read"),
        ("tampered", "source_tokens", "signature does not verify"),
        ("not a jwt", "destination_tokens", "a token is a JWT"),
    ],
)
def test_a_token_that_cannot_do_the_copy_is_refused_naming_the_file_and_field(
    token_bench: TokenBench, fts: Context, case: str, field: str, reason: str
) -> None:
    from transfers.models import SubmittedToken, TransferJob

    source, destination, folder = _product(token_bench)
    source_token, destination_token = _tokens(token_bench, folder)
    if case == "audience":
        source_token = token_bench.client.fetch_new(
            [f"storage.read:{folder}"], token_bench.audiences["TOKEN-B"]
        ).value
    elif case == "read-only destination":
        destination_token = token_bench.client.fetch_new(
            [f"storage.read:{folder}"], token_bench.audiences["TOKEN-B"]
        ).value
    elif case == "other folder":
        source_token = token_bench.client.fetch_new(
            ["storage.read:/elsewhere"], token_bench.audiences["TOKEN-A"]
        ).value
    elif case == "tampered":
        head, body, signature = source_token.split(".")
        source_token = f"{head}.{body}.{signature[:-4]}{'AAAA' if signature[-4:] != 'AAAA' else 'BBBB'}"
    else:
        destination_token = "not-a-token"
    jobs = TransferJob.objects.count()
    transfer = easy.new_transfer(
        source, destination, source_token=source_token, destination_token=destination_token
    )
    with pytest.raises(ClientError) as refused:
        easy.submit(fts, easy.new_job([transfer]))
    assert f"files[0].{field}" in str(refused.value) and reason in str(refused.value), str(refused.value)
    assert TransferJob.objects.count() == jobs and not SubmittedToken.objects.exists()


def test_the_token_lists_must_have_one_token_per_url() -> None:
    body = {
        "files": [
            {"sources": ["root://a/x", "root://b/x"], "destinations": ["root://c/x"], "source_tokens": ["t"]}
        ],
        "params": {},
    }
    with pytest.raises(SubmissionError, match=r"files\[0\]\.source_tokens must be a list of 2 tokens"):
        parse_submission(body, vo="ska", now=None)  # type: ignore[arg-type]


def _rucio_tokens(bench: TokenBench, client: RucioClient, folder: str) -> tuple[str, str]:
    """The tokens Rucio's FTS3 transfertool asks for (rucio.core.oidc.request_token): client credentials of
    Rucio's own client, the audience a parameter naming the RSE's host, ``offline_access`` beside the
    storage rights."""
    asked = (
        f"storage.read:{folder} offline_access",
        f"storage.modify:{folder} storage.read:{folder} offline_access",
    )
    return tuple(  # type: ignore[return-value]
        rucio_style_token(bench, client, audience="127.0.0.1", scope=scope) for scope in asked
    )


@pytest.mark.django_db(transaction=True)
def test_rucio_style_tokens_for_the_storage_host_are_exchanged_for_the_storages_audience(
    token_bench: TokenBench, token_worker: str, fts: Context, rucio_client: RucioClient
) -> None:
    """As Rucio sends them: the audience is the storage's host name (all local sites share 127.0.0.1, each
    accepting only its own audience). Managed, the service exchanges each for a token of its own client at
    the storage's audience (Keycloak gives no refresh token for a client credentials token: the exchange is
    for the access token, renewed by the service's own grant), and the copy runs with them."""
    from transfers.models import TransferFile
    from transfers.submitted_tokens import unseal

    source, destination, folder = _product(token_bench)
    source_token, destination_token = _rucio_tokens(token_bench, rucio_client, folder)
    assert claims(source_token)["aud"] == ["srcnet-transfers", "127.0.0.1"]
    job_id, status = _copied(fts, source, destination, source_token, destination_token)
    assert status["job_state"] == "FINISHED", status["files"][0].get("reason")
    assert token_bench.sites["TOKEN-B"].local_path(f"{PREFIX}{folder}/product.fits").read_bytes() == CONTENT
    row = TransferFile.objects.select_related("source_token", "destination_token").get(job__job_id=job_id)
    for stored, site, rights in (
        (row.source_token, "TOKEN-A", {f"storage.read:{folder}"}),
        (row.destination_token, "TOKEN-B", {f"storage.modify:{folder}", f"storage.read:{folder}"}),
    ):
        assert stored is not None and stored.managed and stored.audience == token_bench.audiences[site]
        used = claims(unseal(stored.sealed_value))
        assert used["aud"] == token_bench.audiences[site] and used["azp"] == token_bench.issuer.client_id
        assert used["sub"] == rucio_client.subject and set(str(used["scope"]).split()) == rights


@pytest.mark.django_db(transaction=True)
def test_an_unmanaged_token_for_the_storage_host_is_refused_as_the_storage_would(
    token_bench: TokenBench, fts: Context, rucio_client: RucioClient
) -> None:
    from transfers.models import TransferJob

    source, destination, folder = _product(token_bench)
    source_token, destination_token = _rucio_tokens(token_bench, rucio_client, folder)
    jobs = TransferJob.objects.count()
    transfer = easy.new_transfer(
        source, destination, source_token=source_token, destination_token=destination_token
    )
    with pytest.raises(ClientError) as refused:
        easy.submit(fts, easy.new_job([transfer], unmanaged_tokens=True))
    assert "files[0].source_tokens" in str(refused.value), str(refused.value)
    assert "an unmanaged token reaches the storage as it is" in str(refused.value)
    assert TransferJob.objects.count() == jobs

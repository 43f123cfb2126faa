"""Real files pushed from one deployed storage site to the other through the deployed control plane: an
FTS3 job submitted to its REST endpoint, the copies run as gfal2 third-party copies by the Celery workers
on both worker hosts (read back from the database), adler32 checked on the destination's disk."""

from __future__ import annotations

import json
import time

import pytest

from .conftest import STORAGE_PREFIX, Deployment

pytestmark = pytest.mark.timeout(900)

DATA_DIR = "/srv/xrootd/data"
FILES = 12
FILE_BYTES = 3 * 1024 * 1024 + 17


def _adler32_all(folder: str) -> str:
    """Python printing "<adler32> <path>" for each file of ``folder``: computed by zlib on the storage host,
    apart from the XRootD stack that moved the files."""
    code = (
        "import glob, zlib\n"
        f"for path in sorted(glob.glob('{folder}/*.ms')):\n"
        "    value = 1\n"
        "    with open(path, 'rb') as f:\n"
        "        for block in iter(lambda: f.read(1 << 20), b''):\n"
        "            value = zlib.adler32(block, value)\n"
        "    print(f'{value:08x} {path}')\n"
    )
    return code


def _manage_shell(deployment: Deployment, code: str) -> str:
    """Python run by Django's shell on the control-plane host, as the platform's account."""
    return deployment.ssh("cp", ["srcnet-manage", "shell", "-c", code]).stdout.strip().splitlines()[-1]


def _api(deployment: Deployment, token: str, method: str, path: str, body: object | None = None) -> object:
    url = f"http://{deployment.host('cp').address}:8000{path}"
    argv = ["curl", "-sS", "--fail-with-body", "-X", method, "-H", f"Authorization: Bearer {token}"]
    if body is not None:
        argv += ["-H", "Content-Type: application/json", "--data", json.dumps(body)]
    answer = deployment.fleet.lan_exec([*argv, url], timeout=60)
    return json.loads(answer.stdout)


def test_files_move_between_sites_on_both_workers(deployment: Deployment, deployed: object) -> None:
    source, destination = deployment.host("s1"), deployment.host("s2")
    folder = f"{STORAGE_PREFIX}product-{int(time.time())}"
    deployment.ssh(
        "s1",
        ["sh", "-c", f"mkdir -p {DATA_DIR}{folder} && for i in $(seq 1 {FILES}); do "
         f"head -c {FILE_BYTES} /dev/urandom > {DATA_DIR}{folder}/part$i.ms; done && "
         f"chown -R xrootd:xrootd {DATA_DIR}{STORAGE_PREFIX}"],
    )  # fmt: skip
    sums = {}
    for line in deployment.ssh(
        "s1", ["python3", "-c", _adler32_all(f"{DATA_DIR}{folder}")]
    ).stdout.splitlines():
        checksum, path = line.split()
        sums[path.rsplit("/", 1)[1]] = checksum
    assert len(sums) == FILES

    token = _manage_shell(
        deployment,
        "from django.contrib.auth import get_user_model; from rest_framework.authtoken.models import Token; "
        "from srcnet.roles import grant_submit_transfers; "
        "u, _ = get_user_model().objects.get_or_create(username='deploy-test'); grant_submit_transfers(u); "
        "print(Token.objects.get_or_create(user=u)[0].key)",
    )
    job = _api(
        deployment,
        token,
        "POST",
        "/fts3/jobs",
        {
            "files": [
                {
                    "sources": [f"root://{source.address}:1094/{folder}/{name}"],
                    "destinations": [f"root://{destination.address}:1094/{folder}/{name}"],
                    "filesize": FILE_BYTES,
                    "checksum": f"ADLER32:{checksum}",
                }
                for name, checksum in sorted(sums.items())
            ],
            "params": {"verify_checksum": "both"},
        },
    )
    job_id = job["job_id"]  # type: ignore[index]
    deadline = time.monotonic() + 300
    while True:
        state = _api(deployment, token, "GET", f"/fts3/jobs/{job_id}")["job_state"]  # type: ignore[index]
        if state in ("FINISHED", "FAILED", "FINISHEDDIRTY", "CANCELED") or time.monotonic() > deadline:
            break
        time.sleep(2)
    assert state == "FINISHED", state

    rows = json.loads(
        _manage_shell(
            deployment,
            "import json; from transfers.models import TransferFile; "
            f"rows = TransferFile.objects.filter(job__job_id='{job_id}'); "
            "print(json.dumps([{'dest': f.dest_surl, 'state': f.state, 'src': f.source_checksum, "
            "'dst': f.dest_checksum, 'workers': list(f.attempt_rows.values_list('worker', flat=True))} "
            "for f in rows]))",
        )
    )
    assert len(rows) == FILES
    hosts_that_copied = {worker.split(":")[0] for row in rows for worker in row["workers"]}
    assert hosts_that_copied == {"w1", "w2"}, rows
    on_disk = {}
    for line in deployment.ssh(
        "s2", ["python3", "-c", _adler32_all(f"{DATA_DIR}{folder}")]
    ).stdout.splitlines():
        checksum, path = line.split()
        on_disk[path.rsplit("/", 1)[1]] = checksum
    # Checked apart from the transfer stack: the bytes on the destination's disk.
    assert on_disk == sums
    for row in rows:
        name = row["dest"].rsplit("/", 1)[1]
        assert row["state"] == "FINISHED" and row["src"] == row["dst"] == sums[name], row

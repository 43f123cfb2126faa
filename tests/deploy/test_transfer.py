"""Real products pushed from the deployed telescope's SDP storage to the deployed SRC through the push loop,
as the SDP pushes them in production: the products registered through the REST API, planned and submitted
by the push cycle that Celery beat runs on the control plane (no job submitted by the test), copied as
root:// third-party copies by the Celery workers on both worker hosts (read back from the database), and
adler32 checked on the destination's disk."""

from __future__ import annotations

import json
import time

from .conftest import CENTRE, DEPLOY_TIMEOUT, STORAGE_PREFIX, TELESCOPE, Deployment

pytestmark = DEPLOY_TIMEOUT

DATA_DIR = "/srv/xrootd/data"
PRODUCTS = 3
FILES_PER_PRODUCT = 4
FILE_BYTES = 3 * 1024 * 1024 + 17


def _adler32_all(folder: str) -> str:
    """Python printing "<adler32> <path>" for each file under ``folder``: computed by zlib on the storage
    host, apart from the XRootD stack that moved the files."""
    code = (
        "import glob, zlib\n"
        f"for path in sorted(glob.glob('{folder}/*/*.ms')):\n"
        "    value = 1\n"
        "    with open(path, 'rb') as f:\n"
        "        for block in iter(lambda: f.read(1 << 20), b''):\n"
        "            value = zlib.adler32(block, value)\n"
        "    print(f'{value:08x} {path}')\n"
    )
    return code


def _sums(deployment: Deployment, host: str, folder: str) -> dict[str, str]:
    """{"<product>/<file>": adler32} of the files under ``folder`` on ``host``'s disk."""
    sums = {}
    for line in deployment.ssh(host, ["python3", "-c", _adler32_all(folder)]).stdout.splitlines():
        checksum, path = line.split()
        sums["/".join(path.rsplit("/", 2)[1:])] = checksum
    return sums


def _manage_shell(deployment: Deployment, code: str) -> str:
    """Python run by Django's shell on the control-plane host, as the platform's account."""
    return deployment.ssh("cp", ["srcnet-manage", "shell", "-c", code]).stdout.strip().splitlines()[-1]


def _api(deployment: Deployment, token: str, method: str, path: str, body: object | None = None) -> object:
    argv = ["--fail-with-body", "-X", method, "-H", f"Authorization: Token {token}"]
    if body is not None:
        argv += ["-H", "Content-Type: application/json", "--data", json.dumps(body)]
    answer = deployment.curl(*argv, f"{deployment.web}{path}")
    return json.loads(answer.stdout)


def test_products_are_pushed_by_the_push_loop_on_both_workers(
    deployment: Deployment, deployed: object
) -> None:
    stamp = int(time.time())
    names = [f"deploy-{stamp}-{index}" for index in range(PRODUCTS)]
    scope_dir = f"{DATA_DIR}{STORAGE_PREFIX}ska"
    # The SDP writes the products' files at its storage (s1), as the telescope's pipeline does.
    deployment.ssh(
        "s1",
        ["sh", "-c", " && ".join(
            f"mkdir -p {scope_dir}/{name} && for i in $(seq 1 {FILES_PER_PRODUCT}); do "
            f"head -c {FILE_BYTES} /dev/urandom > {scope_dir}/{name}/part$i.ms; done"
            for name in names
        ) + f" && chown -R xrootd:xrootd {DATA_DIR}{STORAGE_PREFIX}"],
    )  # fmt: skip
    written = {
        key: value for key, value in _sums(deployment, "s1", scope_dir).items() if key.split("/")[0] in names
    }
    assert len(written) == PRODUCTS * FILES_PER_PRODUCT

    token = _manage_shell(
        deployment,
        "from django.contrib.auth import get_user_model; from identity.tokens import issue; "
        "u, _ = get_user_model().objects.get_or_create(username='sdp-deploy', defaults={'is_staff': True}); "
        "print(issue(u, name='sdp', scope='operate', days=1)[1])",
    )
    ids = {}
    for name in names:
        product = _api(
            deployment,
            token,
            "POST",
            "/api/replicas/products/",
            {
                "scope": "ska",
                "name": name,
                "telescope": TELESCOPE,
                "files": [
                    {"name": key.split("/")[1], "size_bytes": FILE_BYTES, "adler32": checksum}
                    for key, checksum in sorted(written.items())
                    if key.split("/")[0] == name
                ],
            },
        )
        ids[name] = product["id"]  # type: ignore[index]

    # Nobody pushes them but the push loop: beat runs a cycle every PUSH_INTERVAL (5 s in the test).
    deadline = time.monotonic() + 300
    while True:
        states = {
            name: _api(deployment, token, "GET", f"/api/replicas/products/{pk}/")["state"]  # type: ignore[index]
            for name, pk in ids.items()
        }
        if all(state in ("placed", "failed") for state in states.values()) or time.monotonic() > deadline:
            break
        time.sleep(3)
    assert set(states.values()) == {"placed"}, states

    facts = json.loads(
        _manage_shell(
            deployment,
            "import json; from schedulers.models import PushCycle; "
            "from transfers.models import TransferFile; "
            f"dids = {[f'ska:{name}' for name in names]!r}; "
            "planned = [dict(e, cycle=c.pk) for c in PushCycle.objects.order_by('pk') for e in c.submitted "
            "if e.get('product') in dids]; "
            "jobs = [e['job_id'] for e in planned]; "
            "rows = TransferFile.objects.filter(job__job_id__in=jobs); "
            "print(json.dumps({'planned': planned, 'files': [{'dest': f.dest_surl, 'state': f.state, "
            "'src': f.source_checksum, 'dst': f.dest_checksum, "
            "'workers': list(f.attempt_rows.values_list('worker', flat=True))} for f in rows]}))",
        )
    )
    # Each product's push was planned and submitted by a push cycle, on the telescope's lane to the SRC.
    planned = sorted(entry["product"] for entry in facts["planned"])
    assert planned == sorted(f"ska:{name}" for name in names), facts["planned"]
    assert all(entry["lane"][0] == TELESCOPE and entry["lane"][-1] == CENTRE for entry in facts["planned"])
    rows = facts["files"]
    assert len(rows) == PRODUCTS * FILES_PER_PRODUCT, rows
    hosts_that_copied = {worker.split(":")[0] for row in rows for worker in row["workers"]}
    assert hosts_that_copied == {"w1", "w2"}, rows
    # Checked apart from the transfer stack: the bytes on the destination's disk.
    arrived = {
        key: value for key, value in _sums(deployment, "s2", scope_dir).items() if key.split("/")[0] in names
    }
    assert arrived == written
    for row in rows:
        key = "/".join(row["dest"].rsplit("/", 2)[1:])
        assert row["state"] == "FINISHED" and row["src"] == row["dst"] == written[key], row

    # The sites' fireflies (xrootd.pmark to the control plane's collector) are read by the beat's network
    # accounting on a worker (over HTTPS with the collector's token) and put on the copies, on the
    # telescope's lane: at least their bytes, sent by the SDP's server to the destination's pullers.
    code = (
        "import json; from monitoring.models import FlowTraffic; "
        f"rows = FlowTraffic.objects.filter(file__dest_surl__regex=r'/({'|'.join(names)})/'); "
        "print(json.dumps([{'file': t.file_id, 'bytes': t.bytes, "
        "'lane': [t.source_site, t.destination_site], 'policy': t.policy_id} for t in rows]))"
    )
    # Copies that ran at once on the same pair of sites share their flows by size (an estimate: nothing in a
    # firefly names the file), so the figure that must hold is the products' total, and each copy's share.
    deadline = time.monotonic() + 120
    while True:
        traffic = json.loads(_manage_shell(deployment, code))
        total = sum(t["bytes"] for t in traffic)
        if (len(traffic) == len(rows) and total >= len(rows) * FILE_BYTES) or time.monotonic() > deadline:
            break
        time.sleep(3)
    assert len(traffic) == len(rows) and total >= len(rows) * FILE_BYTES, traffic
    assert all(t["bytes"] > 0 and t["lane"] == [TELESCOPE, CENTRE] for t in traffic), traffic
    assert all(t["policy"] is not None for t in traffic), traffic

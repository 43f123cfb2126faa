"""Integration fixtures: the reference topology bound to real local XRootD sites, and file helpers."""

from __future__ import annotations

import uuid
import zlib
from pathlib import Path

import pytest

from campaigns.synthetic import write_file
from localnet.issuer import local_audience
from localnet.xrootd import LocalSite
from tests.conftest import wait_until
from transfers.choices import JobState
from transfers.models import TransferJob


@pytest.fixture
def bound_topology(transactional_db, reference_topology, xrootd_sites):  # type: ignore[no-untyped-def]
    """The reference topology with its SDP, UKSRC and AUSRC endpoints pointing at the running sites."""
    from topology.models import StorageEndpoint

    for name, site in xrootd_sites.items():
        StorageEndpoint.objects.filter(name=name).update(
            hostname="127.0.0.1",
            root_port=site.root_port,
            http_port=site.http_port,
            token_audience=local_audience(name),
        )
    return xrootd_sites


def ended(job: TransferJob, timeout: float = 180) -> TransferJob:
    """Wait until ``job`` reaches a terminal state (refreshed from the database) and return it."""

    def done() -> bool:
        job.refresh_from_db()
        return job.state in (JobState.FINISHED, JobState.FAILED, JobState.FINISHEDDIRTY, JobState.CANCELED)

    wait_until(done, timeout=timeout, what=f"job {job.job_id}")
    return job


def adler32_of(path: Path) -> str:
    value = 1
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 20):
            value = zlib.adler32(chunk, value)
    return f"{value & 0xFFFFFFFF:08x}"


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def put_file(site: LocalSite, relative: str, size: int) -> str:
    """Write a real file to ``site`` under /srcnet/ over root:// and return its adler32; at a site that
    enforces tokens, with a ``storage.create`` token for its folder from the session's issuer
    (tests/conftest.py token_issuer), as the telescope's writer has one."""
    from transfers.tokens import service_client

    token = ""
    if site.audience:
        client = service_client()
        assert client is not None, (
            "put_file needs the session's token issuer (tests/conftest.py token_issuer)"
        )
        folder = "/" + relative.rsplit("/", 1)[0] if "/" in relative else "/"
        token = client.fetch([f"storage.create:{folder}"], site.audience).value
    seed = hash(relative) & 0x7FFFFFFF
    return write_file(site.root_url(f"srcnet/{relative}"), size, seed=seed, token=token)


def spectral_cube_at_sdp(sdp: LocalSite, name: str, sizes: tuple[int, int], observation_id: str):  # type: ignore[no-untyped-def]
    """A SKA1-Low spectral cube registered with its two files (cube, weights) written at its SDP."""
    from replicas.services import FileSpec, register_product
    from topology.models import Telescope

    files = [
        FileSpec(f, size, put_file(sdp, f"ska/{name}/{f}", size))
        for f, size in zip(("cube.fits", "weights.fits"), sizes, strict=True)
    ]
    return register_product(
        scope="ska",
        name=name,
        telescope=Telescope.objects.get(name="SKA1-Low"),
        files=files,
        product_type="spectral_cube",
        observation_id=observation_id,
    )


@pytest.fixture
def to_uksrc(bound_topology):  # type: ignore[no-untyped-def]
    """Every SKA1-Low product to UKSRC (the policy's only share): one lane, one link."""
    from tests.conftest import policy_of_shares

    return policy_of_shares({"UKSRC_DISK": 1}, name="low-to-uk").telescope

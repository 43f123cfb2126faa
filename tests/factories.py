"""Factories of the core rows the tests need, one definition each (issue 34): a product as the SDP
registers it, through the platform's own service (its files and its AVAILABLE SDP replica with it); the push
loop's copy request with its plan; a push job linked to its replica by one; a copy's end as its transfertool
reports it; a transfer file as the executor leaves it."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from replicas.models import CopyRequest, DataProduct, Replica
from replicas.services import FileSpec, record_job_end, register_product
from topology.models import StorageEndpoint, Telescope
from transfers.choices import FileState
from transfers.models import TransferFile, TransferJob

# Any well-formed adler32: the tests that copy bytes write their own files and sums.
ADLER32 = "0cc737eb"


def product_at_sdp(
    name: str,
    *,
    sizes: Sequence[int] = (10**6,),
    telescope: str = "SKA1-Low",
    scope: str = "ska",
    priority: int = 3,
    file_names: Sequence[str] | None = None,
) -> DataProduct:
    """A product at ``telescope``'s SDP with one file per size (``a.ms``, ``b.ms``... unless named)."""
    names = (
        list(file_names) if file_names is not None else [f"{chr(ord('a') + i)}.ms" for i in range(len(sizes))]
    )
    if len(names) != len(sizes):
        raise ValueError("one file name per size")
    return register_product(
        scope=scope,
        name=name,
        telescope=Telescope.objects.get(name=telescope),
        priority=priority,
        files=[FileSpec(file, size, ADLER32) for file, size in zip(names, sizes, strict=True)],
    )


def copy_request(
    product: DataProduct,
    *,
    lane: tuple[str, str] = ("SKA1-Low", "UKSRC"),
    job_id: str | None = None,
    endpoint: str = "",
    replica: Replica | None = None,
    **plan_and_outcome: Any,
) -> CopyRequest:
    """The push loop's request for a copy of ``product`` on ``lane``, carried by job ``job_id`` (a new id
    unless given) at ``endpoint`` (empty: the platform's own service), with the plan and outcome fields
    given (``planned_bps``, ``streams``, ``predicted_arrival``, ``state``, ``settled``...)."""
    return CopyRequest.objects.create(
        product=product,
        replica=replica,
        endpoint=endpoint,
        job_id=job_id or str(uuid.uuid4()),
        source_site=lane[0],
        destination_site=lane[1],
        **plan_and_outcome,
    )


def push_job_for(
    replica: Replica, *, lane: tuple[str, str] = ("SKA1-Low", "UKSRC"), **fields: Any
) -> TransferJob:
    """A job of the platform's transfer service carrying ``replica``'s copy, linked to it as the push loop
    links its jobs: by a copy request (the job's metadata names the lane only, as the loop's does)."""
    job = TransferJob.objects.create(metadata={"lane": list(lane)}, **fields)
    copy_request(replica.product, lane=lane, job_id=str(job.job_id), replica=replica)
    return job


def settle_copy(replica: Replica, state: str, reasons: Sequence[str] = ()) -> list[Replica]:
    """The end of the job of ``replica``'s open copy request, as its transfertool reports it (the embedded
    service's signal, an external FTS3's poll)."""
    request = replica.copy_requests.get(settled__isnull=True)
    return record_job_end(endpoint=request.endpoint, job_id=request.job_id, state=state, reasons=reasons)


def transfer_file(
    job: TransferJob,
    index: int = 0,
    *,
    source: StorageEndpoint | str,
    destination: StorageEndpoint | str,
    path: str,
    state: str = FileState.SUBMITTED,
    size: int = 10**6,
    scheme: str = "davs",
    **fields: Any,
) -> TransferFile:
    """File ``index`` of ``job``: a copy of ``path`` from endpoint ``source`` to ``destination`` (rows or
    names) over ``scheme``, in ``state`` as the executor leaves it (a FINISHED one moved its ``size``
    bytes); its times and counts as ``fields`` give them."""
    ends = [
        e if isinstance(e, StorageEndpoint) else StorageEndpoint.objects.get(name=e)
        for e in (source, destination)
    ]
    values: dict[str, Any] = {"transferred_bytes": size if state == FileState.FINISHED else 0, **fields}
    return TransferFile.objects.create(
        job=job,
        file_index=index,
        source_surl=ends[0].url(scheme, path),
        dest_surl=ends[1].url(scheme, path),
        filesize=size,
        state=state,
        **values,
    )

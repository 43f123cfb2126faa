"""Reads of the replicas app that gather from other apps: where a product's bytes are moving."""

from __future__ import annotations

import uuid
from typing import Any
from urllib.parse import urlsplit

from django.db.models import Count, Q, Sum

from transfers.models import TransferJob

from .models import CopyRequest, DataProduct


def pushed_job_ids(product: DataProduct) -> list[uuid.UUID]:
    """The jobs of the platform's transfer service that carry ``product``'s copies, as its copy requests
    name them (a request of an FTS3 the platform does not run names a job no row here has)."""
    ids = []
    for job_id in CopyRequest.objects.filter(product=product).values_list("job_id", flat=True):
        try:
            ids.append(uuid.UUID(job_id))
        except ValueError:
            continue  # not an id the platform's service issues
    return ids


def product_files(product: DataProduct) -> Q:
    """The transfer files (``TransferFile``) that move ``product``: those of the jobs its copy requests
    name, and the files Rucio's conveyor submitted for its DIDs (Rucio sends each file's scope and name)."""
    return Q(job__job_id__in=pushed_job_ids(product)) | Q(
        metadata__scope=product.scope, metadata__name__startswith=f"{product.name}/"
    )


def product_transfers(product: DataProduct, *, limit: int = 50) -> list[dict[str, Any]]:
    """The transfer jobs that move ``product``, newest first: the jobs its copy requests name and any other
    job of the embedded service writing under the product's path (Rucio's conveyor's, a person's), each
    with its state, storage hosts and progress."""
    path = f"/{product.scope}/{product.name}/"
    jobs = (
        TransferJob.objects.filter(Q(job_id__in=pushed_job_ids(product)) | Q(files__dest_surl__contains=path))
        .distinct()
        .order_by("-created")[:limit]
    )
    rows = (
        TransferJob.objects.filter(pk__in=[j.pk for j in jobs])
        .annotate(
            nfiles=Count("files", distinct=True),
            finished_files=Count("files", filter=Q(files__state="FINISHED"), distinct=True),
            moved=Sum("files__transferred_bytes"),
        )
        .prefetch_related("files")
        .order_by("-created")
    )
    names = _endpoint_names()
    out = []
    for job in rows:
        files = list(job.files.all())
        out.append(
            {
                "job_id": str(job.job_id),
                "state": job.state,
                "activity": job.activity,
                "sources": sorted({names.get(_host_port(f.source_se), f.source_se) for f in files}),
                "destinations": sorted({names.get(_host_port(f.dest_se), f.dest_se) for f in files}),
                "files": job.nfiles,
                "finished_files": job.finished_files,
                "transferred_bytes": int(job.moved or 0),
                "created": job.created,
                "finished": job.finished,
                "reason": job.reason[:300],
            }
        )
    return out


def _host_port(se: str) -> tuple[str, int | None]:
    parts = urlsplit(se)
    try:
        return (parts.hostname or "", parts.port)
    except ValueError:
        return (parts.hostname or "", None)


def _endpoint_names() -> dict[tuple[str, int | None], str]:
    """(host, port) of each storage endpoint's root:// and HTTP services -> its name (an RSE's name)."""
    from topology.models import StorageEndpoint

    names: dict[tuple[str, int | None], str] = {}
    for e in StorageEndpoint.objects.only("name", "hostname", "root_port", "http_port"):
        names[(e.hostname, e.root_port)] = e.name
        names[(e.hostname, e.http_port)] = e.name
    return names

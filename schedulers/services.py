"""Pushing products out of the SDP: place by policy, then submit each replica's copy as a transfer job."""

from __future__ import annotations

from django.db import transaction

from replicas.choices import ReplicaState
from replicas.models import DataProduct, Replica
from replicas.services import place_product

from .transfertool import JobParams, TransferRequest, Transfertool, default_transfertool


@transaction.atomic
def push_product(*, product: DataProduct, transfertool: Transfertool | None = None) -> list[Replica]:
    """Place ``product`` and submit one transfer job per planned replica; idempotent for a placed product."""
    tool = transfertool or default_transfertool()
    replicas = place_product(product=product)
    source = product.source
    files = list(product.files.all())
    for replica in replicas:
        if replica.state != ReplicaState.PLANNED:
            continue
        destination = replica.endpoint
        # The destination pulls: both ends speak the destination's third-party-copy protocol.
        scheme = destination.tpc_scheme
        requests = [
            TransferRequest(
                source=source.url(scheme, f.relative_path),
                destination=destination.url(scheme, f.relative_path),
                filesize=f.size_bytes,
                checksum=f"ADLER32:{f.adler32}",
                metadata={"product": product.did, "file": f.name},
            )
            for f in files
        ]
        job_id = tool.submit(
            requests,
            JobParams(
                priority=product.priority,
                activity="SKA Data Products",
                metadata={"replica_id": replica.pk, "product": product.did},
            ),
        )
        replica.state = ReplicaState.COPYING
        replica.reason = f"{replica.reason}; transfer job {job_id}"
        replica.save(update_fields=["state", "reason", "updated"])
    return replicas

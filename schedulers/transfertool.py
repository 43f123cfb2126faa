"""The transfertool interface the scheduler submits through (after Rucio's own Transfertool).

The embedded implementation calls the platform's transfer service in-process; an FTS3 implementation
speaking the REST protocol to any FTS3 endpoint comes with the FTS3 issue."""

from __future__ import annotations

import abc
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class TransferRequest:
    source: str
    destination: str
    filesize: int | None
    checksum: str
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class JobParams:
    priority: int = 3
    activity: str = "default"
    verify_checksum: str = "both"
    overwrite: bool = False
    retry: int | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    streams: int | None = None  # TCP streams per copy (FTS3's nostreams)
    multihop: bool = False  # the files are hops, each after the previous (FTS3 multihop jobs)


class TransfertoolError(RuntimeError):
    """The transfertool refused or failed a request."""


class Transfertool(abc.ABC):
    """Submit, query and cancel transfer jobs."""

    @abc.abstractmethod
    def submit(self, files: Sequence[TransferRequest], params: JobParams) -> str:
        """Submit one job; return its id."""

    @abc.abstractmethod
    def job_states(self, job_ids: Sequence[str]) -> dict[str, str]:
        """The state of each job (FTS3 names)."""

    @abc.abstractmethod
    def cancel(self, job_id: str) -> None:
        """Cancel a job's unfinished files."""


class EmbeddedTransfertool(Transfertool):
    """The platform's own transfer service, called in-process."""

    def submit(self, files: Sequence[TransferRequest], params: JobParams) -> str:
        from django.core.exceptions import ValidationError

        from transfers.choices import JobType
        from transfers.services import FileRequest, submit_job

        try:
            job = submit_job(
                files=[
                    FileRequest(
                        source=f.source,
                        destination=f.destination,
                        filesize=f.filesize,
                        checksum=f.checksum,
                        metadata=f.metadata,
                    )
                    for f in files
                ],
                priority=params.priority,
                activity=params.activity,
                verify_checksum=params.verify_checksum,
                overwrite=params.overwrite,
                retry=params.retry,
                metadata=params.metadata,
                internal_params={"nostreams": params.streams} if params.streams else None,
                job_type=JobType.MULTIHOP if params.multihop else JobType.NORMAL,
            )
        except ValidationError as exc:
            raise TransfertoolError(f"submission refused: {exc.message_dict}") from exc
        return str(job.job_id)

    def job_states(self, job_ids: Sequence[str]) -> dict[str, str]:
        from transfers.models import TransferJob

        return {
            str(j): s
            for j, s in TransferJob.objects.filter(job_id__in=job_ids).values_list("job_id", "state")
        }

    def cancel(self, job_id: str) -> None:
        from transfers.models import TransferJob
        from transfers.services import cancel_job

        cancel_job(TransferJob.objects.get(job_id=job_id))


def default_transfertool() -> Transfertool:
    return EmbeddedTransfertool()

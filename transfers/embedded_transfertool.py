"""The platform's own transfer service as a transfertool (``transfertools.interface``), called in-process
(no HTTP, no credentials): what the FTS3 endpoint's views do, without the request."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Mapping, Sequence

from django.core.exceptions import ValidationError

from transfertools.interface import (
    JobParams,
    LinkConfig,
    StorageConfig,
    TransferRequest,
    Transfertool,
    TransfertoolError,
)

from .choices import JobType
from .fts3.config import links
from .fts3.config import shares as config
from .fts3.config import storage as se
from .fts3.config.fields import ConfigError
from .models import TransferFile, TransferJob
from .services import FileRequest, cancel_job, submit_job, update_priority
from .storage_urls import storage_element


class EmbeddedTransfertool(Transfertool):
    """The platform's own transfer service, called in-process."""

    def submit(self, files: Sequence[TransferRequest], params: JobParams) -> str:
        try:
            job = submit_job(
                files=[
                    FileRequest(
                        source=f.source,
                        destination=f.destination,
                        filesize=f.filesize,
                        checksum=f.checksum,
                        metadata=f.metadata,
                        scitag=params.scitag,
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
        return {
            str(j): s
            for j, s in TransferJob.objects.filter(job_id__in=_uuids(job_ids)).values_list("job_id", "state")
        }

    def cancel(self, job_id: str) -> None:
        try:
            cancel_job(TransferJob.objects.get(job_id=job_id))
        except (TransferJob.DoesNotExist, ValidationError) as exc:
            raise TransfertoolError(f"cancel failed: no job {job_id}") from exc

    def update_priority(self, job_id: str, priority: int) -> None:
        try:
            update_priority(TransferJob.objects.get(job_id=job_id), priority)
        except (TransferJob.DoesNotExist, ValidationError) as exc:
            raise TransfertoolError(f"priority change refused for {job_id}: {exc}") from exc

    def failure_reasons(self, job_ids: Sequence[str]) -> dict[str, list[str]]:
        ids = _uuids(job_ids)
        out: dict[str, set[str]] = {
            str(j): set() for j in TransferJob.objects.filter(job_id__in=ids).values_list("job_id", flat=True)
        }
        rows = TransferFile.objects.filter(job__job_id__in=ids).exclude(reason="")
        for job_id, reason in rows.values_list("job__job_id", "reason"):
            out[str(job_id)].add(reason)
        return {k: sorted(v) for k, v in out.items()}

    def storage_element(self, url: str) -> str:
        return storage_element(url)

    def set_link_config(self, link: LinkConfig) -> LinkConfig:
        try:
            return LinkConfig.from_fts3(links.link_dict(links.set_link_config(link.body())))
        except ConfigError as exc:
            raise TransfertoolError(f"link configuration refused: {exc}") from exc

    def link_configs(self) -> list[LinkConfig]:
        return [LinkConfig.from_fts3(links.link_dict(row)) for row in links.link_configs()]

    def delete_link_config(self, symbolicname: str) -> None:
        links.delete_link_config(symbolicname)

    def set_storage_config(self, storage: StorageConfig) -> None:
        try:
            se.set_se_config(storage.body())
        except ConfigError as exc:
            raise TransfertoolError(f"storage configuration refused: {exc}") from exc

    def storage_configs(self) -> list[StorageConfig]:
        return [StorageConfig.from_fts3(name, entry) for name, entry in se.se_configs().items()]

    def delete_storage_config(self, storage: str) -> None:
        try:
            se.delete_se_config(storage)
        except ConfigError as exc:
            raise TransfertoolError(f"storage configuration refused: {exc}") from exc

    def set_activity_shares(self, shares: Mapping[str, float]) -> None:
        try:
            config.set_activity_shares({"vo": config.service_vo(), "share": dict(shares), "active": True})
        except ConfigError as exc:
            raise TransfertoolError(f"activity shares refused: {exc}") from exc

    def activity_shares(self) -> dict[str, float]:
        return dict(config.shares_dict())

    def delete_activity_shares(self) -> None:
        with contextlib.suppress(ConfigError):  # none to delete: no error, as with the other deletions
            config.delete_activity_shares(config.service_vo())


def _uuids(job_ids: Sequence[str]) -> list[uuid.UUID]:
    """The ids that can be job ids (anything else is simply unknown, as FTS3 answers)."""
    out = []
    for text in job_ids:
        try:
            out.append(uuid.UUID(str(text)))
        except ValueError:
            continue
    return out

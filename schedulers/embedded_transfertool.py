"""The platform's own transfer service as a transfertool, called in-process (no HTTP, no credentials)."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Mapping, Sequence

from .transfertool import (
    JobParams,
    LinkConfig,
    StorageConfig,
    TransferRequest,
    Transfertool,
    TransfertoolError,
)


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
            for j, s in TransferJob.objects.filter(job_id__in=_uuids(job_ids)).values_list("job_id", "state")
        }

    def cancel(self, job_id: str) -> None:
        from django.core.exceptions import ValidationError

        from transfers.models import TransferJob
        from transfers.services import cancel_job

        try:
            cancel_job(TransferJob.objects.get(job_id=job_id))
        except (TransferJob.DoesNotExist, ValidationError) as exc:
            raise TransfertoolError(f"cancel failed: no job {job_id}") from exc

    def update_priority(self, job_id: str, priority: int) -> None:
        from django.core.exceptions import ValidationError

        from transfers.models import TransferJob
        from transfers.services import update_priority

        try:
            update_priority(TransferJob.objects.get(job_id=job_id), priority)
        except (TransferJob.DoesNotExist, ValidationError) as exc:
            raise TransfertoolError(f"priority change refused for {job_id}: {exc}") from exc

    def failure_reasons(self, job_ids: Sequence[str]) -> dict[str, list[str]]:
        from transfers.models import TransferFile, TransferJob

        ids = _uuids(job_ids)
        out: dict[str, set[str]] = {
            str(j): set() for j in TransferJob.objects.filter(job_id__in=ids).values_list("job_id", flat=True)
        }
        rows = TransferFile.objects.filter(job__job_id__in=ids).exclude(reason="")
        for job_id, reason in rows.values_list("job__job_id", "reason"):
            out[str(job_id)].add(reason)
        return {k: sorted(v) for k, v in out.items()}

    def storage_element(self, url: str) -> str:
        from transfers.storage_urls import storage_element

        return storage_element(url)

    def set_link_config(self, link: LinkConfig) -> LinkConfig:
        from transfers.fts3.config import links
        from transfers.fts3.config.fields import ConfigError

        try:
            return LinkConfig.from_fts3(links.link_dict(links.set_link_config(link.body())))
        except ConfigError as exc:
            raise TransfertoolError(f"link configuration refused: {exc}") from exc

    def link_configs(self) -> list[LinkConfig]:
        from transfers.fts3.config import links

        return [LinkConfig.from_fts3(links.link_dict(row)) for row in links.link_configs()]

    def delete_link_config(self, symbolicname: str) -> None:
        from transfers.fts3.config import links

        links.delete_link_config(symbolicname)

    def set_storage_config(self, storage: StorageConfig) -> None:
        from transfers.fts3.config import storage as se
        from transfers.fts3.config.fields import ConfigError

        try:
            se.set_se_config(storage.body())
        except ConfigError as exc:
            raise TransfertoolError(f"storage configuration refused: {exc}") from exc

    def storage_configs(self) -> list[StorageConfig]:
        from transfers.fts3.config import storage as se

        return [StorageConfig.from_fts3(name, entry) for name, entry in se.se_configs().items()]

    def delete_storage_config(self, storage: str) -> None:
        from transfers.fts3.config import storage as se
        from transfers.fts3.config.fields import ConfigError

        try:
            se.delete_se_config(storage)
        except ConfigError as exc:
            raise TransfertoolError(f"storage configuration refused: {exc}") from exc

    def set_activity_shares(self, shares: Mapping[str, float]) -> None:
        from transfers.fts3.config import shares as config
        from transfers.fts3.config.fields import ConfigError

        try:
            config.set_activity_shares({"vo": config.service_vo(), "share": dict(shares), "active": True})
        except ConfigError as exc:
            raise TransfertoolError(f"activity shares refused: {exc}") from exc

    def activity_shares(self) -> dict[str, float]:
        from transfers.fts3.config import shares as config

        return dict(config.shares_dict())

    def delete_activity_shares(self) -> None:
        from transfers.fts3.config import shares as config
        from transfers.fts3.config.fields import ConfigError

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

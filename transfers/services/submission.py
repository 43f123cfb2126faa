"""Submitting a job: validate everything, store it in one transaction, dispatch after commit."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from srcnet.bulk_rows import insert_rows
from topology.services.storage_urls import StorageRegistry, UnregisteredStorageError

from ..choices import FileState, JobType
from ..models import TransferFile, TransferJob
from ..scitags import flow_id
from ..storage_urls import storage_element
from ..submitted_tokens import prepare_tokens, store_tokens
from .common import enqueue_dispatch, transfer_settings


class DuplicateJobError(Exception):
    """A deterministic job with this submitter id exists already (FTS3 answers 409)."""


@dataclass(frozen=True)
class FileRequest:
    """One copy of a submission. Rows with the same ``file_index`` are alternatives of one file."""

    source: str
    destination: str
    filesize: int | None = None
    checksum: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)
    activity: str | None = None
    scitag: int | None = None
    file_index: int | None = None
    # Handed over by the submitter (FTS3's per-file source_tokens / destination_tokens): checked, then kept
    # sealed (transfers/submitted_tokens.py). Never printed.
    source_token: str | None = field(default=None, repr=False)
    destination_token: str | None = field(default=None, repr=False)


def _initial_state(job_type: str, index: int) -> str:
    # Multihop: only the first hop can start. Multi-source: only the first source is tried at first.
    if job_type in (JobType.MULTIHOP, JobType.MULTI_SOURCE) and index > 0:
        return FileState.NOT_USED
    return FileState.SUBMITTED


def refuse_unregistered_urls(files: Sequence[FileRequest]) -> None:
    """ValidationError naming the first file and field whose URL is not on a registered storage endpoint."""
    registry = StorageRegistry.load()
    for position, request in enumerate(files):
        index = position if request.file_index is None else request.file_index
        for name, url in (("source", request.source), ("destination", request.destination)):
            try:
                registry.resolve(url)
            except UnregisteredStorageError as exc:
                raise ValidationError({f"files[{index}].{name}": str(exc)}) from exc


@transaction.atomic
def submit_job(
    *,
    files: Sequence[FileRequest],
    priority: int = 3,
    activity: str = "default",
    verify_checksum: str = "both",
    overwrite: bool = False,
    retry: int | None = None,
    retry_delay: float | None = None,
    timeout: int | None = None,
    metadata: dict[str, Any] | None = None,
    submitter: Any = None,
    job_type: str = JobType.NORMAL,
    job_id: Any = None,
    sid: str | None = None,
    vo_name: str = "ska",
    user_dn: str = "",
    expires: datetime | None = None,
    internal_params: dict[str, Any] | None = None,
    managed_tokens: bool = True,
) -> TransferJob:
    """Validate and store a job with its files (all or nothing), then have it dispatched after commit.

    Every source and destination must lie on a registered, active storage endpoint (the workers act on
    them with the service's own credentials). Raises ValidationError naming the field
    (``files[2].source``) or DuplicateJobError. Tokens submitted with the files are checked and, when
    ``managed_tokens``, exchanged for the service's own before anything is written (TokenError if the
    issuer does not answer)."""
    if not files:
        raise ValidationError({"files": "A job needs at least one file."})
    refuse_unregistered_urls(files)
    tokens = prepare_tokens(files, managed=managed_tokens)
    config = transfer_settings()
    job = TransferJob(
        priority=priority,
        activity=activity,
        verify_checksum=verify_checksum,
        overwrite=overwrite,
        retry=config["DEFAULT_RETRIES"] if retry is None else retry,
        retry_delay=config["RETRY_BACKOFF_SECONDS"] if retry_delay is None else retry_delay,
        timeout=timeout,
        metadata=metadata or {},
        submitter=submitter,
        job_type=job_type,
        sid=sid,
        vo_name=vo_name,
        user_dn=user_dn,
        expires=expires,
        internal_params=internal_params or {},
    )
    if job_id is not None:
        job.job_id = job_id
    if sid is not None and TransferJob.objects.filter(sid=sid).exists():
        raise DuplicateJobError(f"the sid {sid!r} is duplicated")
    try:
        job.full_clean(exclude=["sid"])
    except ValidationError as exc:
        raise ValidationError(exc.message_dict) from exc
    try:
        with transaction.atomic():
            job.save()
    except IntegrityError as exc:
        raise DuplicateJobError(f"a job with the id {job.job_id} or sid {sid!r} exists") from exc
    rows = []
    # Each copy's SciTags flow identifier: the client's, else its activity's (transfers/scitags.py).
    relay = job_type == JobType.MULTIHOP
    for position, request in enumerate(files):
        file_activity = request.activity or activity
        row = TransferFile(
            job=job,
            file_index=position if request.file_index is None else request.file_index,
            source_surl=request.source,
            dest_surl=request.destination,
            filesize=request.filesize,
            checksum=request.checksum,
            metadata=request.metadata,
            activity=file_activity,
            scitag=request.scitag if request.scitag is not None else flow_id(file_activity, relay=relay),
            scitag_from_client=request.scitag is not None,
            state=_initial_state(job_type, position),
        )
        try:
            # TransferFile has no unique field or constraint but its id: the unique checks (a per-row walk of
            # the model's fields) could find nothing, and were a sixth of a push cycle's submission.
            row.full_clean(exclude=["job"], validate_unique=False, validate_constraints=False)
        except ValidationError as exc:
            raise ValidationError({f"files[{position}].{k}": v for k, v in exc.message_dict.items()}) from exc
        rows.append(row)
    for row in rows:
        row.source_se, row.dest_se = storage_element(row.source_surl), storage_element(row.dest_surl)
    store_tokens(job, rows, tokens)
    # One INSERT for every file of the job, from one JSON document (srcnet/bulk_rows.py).
    insert_rows(TransferFile, rows)
    enqueue_dispatch()
    return job

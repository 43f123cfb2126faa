"""Jobs and files as FTS3 writes them: its key names, its date format, its state and flag encodings."""

from __future__ import annotations

import calendar
from typing import Any

from transfertools.protocol import fts_date

from ..choices import ChecksumMode, FileState
from ..models import TransferFile, TransferJob

CHECKSUM_FLAG: dict[str, str] = {
    ChecksumMode.BOTH: "b",
    ChecksumMode.TARGET: "t",
    ChecksumMode.SOURCE: "s",
    ChecksumMode.NONE: "n",
}
MIB = 1024 * 1024


def internal_params_text(params: dict[str, Any]) -> str:
    """``nostreams:4,timeout:3600,buffersize:8388608,strict`` as FTS3 packs them."""
    parts = []
    for key, value in params.items():
        if value is True:
            parts.append(key)
        elif value not in (None, False):
            parts.append(f"{key}:{value}")
    return ",".join(parts)


def job_dict(job: TransferJob, files: list[TransferFile] | None) -> dict[str, Any]:
    """The job row as FTS3 returns it; ``files`` only when the client asked for them."""
    first = files[0] if files else job.files.order_by("file_index", "id").first()
    out: dict[str, Any] = {
        "job_id": str(job.job_id),
        "source_se": first.source_se if first else None,
        "dest_se": first.dest_se if first else None,
        "job_state": job.state,
        "job_type": job.job_type,
        "cancel_job": bool(job.reason) and job.state == "CANCELED",
        "submit_host": "srcnet",
        "user_dn": job.user_dn,
        "cred_id": None,
        "vo_name": job.vo_name,
        "reason": job.reason or None,
        "submit_time": fts_date(job.created),
        "priority": job.priority,
        "max_time_in_queue": calendar.timegm(job.expires.utctimetuple()) if job.expires else None,
        "destination_spacetoken": None,
        "internal_job_params": internal_params_text(job.internal_params) or None,
        "dst_file_report": False,
        "overwrite_flag": "Y" if job.overwrite else "N",
        "job_finished": fts_date(job.finished),
        "source_spacetoken": None,
        "copy_pin_lifetime": -1,
        "verify_checksum": CHECKSUM_FLAG.get(str(job.verify_checksum), "n"),
        "bring_online": -1,
        "archive_timeout": -1,
        "target_qos": None,
        "job_metadata": job.metadata if isinstance(job.metadata, dict) else {},
        "retry": job.retry,
        "retry_delay": int(job.retry_delay),
        "os_project_id": None,
    }
    return out


def file_dict(row: TransferFile, job: TransferJob) -> dict[str, Any]:
    """One file row with every key FTS3 has (those without meaning here are null)."""
    throughput = None
    if row.duration_seconds and row.transferred_bytes:
        throughput = row.transferred_bytes / MIB / row.duration_seconds  # FTS3 reports MiB/s
    elif row.state == FileState.ACTIVE and row.progress_at and row.start_time:
        # While it copies, as FTS3 does from its performance markers: the progress so far over its time.
        elapsed = (row.progress_at - row.start_time).total_seconds()
        throughput = row.transferred_bytes / MIB / elapsed if elapsed > 0 else None
    return {
        "file_id": row.pk,
        "hashed_id": row.pk % 65536,
        "file_index": row.file_index,
        "job_id": str(job.job_id),
        "dest_surl_uuid": None,
        "vo_name": job.vo_name,
        "source_se": row.source_se,
        "dest_se": row.dest_se,
        "priority": job.priority,
        "file_state": row.state,
        "transfer_host": "srcnet" if row.attempts else None,
        "source_surl": row.source_surl,
        "dest_surl": row.dest_surl,
        "staging_host": None,
        "reason": row.reason,
        "recoverable": None,
        "filesize": row.filesize,
        "checksum": row.checksum or None,
        "finish_time": fts_date(row.finish_time),
        "start_time": fts_date(row.start_time),
        "archive_start_time": None,
        "archive_finish_time": None,
        "internal_file_params": None,
        "pid": None,
        "tx_duration": row.duration_seconds,
        "throughput": throughput,
        "retry": max(0, row.attempts - 1),
        "user_filesize": row.filesize,
        "file_metadata": row.metadata,
        "staging_metadata": None,
        "archive_metadata": None,
        "staging_start": None,
        "staging_finished": None,
        "selection_strategy": "orderly" if job.job_type == "R" else None,
        "bringonline_token": None,
        "log_file": None,
        "log_debug": None,
        "activity": row.activity,
        "scitag": row.scitag,
        "src_token_id": None,
        "dst_token_id": None,
        "file_state_initial": None,
    }

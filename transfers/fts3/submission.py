"""Reading an FTS3 job submission (POST /jobs) into the transfer service's terms.

Accepts what Rucio's conveyor and the ``fts3`` client send: unknown keys are ignored, explicit nulls take
the default. Anything this service cannot honour is refused with the reason (HTTP 400), never half-done."""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from ..choices import ChecksumMode, JobType
from ..services import FileRequest

# FTS3's base id for deterministic job ids: uuid5(uuid5(BASE_ID, vo), sid), so Rucio's prediction matches.
BASE_ID = uuid.UUID("01874efb-4735-4595-bc9c-591aef8240c9")
_DURATION = re.compile(r"^\s*(\d+)\s*([smhd]?)\s*$")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "": 3600}
# Bounds on what one submission expands to: a multi-replica file is one row per (source, destination) pair,
# so a body of a few hundred kB could otherwise ask for millions of rows. Rucio's conveyor submits at most
# a few hundred files per job (--group-bulk) and a handful of sources per file.
MAX_JOB_FILES = 10_000
MAX_REPLICA_PAIRS = 100


class SubmissionError(ValueError):
    """The submission cannot be accepted; ``status`` is the HTTP status to answer with."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


@dataclass
class ParsedJob:
    """Everything ``submit_job`` needs."""

    files: list[FileRequest]
    options: dict[str, Any] = field(default_factory=dict)


def _shown(value: Any) -> str:
    """A value as an error message quotes it: its repr, cut to a bounded length (bodies can be megabytes)."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def deterministic_job_id(vo: str, sid: str) -> uuid.UUID:
    return uuid.uuid5(uuid.uuid5(BASE_ID, vo), sid)


def _param(params: dict[str, Any], key: str, default: Any) -> Any:
    value = params.get(key)
    return default if value is None else value


def _integer(params: dict[str, Any], key: str, default: int | None) -> int | None:
    value = _param(params, key, default)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | str) or not str(value).lstrip("-").isdigit():
        raise SubmissionError(f"params.{key} must be an integer, got {_shown(value)}")
    return int(value)


def _verify_checksum(value: Any, any_checksum: bool) -> str:
    if value is None or value is False:
        # FTS3: false with a checksum given checks the destination; false and none given checks nothing.
        return ChecksumMode.TARGET if any_checksum else ChecksumMode.NONE
    if value is True:
        return ChecksumMode.BOTH
    if isinstance(value, str) and value.lower() in ChecksumMode.values:
        return value.lower()
    raise SubmissionError(
        f"params.verify_checksum must be true, false, both, source, target or none, got {_shown(value)}"
    )


def _max_time_in_queue(value: Any, now: datetime) -> datetime | None:
    if value in (None, 0, "0", ""):
        return None
    if isinstance(value, bool):
        raise SubmissionError("params.max_time_in_queue must be a number of hours or a duration like '6h'")
    match = _DURATION.match(str(value))
    if not match:
        raise SubmissionError(
            f"params.max_time_in_queue must be hours (an integer) or Ns/Nm/Nh/Nd, got {_shown(value)}"
        )
    # An integer means hours (FTS3's seconds_from_value).
    return now + timedelta(seconds=int(match.group(1)) * _UNITS[match.group(2)])


def _metadata(value: Any, where: str) -> dict[str, Any]:
    if value is None:
        return {}
    if isinstance(value, dict):
        return value
    if isinstance(value, str):
        return {"label": value}
    raise SubmissionError(f"{where} must be an object or a string")


def _checksum(value: Any, index: int) -> str:
    if value in (None, ""):
        return ""
    if not isinstance(value, str):
        raise SubmissionError(f"files[{index}].checksum must be a string like ADLER32:0cc737eb")
    algorithm, _, digest = value.partition(":")
    if algorithm.lower() != "adler32":
        raise SubmissionError(
            f"files[{index}].checksum: only ADLER32 is supported here, got {_shown(algorithm)}"
        )
    if not digest:
        # The algorithm alone (the fts3 client's default): compare source and destination, expect no value.
        return ""
    if not re.fullmatch(r"[0-9a-fA-F]{1,8}", digest):
        raise SubmissionError(f"files[{index}].checksum: {_shown(digest)} is not an adler32 value")
    return f"ADLER32:{digest.lower().zfill(8)}"


def _urls(entry: dict[str, Any], key: str, index: int) -> list[str]:
    urls = entry.get(key)
    if not isinstance(urls, list) or not urls or not all(isinstance(u, str) and u for u in urls):
        raise SubmissionError(f"files[{index}].{key} must be a non-empty list of URLs")
    return urls


def _tokens(entry: dict[str, Any], key: str, count: int, index: int) -> list[str] | None:
    """FTS3's per-file ``source_tokens`` / ``destination_tokens``: absent, or one token per URL."""
    tokens = entry.get(key)
    if tokens is None:
        return None
    one = "source" if key == "source_tokens" else "destination"
    if (
        not isinstance(tokens, list)
        or len(tokens) != count
        or not all(isinstance(t, str) and t.strip() for t in tokens)
    ):
        raise SubmissionError(f"files[{index}].{key} must be a list of {count} tokens, one per {one}")
    return [t.strip() for t in tokens]


def parse_submission(body: Any, *, vo: str, now: datetime) -> ParsedJob:
    """Validate a submission body; raise SubmissionError (400, 405) with the reason."""
    if not isinstance(body, dict):
        raise SubmissionError("the body must be a JSON object with 'files' and 'params'")
    if body.get("delete"):
        raise SubmissionError("Deletion jobs are no longer supported by FTS", status=405)
    params = body.get("params") or {}
    if not isinstance(params, dict):
        raise SubmissionError("params must be an object")
    entries = body.get("files")
    if not isinstance(entries, list) or not entries:
        raise SubmissionError("files must be a non-empty list")
    for key in ("bring_online", "copy_pin_lifetime", "archive_timeout"):
        value = params.get(key)
        if value is not None and not isinstance(value, bool) and isinstance(value, int | float) and value > 0:
            raise SubmissionError(
                f"params.{key}: staging and archiving are not supported (this service has no tape)"
            )
    multihop = bool(params.get("multihop"))
    expanded: list[FileRequest] = []
    multi_source = False
    for index, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise SubmissionError(f"files[{index}] must be an object")
        sources, destinations = _urls(entry, "sources", index), _urls(entry, "destinations", index)
        pairs = len(sources) * len(destinations)
        if pairs > MAX_REPLICA_PAIRS:
            raise SubmissionError(
                f"files[{index}].sources x files[{index}].destinations: {len(sources)} x {len(destinations)}"
                f" = {pairs} copies, more than the {MAX_REPLICA_PAIRS} one file may ask for"
            )
        if len(expanded) + pairs > MAX_JOB_FILES:
            raise SubmissionError(
                f"files: more than {MAX_JOB_FILES} transfers in one job (at files[{index}]);"
                " split the submission"
            )
        if pairs > 1:
            multi_source = True
        filesize = entry.get("filesize")
        if filesize is not None and (
            isinstance(filesize, bool) or not isinstance(filesize, int) or filesize < 0
        ):
            raise SubmissionError(f"files[{index}].filesize must be a non-negative integer")
        scitag = entry.get("scitag")
        if scitag is not None and (
            isinstance(scitag, bool) or not isinstance(scitag, int) or not 65 <= scitag <= 65535
        ):
            raise SubmissionError(f"files[{index}].scitag must be an integer from 65 to 65535")
        activity = entry.get("activity") or params.get("activity") or "default"
        source_tokens = _tokens(entry, "source_tokens", len(sources), index)
        destination_tokens = _tokens(entry, "destination_tokens", len(destinations), index)
        for source_index, source in enumerate(sources):
            for destination_index, destination in enumerate(destinations):
                expanded.append(
                    FileRequest(
                        source=source,
                        destination=destination,
                        filesize=filesize,
                        checksum=_checksum(entry.get("checksum"), index),
                        metadata=_metadata(entry.get("metadata"), f"files[{index}].metadata"),
                        activity=str(activity),
                        scitag=scitag,
                        file_index=index,
                        source_token=source_tokens[source_index] if source_tokens else None,
                        destination_token=(
                            destination_tokens[destination_index] if destination_tokens else None
                        ),
                    )
                )
    if multi_source and len(entries) > 1:
        raise SubmissionError("Multiple replicas jobs can only have one file")
    if multi_source and multihop:
        raise SubmissionError("a job cannot be both multihop and multi-source")
    job_type = JobType.MULTIHOP if multihop else JobType.MULTI_SOURCE if multi_source else JobType.NORMAL
    priority = _integer(params, "priority", 3) or 3
    retry = _integer(params, "retry", None)
    options: dict[str, Any] = {
        "job_type": job_type,
        "priority": max(1, min(5, priority)),
        "verify_checksum": _verify_checksum(params.get("verify_checksum"), any(f.checksum for f in expanded)),
        "overwrite": bool(params.get("overwrite")) or bool(params.get("overwrite_on_retry")),
        # FTS3: a negative retry means never; 0 or none means the server default.
        "retry": None if retry in (None, 0) else max(0, retry),
        "retry_delay": float(_integer(params, "retry_delay", 0) or 0) or None,
        "timeout": _integer(params, "timeout", None) or None,
        "metadata": _metadata(params.get("job_metadata"), "params.job_metadata"),
        "expires": _max_time_in_queue(params.get("max_time_in_queue"), now),
        "activity": str(params.get("activity") or expanded[0].activity or "default"),
        # FTS 3.14: tokens are managed (exchanged and refreshed by the service) unless the submitter says.
        "managed_tokens": not bool(params.get("unmanaged_tokens")),
        "internal_params": {
            k: params.get(k)
            for k in ("nostreams", "buffer_size", "strict_copy", "ipv4", "ipv6", "s3alternate")
            if params.get(k) not in (None, False)
        },
    }
    for key in ("nostreams", "buffer_size"):
        if key in options["internal_params"]:
            options["internal_params"][key] = _integer(params, key, None)
    generator = params.get("id_generator") or "standard"
    if generator not in ("standard", "deterministic"):
        raise SubmissionError(
            f"params.id_generator must be standard or deterministic, got {_shown(generator)}"
        )
    if generator == "deterministic":
        sid = params.get("sid")
        if not isinstance(sid, str) or not sid:
            raise SubmissionError("params.sid is required with id_generator deterministic")
        options["sid"], options["job_id"] = sid, deterministic_job_id(vo, sid)
    return ParsedJob(files=expanded, options=options)

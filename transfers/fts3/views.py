"""The FTS3 REST endpoints (plain Django views: the exact shapes and status codes FTS3 clients expect)."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import timedelta
from functools import wraps
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db.models import Prefetch
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt

from srcnet.roles import is_operator, may_submit_transfers
from transfertools.protocol import HTTP_NOT_FOUND, HTTP_NOT_MODIFIED, HTTP_OK

from ..choices import TERMINAL_JOB_STATES
from ..models import TransferFile, TransferJob
from ..services import DuplicateJobError, cancel_job, submit_job, update_priority
from ..tokens import TokenError
from .auth import AuthError, Caller, authenticate
from .formats import file_dict, job_dict
from .submission import BASE_ID, SubmissionError, parse_submission

API_VERSION = {"major": 3, "minor": 13, "patch": 4}
STORAGE_ELEMENT_FORM = "scheme://host:port"
MAX_IDS = 100
_REASONS = {
    200: "OK",
    207: "Multi-Status",
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    405: "Method Not Allowed",
    409: "Conflict",
    500: "Internal Server Error",
}


def _vo() -> str:
    return str(getattr(settings, "SRCNET_FTS3_VO", "ska"))


def _error(status: int, message: str) -> JsonResponse:
    # Bounded: a message may quote a field of a body that is megabytes long.
    message = message if len(message) <= 1000 else message[:997] + "..."
    return JsonResponse(
        {"status": f"{status} {_REASONS.get(status, '')}".strip(), "message": message}, status=status
    )


def fts_endpoint(
    methods: tuple[str, ...],
) -> Callable[[Callable[..., HttpResponse]], Callable[..., HttpResponse]]:
    """Authenticate, check the method, and turn errors into FTS3-shaped answers."""

    def wrap(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        @csrf_exempt
        @wraps(view)
        def handler(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            if request.method not in methods:
                return _error(405, f"{request.method} is not allowed here")
            try:
                caller = authenticate(request)
            except AuthError as exc:
                return _error(exc.status, str(exc))
            return view(request, caller, *args, **kwargs)

        return handler

    return wrap


@fts_endpoint(("GET",))
def api_version(request: HttpRequest, caller: Caller) -> HttpResponse:
    return JsonResponse(
        {
            "api": API_VERSION,
            "core": API_VERSION,
            "schema": {"major": 8, "minor": 0, "patch": 0},
            "delegation": {"major": 1, "minor": 0, "patch": 0},
            "_links": {},
            # Not FTS3's: how this service names storage elements in source_se, dest_se and /config. FTS3
            # drops the port (scheme://host); here sites may differ only by port. Clients that configure
            # links read it (transfertools.fts3_rest); FTS3 clients ignore keys they do not know.
            "srcnet": {"storage_elements": STORAGE_ELEMENT_FORM},
        }
    )


@fts_endpoint(("GET",))
def whoami(request: HttpRequest, caller: Caller) -> HttpResponse:
    vo = _vo()
    return JsonResponse(
        {
            "user_dn": caller.dn,
            "dn": [caller.dn],
            "vos": [vo],
            "vos_id": [str(_vo_id(vo))],
            "voms_cred": [],
            "roles": [],
            "level": {"transfer": "all" if is_operator(caller.user) else "vo"},
            "delegation_id": _delegation_id(caller),
            "method": caller.method,
            "is_root": is_operator(caller.user),
            "base_id": str(BASE_ID),
        }
    )


def _vo_id(vo: str):  # type: ignore[no-untyped-def]
    import uuid

    return uuid.uuid5(BASE_ID, vo)


def _delegation_id(caller: Caller) -> str:
    import hashlib

    return hashlib.sha1(caller.dn.encode()).hexdigest()[:16]


@fts_endpoint(("GET",))
def delegation(request: HttpRequest, caller: Caller, delegation_id: str) -> HttpResponse:
    # Copies run with the service's own storage credentials; a client never needs to delegate a proxy.
    expiry = timezone.now() + timedelta(days=30)
    return JsonResponse({"termination_time": expiry.strftime("%Y-%m-%dT%H:%M:%S"), "voms_attrs": []})


@fts_endpoint(("GET", "POST"))
def jobs(request: HttpRequest, caller: Caller) -> HttpResponse:
    if request.method == "POST":
        return _submit(request, caller)
    states = [s for s in request.GET.get("state_in", "").split(",") if s]
    queryset = TransferJob.objects.order_by("-created")
    if not is_operator(caller.user):
        queryset = queryset.filter(submitter=caller.user)
    queryset = (
        queryset.filter(state__in=states) if states else queryset.exclude(state__in=TERMINAL_JOB_STATES)
    )
    text = request.GET.get("limit", "") or "100"
    if not text.isdigit():
        return _error(400, f"limit must be a positive integer, got {text[:40]!r}")
    limit = max(1, min(int(text), 1000))
    return JsonResponse([job_dict(job, None) for job in queryset[:limit]], safe=False)


def _submit(request: HttpRequest, caller: Caller) -> HttpResponse:
    if not may_submit_transfers(caller.user):
        # Workers copy with the service's own credentials: only operators and the transfer service's
        # registered clients (Rucio's conveyor) may ask them to.
        return _error(403, f"{caller.dn} may not submit transfers (operators and registered services only)")
    try:
        body = json.loads(request.body or b"null")
    except (ValueError, UnicodeDecodeError, RecursionError):
        # RecursionError: arrays or objects nested thousands deep.
        return _error(400, "the body is not valid JSON")
    try:
        parsed = parse_submission(body, vo=_vo(), now=timezone.now())
    except SubmissionError as exc:
        return _error(exc.status, str(exc))
    metadata = {**parsed.options.pop("metadata"), "auth_method": caller.method}
    try:
        job = submit_job(
            files=parsed.files,
            submitter=caller.user,
            vo_name=_vo(),
            user_dn=caller.dn,
            metadata=metadata,
            **parsed.options,
        )
    except DuplicateJobError:
        return _error(409, "The sid provided by the user is duplicated")
    except TokenError as exc:
        # The issuer did not exchange the submitted tokens: nothing was stored; the submitter may retry.
        return _error(503, str(exc))
    except ValidationError as exc:
        field, messages = next(iter(exc.message_dict.items()))
        return _error(400, f"{field}: {' '.join(messages)}")
    return JsonResponse({"job_id": str(job.job_id)})


def _parse_ids(text: str) -> list[str]:
    return [part for part in text.split(",") if part][:MAX_IDS]


def _find_jobs(ids: list[str]) -> dict[str, TransferJob]:
    import uuid

    valid = []
    for text in ids:
        try:
            valid.append(uuid.UUID(text))
        except ValueError:
            continue
    files = Prefetch("files", queryset=TransferFile.objects.order_by("file_index", "id"))
    return {str(j.job_id): j for j in TransferJob.objects.filter(job_id__in=valid).prefetch_related(files)}


def _not_found(job_id: str) -> dict[str, Any]:
    return {
        "job_id": job_id,
        "http_status": HTTP_NOT_FOUND,
        "http_message": f"No job with the id {job_id} has been found",
    }


def _visible(job: TransferJob, caller: Caller) -> bool:
    """Operators see every job; anyone else only the jobs they submitted (not the platform's own)."""
    return is_operator(caller.user) or (job.submitter_id is not None and job.submitter_id == caller.user.pk)


def _multistatus(entries: list[dict[str, Any]], single: bool) -> HttpResponse:
    """FTS3's answer shape: one object for one id (HTTP status from it), a list (207 if any failed)."""
    if single:
        code = 404 if entries[0]["http_status"] == HTTP_NOT_FOUND else 200
        return JsonResponse(entries[0], status=code)
    code = 207 if any(e["http_status"] not in (HTTP_OK, HTTP_NOT_MODIFIED) for e in entries) else 200
    return JsonResponse(entries, safe=False, status=code)


@fts_endpoint(("GET", "DELETE", "POST"))
def job_detail(request: HttpRequest, caller: Caller, ids: str) -> HttpResponse:
    wanted = _parse_ids(ids)
    if request.method == "POST":
        return _reprioritise(request, caller, wanted)
    found = _find_jobs(wanted)
    fields = [f for f in request.GET.get("files", "").split(",") if f]
    entries = []
    for job_id in wanted:
        job = found.get(job_id)
        if job is None or not _visible(job, caller):
            entries.append(_not_found(job_id))
            continue
        status = HTTP_OK
        if request.method == "DELETE":
            if job.state in TERMINAL_JOB_STATES:
                status = HTTP_NOT_MODIFIED
            else:
                job = cancel_job(job)
                job = _find_jobs([job_id])[job_id]
        rows = list(job.files.all())
        entry = {**job_dict(job, rows), "http_status": status}
        if fields:
            entry["files"] = [{k: v for k, v in file_dict(r, job).items() if k in fields} for r in rows]
        entries.append(entry)
    return _multistatus(entries, single=len(wanted) == 1)


def _reprioritise(request: HttpRequest, caller: Caller, wanted: list[str]) -> HttpResponse:
    try:
        body = json.loads(request.body or b"{}")
        priority = body["params"]["priority"]
    except (ValueError, KeyError, TypeError, RecursionError):
        return _error(400, 'the body must be {"params": {"priority": N}}')
    found = _find_jobs(wanted)
    entries = []
    for job_id in wanted:
        job = found.get(job_id)
        if job is None or not _visible(job, caller):
            entries.append(_not_found(job_id))
            continue
        try:
            job = update_priority(job, priority)
        except ValidationError:
            return _error(400, "params.priority must be an integer from 1 to 5")
        entries.append({**job_dict(job, None), "http_status": HTTP_OK})
    return _multistatus(entries, single=len(wanted) == 1)


@fts_endpoint(("GET",))
def job_files(request: HttpRequest, caller: Caller, job_id: str) -> HttpResponse:
    job = _find_jobs([job_id]).get(job_id)
    if job is None or not _visible(job, caller):
        return JsonResponse(_not_found(job_id), status=404)
    return JsonResponse([file_dict(r, job) for r in job.files.all()], safe=False)


@fts_endpoint(("GET",))
def job_dm(request: HttpRequest, caller: Caller, job_id: str) -> HttpResponse:
    # Data-management operations (deletions, staging) are not offered: always none.
    job = _find_jobs([job_id]).get(job_id)
    if job is None or not _visible(job, caller):
        return JsonResponse(_not_found(job_id), status=404)
    return JsonResponse([], safe=False)

"""Admitting waiting files to their links: strict priority, activity shares, link and storage caps."""

from __future__ import annotations

import uuid
from collections import defaultdict
from datetime import timedelta
from typing import Any

from django.db import connection, transaction
from django.db.models import CharField, Count, Max, Min, Value
from django.db.models.functions import Cast, Coalesce, NullIf
from django.utils import timezone

from srcnet.bulk_rows import insert_rows, update_rows

from ..choices import FileState, JobState, OptimizerMode
from ..copy_sessions import Packing, SessionRules
from ..models import (
    ActivityShare,
    LinkLimit,
    LinkPause,
    OptimizerDecision,
    StorageElementLimit,
    TransferAttempt,
    TransferFile,
    TransferJob,
)
from ..scheduling import most_specific, pick_activity, share_key
from .common import dispatch_begins, send_copies, transfer_settings

# Serialises dispatchers so two workers never both admit the last free slot of a link.
DISPATCH_LOCK_KEY = 0x5C_4E_7D_15
DISPATCH_BATCH = 2000
# How far back the activity shares look when sharing a link's slots.
SHARE_WINDOW = timedelta(hours=1)
# FTS3's storage default when no row sets a value.
DEFAULT_SE_MAX_ACTIVE = 200
QUEUE_EXPIRED_REASON = "Job has been canceled because it stayed in the queue for too long"


def link_limit(source_se: str, dest_se: str, limits: Any = None) -> int:
    """The concurrency a link may use now: its fixed maximum, or the optimizer's latest decision."""
    rows = {(r.source_se, r.dest_se): r for r in (limits if limits is not None else LinkLimit.objects.all())}
    row = most_specific(source_se, dest_se, rows)
    if row is None:
        return int(transfer_settings()["DEFAULT_MAX_ACTIVE_PER_LINK"])
    assert isinstance(row, LinkLimit)
    if row.optimizer_mode == OptimizerMode.FIXED:
        return row.max_active
    decision = OptimizerDecision.objects.filter(source_se=source_se, dest_se=dest_se).first()
    # A link seen for the first time starts half-way, as FTS3's optimizer does.
    active = decision.active if decision else (row.min_active + row.max_active) // 2
    return max(row.min_active, min(row.max_active, active))


def stream_settings(row: TransferFile) -> tuple[int | None, int | None]:
    """TCP streams and TCP buffer size for one file's copy: the job's ``nostreams``, else the most
    specific ``LinkLimit`` of its link that sets ``nostreams``, else none (gfal2's default); the job's
    ``buffer_size`` (bytes) or none."""
    params = row.job.internal_params or {}
    nostreams = _positive(params.get("nostreams"))
    if nostreams is None:
        rows = {(r.source_se, r.dest_se): r for r in LinkLimit.objects.filter(nostreams__gt=0)}
        link = most_specific(row.source_se, row.dest_se, rows)
        nostreams = link.nostreams if isinstance(link, LinkLimit) else None
    return nostreams, _positive(params.get("buffer_size"))


def _positive(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        return None
    return value


def _se_caps() -> tuple[dict[str, int], dict[str, int]]:
    """Each storage element's caps: its own row's value, else the '*' row's, else the default (a row may
    set one direction only, as FTS3's /config/se does)."""
    rows = {r.storage_element: r for r in StorageElementLimit.objects.all()}
    default = rows.get("*")
    default_in = (default.inbound_max_active if default else None) or DEFAULT_SE_MAX_ACTIVE
    default_out = (default.outbound_max_active if default else None) or DEFAULT_SE_MAX_ACTIVE
    inbound: dict[str, int] = defaultdict(lambda: default_in)
    outbound: dict[str, int] = defaultdict(lambda: default_out)
    for name, row in rows.items():
        inbound[name] = row.inbound_max_active or default_in
        outbound[name] = row.outbound_max_active or default_out
    return inbound, outbound


def expire_queued(now: Any = None) -> int:
    """Fail what still waits in jobs whose max_time_in_queue has passed."""
    from .outcomes import settle_job

    now = now or timezone.now()
    # The jobs first (a few, by the jobs' state index), then their files: one query joining every waiting
    # file to its job cost every dispatch 12 ms with 10 000 files waiting (bench/control_plane).
    expired = list(
        TransferJob.objects.filter(
            state__in=(JobState.SUBMITTED, JobState.ACTIVE), expires__lt=now
        ).values_list("pk", flat=True)
    )
    if not expired:
        return 0
    rows = list(
        TransferFile.objects.select_related("job").filter(
            job_id__in=expired, state__in=(FileState.SUBMITTED, FileState.NOT_USED)
        )
    )
    for row in rows:
        row.state, row.reason, row.finish_time = FileState.FAILED, QUEUE_EXPIRED_REASON, now
        row.save(update_fields=["state", "reason", "finish_time"])
    for job in {row.job for row in rows}:
        settle_job(job)
    return len(rows)


@transaction.atomic
def dispatch() -> list[int]:
    """Admit waiting files while their link, source and destination have free slots.

    Per link: only the highest waiting priority is served (strict priority, FIFO within it), and its slots
    go to the activities present by weight. No more copies run at once than the workers have slots for
    (``COPY_SLOTS``, srcnet/workers.py): an admitted copy starts at once; when the slots bind, the links
    whose oldest waiting file is oldest are served first. Returns the ids of the attempts created; their
    execution is enqueued when this transaction commits.

    What waits is read per link (one aggregate), and only the files a link has room for are read and locked
    (as FTS3's schedulers do): a dispatch costs the links it serves, not the backlog."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s)", [DISPATCH_LOCK_KEY])
    # Begun once it holds the lock, not before: asks made while it waited for the one running send nothing
    # more (it has not read yet, so it sees what they were for), so at most one dispatch waits for the lock
    # instead of one worker process per ask.
    dispatch_begins()
    now = timezone.now()
    expire_queued(now)
    limits = list(LinkLimit.objects.all())
    inbound_cap, outbound_cap = _se_caps()
    weights = {s.activity: s.weight for s in ActivityShare.objects.all()}
    active_link: dict[tuple[str, str], int] = defaultdict(int)
    active_in: dict[str, int] = defaultdict(int)
    active_out: dict[str, int] = defaultdict(int)
    for count in _copies_running():
        active_link[(count["source_se"], count["dest_se"])] += count["n"]
        active_out[count["source_se"]] += count["n"]
        active_in[count["dest_se"]] += count["n"]
    paused = set(LinkPause.objects.values_list("source_se", "dest_se"))
    rules = SessionRules.from_settings(transfer_settings())
    admitted: list[list[TransferFile]] = []
    slots = int(transfer_settings()["COPY_SLOTS"]) - sum(active_link.values())
    for link, top, largest in _waiting_links(now):
        if link in paused:
            continue
        free = min(link_limit(*link, limits) - active_link[link], slots - len(admitted))
        if free <= 0:
            continue
        wanted = rules.files_to_read(link, free, largest)
        candidates = _candidates(link, top, now, wanted, by_activity=bool(weights))
        recent = _recent_by_share(link, now, weights) if weights else {}
        packing = Packing(rules, waiting=len(candidates), slots=free)
        while candidates:
            if weights:
                chosen = pick_activity({share_key(r.activity, weights) for r in candidates}, weights, recent)
                if chosen is None:
                    break
                row = next(r for r in candidates if share_key(r.activity, weights) == chosen)
                recent[chosen] = recent.get(chosen, 0) + 1
            else:
                row = candidates[0]
            candidates.remove(row)
            if packing.joins_open_session(row):
                continue
            if (
                free <= 0
                or active_out[row.source_se] >= outbound_cap[row.source_se]
                or active_in[row.dest_se] >= inbound_cap[row.dest_se]
            ):
                break
            free -= 1
            active_link[link] += 1
            active_out[row.source_se] += 1
            active_in[row.dest_se] += 1
            packing.start_copy(row)
        admitted.extend(packing.copies)
    return _admit(admitted, now)


def _copies_running() -> Any:
    """Per link, the copies running: a session of files counts once (it holds one slot), as one file does
    (rows admitted before sessions existed have no session and count one each)."""
    copy = Coalesce(NullIf("copy_session", Value("")), Cast("id", CharField()))
    return (
        TransferFile.objects.filter(state=FileState.ACTIVE)
        .values("source_se", "dest_se")
        .annotate(n=Count(copy, distinct=True))
        .order_by()
    )


def _waiting(now: Any) -> Any:
    """The files that may start now: submitted, in a job still running, past any retry back-off."""
    return TransferFile.objects.filter(
        state=FileState.SUBMITTED, job__state__in=(JobState.SUBMITTED, JobState.ACTIVE)
    ).exclude(retry_after__gt=now)


def _waiting_links(now: Any) -> list[tuple[tuple[str, str], int, int | None]]:
    """Each link with files waiting, the highest priority waiting on it and the largest file size waiting
    there at that priority; the links ordered as their first file would be served: highest priority first,
    then the oldest job at that priority."""
    rows = (
        _waiting(now)
        .values_list("source_se", "dest_se", "job__priority")
        .annotate(oldest=Min("job__created"), largest=Max("filesize"))
        .order_by("-job__priority", "oldest", "source_se", "dest_se")
    )
    links: dict[tuple[str, str], tuple[int, int | None]] = {}
    for source_se, dest_se, priority, _, largest in rows:
        links.setdefault((source_se, dest_se), (priority, largest))  # its first row is its top priority's
    return [(link, priority, largest) for link, (priority, largest) in links.items()]


def _candidates(
    link: tuple[str, str], priority: int, now: Any, free: int, *, by_activity: bool
) -> list[TransferFile]:
    """The first ``free`` files waiting on ``link`` at ``priority`` (FIFO: oldest job first), locked (one
    another transaction holds, a cancel's, is passed over); with activity shares, the first ``free`` of each
    activity waiting there, so that every slot could go to any of them."""
    waiting = _waiting(now).filter(source_se=link[0], dest_se=link[1], job__priority=priority)
    if not by_activity:
        return _first(waiting, free)
    activities = waiting.order_by().values_list("activity", flat=True).distinct()
    return [row for activity in activities for row in _first(waiting.filter(activity=activity), free)]


def _first(waiting: Any, count: int) -> list[TransferFile]:
    # Without the JSON the dispatch never reads (decoded for every row and its job: up to a few hundred).
    return list(
        waiting.select_for_update(skip_locked=True, of=("self",))
        .select_related("job")
        .defer("metadata", "job__metadata", "job__internal_params")
        .order_by("job__created", "job_id", "file_index", "id")[: min(count, DISPATCH_BATCH)]
    )


def _recent_by_share(link: tuple[str, str], now: Any, weights: dict[str, float]) -> dict[str, int]:
    """Files each share was admitted on this link within the share window."""
    rows = (
        TransferFile.objects.filter(source_se=link[0], dest_se=link[1], start_time__gte=now - SHARE_WINDOW)
        .exclude(state=FileState.SUBMITTED)
        .values("activity")
        .annotate(n=Count("id"))
    )
    counts: dict[str, int] = defaultdict(int)
    for r in rows:
        counts[share_key(r["activity"], weights)] += r["n"]
    return dict(counts)


def _admit(copies: list[list[TransferFile]], now: Any) -> list[int]:
    """Start ``copies`` (each one file, or the files of a session): the files ACTIVE with a new attempt each,
    one message per copy, sent when this transaction commits."""
    from ..choices import JobState as States

    # The start is the admission, not the instant this dispatch began (``now``): a copy that ended after
    # that instant, and whose slot this admission takes, must not look as if it overlapped this one.
    admitted_at = max(now, timezone.now())
    rows = [row for copy in copies for row in copy]
    # Each copy's message id is chosen here, so that sending it needs no second write to record it.
    message_of = {row.pk: str(uuid.uuid4()) for copy in copies for row in copy[:1]}
    for copy in copies:
        for row in copy:
            row.copy_session = message_of[copy[0].pk]
    for row in rows:
        row.state, row.start_time, row.retry_after = FileState.ACTIVE, admitted_at, None
        row.attempts += 1
    # A few statements for the whole admission, not two per file: at a file rate the round trips are the cost.
    update_rows(TransferFile, rows, ["state", "attempts", "start_time", "retry_after", "copy_session"])
    attempts = [TransferAttempt(file=row, number=row.attempts, task_id=row.copy_session) for row in rows]
    insert_rows(TransferAttempt, attempts)
    job_ids = {row.job_id for row in rows}
    TransferJob.objects.filter(pk__in=job_ids, state=States.SUBMITTED).update(state=States.ACTIVE)
    by_message: dict[str, list[int]] = defaultdict(list)
    for attempt in attempts:
        by_message[attempt.task_id].append(attempt.pk)
    messages = list(by_message.items())
    if messages:
        transaction.on_commit(lambda: send_copies(messages))
    return [attempt.pk for attempt in attempts]

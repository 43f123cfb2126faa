"""Writes of the transfer service: submission, dispatch, attempt outcomes, cancellation, optimization."""

from .cancel import cancel_job, pause_link, resume_link, update_priority
from .common import enqueue_dispatch as enqueue_dispatch_after_change
from .dispatch import DISPATCH_LOCK_KEY, dispatch, expire_queued, link_limit, stream_settings
from .outcomes import (
    beat,
    beat_session,
    claim_attempt,
    claim_session,
    finish_attempt,
    finish_attempts,
    reap_lost_attempts,
)
from .submission import DuplicateJobError, FileRequest, submit_job

__all__ = [
    "DISPATCH_LOCK_KEY",
    "DuplicateJobError",
    "FileRequest",
    "beat",
    "beat_session",
    "cancel_job",
    "claim_attempt",
    "claim_session",
    "dispatch",
    "enqueue_dispatch_after_change",
    "expire_queued",
    "finish_attempt",
    "finish_attempts",
    "link_limit",
    "pause_link",
    "reap_lost_attempts",
    "resume_link",
    "stream_settings",
    "submit_job",
    "update_priority",
]

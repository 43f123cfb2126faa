"""Writes of the transfer service: submission, dispatch, attempt outcomes, cancellation, optimization."""

from .cancel import cancel_job, pause_link, resume_link, update_priority
from .common import enqueue_dispatch as enqueue_dispatch_after_change
from .dispatch import DISPATCH_LOCK_KEY, dispatch, expire_queued, link_limit, stream_settings
from .outcomes import beat, claim_attempt, finish_attempt, reap_lost_attempts
from .submission import DuplicateJobError, FileRequest, submit_job

__all__ = [
    "DISPATCH_LOCK_KEY",
    "DuplicateJobError",
    "FileRequest",
    "beat",
    "cancel_job",
    "claim_attempt",
    "dispatch",
    "enqueue_dispatch_after_change",
    "expire_queued",
    "finish_attempt",
    "link_limit",
    "pause_link",
    "reap_lost_attempts",
    "resume_link",
    "stream_settings",
    "submit_job",
    "update_priority",
]

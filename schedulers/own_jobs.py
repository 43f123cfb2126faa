"""Which jobs at the platform's transfer service are the push loop's own.

Any client of the FTS3 endpoint may write what it likes into a job's metadata (a ``lane``, a
``replica_id``), so what the platform learns from a job's metadata (lane measurements, a copy's progress
for its predicted arrival) comes only from the loop's jobs: those submitted in-process (no submitter), or
through the FTS3 REST API by an account that may configure the service (``transfers.configure_transfers``:
the push scheduler's service account, already trusted with the plan's link limits)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.contrib.auth import get_user_model

from srcnet.roles import may_configure_transfers


def submitted_by_push_loop(submitter: Any) -> bool:
    """Whether a job with this submitter (a user, or None for in-process) is the push loop's."""
    return submitter is None or may_configure_transfers(submitter)


def push_loop_submitters(submitter_ids: Iterable[int | None]) -> set[int | None]:
    """Of these submitter ids (None: in-process), those whose jobs are the push loop's."""
    ids = {i for i in submitter_ids if i is not None}
    users = get_user_model().objects.filter(pk__in=ids)
    return {None, *(user.pk for user in users if submitted_by_push_loop(user))}

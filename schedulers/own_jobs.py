"""Which jobs at the platform's transfer service are the push loop's own.

Any client of the FTS3 endpoint may write what it likes into a job's metadata (a ``lane``), so what the
platform learns from a job's metadata (lane measurements) comes only from the loop's jobs: those submitted
in-process (no submitter), or through the FTS3 REST API by an account that may configure the service
(``transfers.configure_transfers``: the push scheduler's service account, already trusted with the plan's
link limits). A job's replica is never read from its metadata: the loop's copy requests name it
(``replicas.CopyRequest``)."""

from __future__ import annotations

from typing import Any

from srcnet.roles import may_configure_transfers


def submitted_by_push_loop(submitter: Any) -> bool:
    """Whether a job with this submitter (a user, or None for in-process) is the push loop's."""
    return submitter is None or may_configure_transfers(submitter)

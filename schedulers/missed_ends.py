"""Job ends that no copy request heard: settled by the push cycle.

The platform's own transfer service settles a copy's replica when its job ends (the ``job_finished``
signal, ``replicas.services.record_embedded_job_end``), through the copy request that names the job. A
client that submits over HTTP (``Fts3Transfertool`` without following) writes that request after the
service answered with the job's id, in the push cycle's transaction; a job short enough to end before that
transaction commits finds no request to settle, and its replica would stay COPYING for ever. Each push
cycle therefore settles the open requests at the own service whose job has already ended, as the signal
would have (settling is idempotent, so a signal that did arrive meanwhile changes nothing).
"""

from __future__ import annotations

import logging

from django.db.models import CharField, Subquery
from django.db.models.functions import Cast

from replicas.models import CopyRequest
from replicas.services import record_embedded_job_end
from transfers.choices import TERMINAL_JOB_STATES
from transfers.models import TransferJob

log = logging.getLogger(__name__)


def settle_missed_ends() -> list[str]:
    """Settle every open copy request at the platform's own service whose job has ended; the job ids."""
    open_jobs = CopyRequest.objects.filter(endpoint="", settled__isnull=True).values("job_id")
    ended = (
        TransferJob.objects.annotate(job_text=Cast("job_id", output_field=CharField()))
        .filter(job_text__in=Subquery(open_jobs), state__in=TERMINAL_JOB_STATES)
        .order_by("pk")
    )
    settled = []
    for job in ended:
        if record_embedded_job_end(job):
            settled.append(str(job.job_id))
    if settled:
        log.warning("settled %d copy requests whose jobs ended unheard: %s", len(settled), settled)
    return settled

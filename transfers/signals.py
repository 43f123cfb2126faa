"""Signals other apps listen to (the replicas app updates replicas when a job ends)."""

from django.dispatch import Signal

# Sent after the transaction that moved a job to a terminal state commits; kwarg ``job``.
job_finished = Signal()

"""Copy requests for the jobs submitted before they existed, from the ``replica_id`` those jobs carried in
their metadata (the embedded service's transfer jobs and the external FTS3 jobs the push loop follows), so
that a copy in flight across the upgrade is still settled when its job ends, and lane health keeps its
history. Read once, here: no code finds a replica from a job's metadata any more."""

import re
from datetime import datetime, timezone

from django.db import migrations

TERMINAL = ("FINISHED", "FINISHEDDIRTY", "FAILED", "CANCELED")
# replicas.services.SOURCE_PROBLEM as of this migration (a migration keeps its own copy: the code may change)
SOURCE_PROBLEM = re.compile(r"^(after \d+ attempts: )?(SOURCE|REFUSED)\b")


def _plan(metadata):
    lane = metadata.get("lane") or ["", ""]
    arrival = metadata.get("predicted_arrival")
    return {
        "source_site": str(lane[0])[:64] if len(lane) == 2 else "",
        "destination_site": str(lane[1])[:64] if len(lane) == 2 else "",
        "planned_bps": metadata.get("planned_bps"),
        "streams": int(metadata.get("streams") or 0),
        "streams_per_file": int(metadata.get("streams_per_file") or 0),
        "predicted_arrival": datetime.fromtimestamp(float(arrival), tz=timezone.utc) if arrival else None,
    }


def forward(apps, schema_editor):
    Replica = apps.get_model("replicas", "Replica")
    CopyRequest = apps.get_model("replicas", "CopyRequest")
    TransferJob = apps.get_model("transfers", "TransferJob")
    ExternalJob = apps.get_model("schedulers", "ExternalJob")
    via = dict(Replica.objects.values_list("pk", "via__name"))

    def add(replica_id, endpoint, job_id, state, settled, metadata, reasons):
        if not isinstance(replica_id, int) or replica_id not in via:
            return
        ended = state in TERMINAL
        CopyRequest.objects.get_or_create(
            replica_id=replica_id,
            endpoint=endpoint,
            job_id=job_id,
            defaults={
                **_plan(metadata),
                "via_site": via[replica_id] or "",
                "state": state if ended else "SUBMITTED",
                "reasons": reasons if ended else [],
                "source_problem": ended
                and state != "FINISHED"
                and any(SOURCE_PROBLEM.match(r.strip()) for r in reasons),
                "settled": settled if ended else None,
            },
        )

    for job in TransferJob.objects.filter(metadata__has_key="replica_id"):
        reasons = sorted({r for r in job.files.exclude(reason="").values_list("reason", flat=True)})
        add(job.metadata.get("replica_id"), "", str(job.job_id), job.state, job.finished, job.metadata, reasons)
    for row in ExternalJob.objects.filter(metadata__has_key="replica_id"):
        add(row.metadata.get("replica_id"), row.endpoint, row.job_id, row.state, row.settled, row.metadata, [])


class Migration(migrations.Migration):
    dependencies = [
        ("replicas", "0008_copy_request"),
        ("transfers", "0013_scitag_from_client"),
        ("schedulers", "0007_pathmeasurement_planned_bps"),
    ]

    operations = [migrations.RunPython(forward, migrations.RunPython.noop)]

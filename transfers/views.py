"""Portal pages of the transfer service."""

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse

from srcnet.views import Column, object_list

from . import filtersets
from .models import TransferFile


@login_required
def files(request: HttpRequest) -> HttpResponse:
    return object_list(
        request,
        title="Transfers",
        queryset=TransferFile.objects.select_related("job").order_by("-id"),
        filterset_class=filtersets.TransferFileFilterSet,
        columns=[
            Column("Job", lambda f: str(f.job.job_id)[:8]),
            Column("Source", lambda f: f.source_surl),
            Column("Destination", lambda f: f.dest_surl),
            Column("State", lambda f: f.state),
            Column("Attempts", lambda f: f.attempts),
            Column("MB/s", lambda f: f"{f.throughput_bps / 8e6:.1f}" if f.throughput_bps else ""),
            Column("Reason", lambda f: f.reason),
        ],
    )

"""Execution rules without copies: the default timeout, which streams a copy gets, the per-storage outbound
cap, and the optimizer's 97 % success threshold."""

from __future__ import annotations

import pytest

from transfers.executor import MIB, default_timeout
from transfers.models import LinkLimit, TransferFile
from transfers.services import FileRequest, stream_settings, submit_job

SRC, DST = "root://src.example.org:1094", "root://dst.example.org:1094"


@pytest.mark.parametrize(
    ("size", "seconds"),
    [(None, 600), (0, 600), (1, 602), (MIB, 602), (MIB + 1, 604), (1000 * MIB, 2600)],
)
def test_default_timeout_is_fts3s(size, seconds):
    assert default_timeout(size) == seconds


@pytest.mark.django_db
def test_streams_come_from_the_job_then_the_most_specific_link_row():
    def row(**params):  # type: ignore[no-untyped-def]
        job = submit_job(files=[FileRequest(f"{SRC}//d/x", f"{DST}//d/x")], internal_params=params or None)
        return TransferFile.objects.select_related("job").get(job=job)

    assert stream_settings(row()) == (None, None)  # gfal2's default
    LinkLimit.objects.create(source_se="*", dest_se="*", max_active=4, nostreams=2)
    assert stream_settings(row()) == (2, None)
    # A more specific row without nostreams does not hide the default; one with nostreams wins.
    LinkLimit.objects.create(source_se=SRC, dest_se="*", max_active=4)
    assert stream_settings(row()) == (2, None)
    LinkLimit.objects.create(source_se=SRC, dest_se=DST, max_active=4, nostreams=6)
    assert stream_settings(row()) == (6, None)
    assert stream_settings(row(nostreams=8, buffer_size=65536)) == (8, 65536)

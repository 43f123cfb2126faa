"""What a submission still checks of each file now that it skips the unique checks (transfers/services/
submission.py: TransferFile has nothing unique but its id, so they could find nothing)."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from transfers.models import TransferFile, TransferJob
from transfers.services import FileRequest, submit_job

SRC, DST = "root://src.example.org:1094", "root://dst.example.org:1094"


def test_a_transfer_file_has_nothing_unique_but_its_id() -> None:
    # Should this change, submit_job must run the unique checks again (validate_unique=True).
    assert [f.name for f in TransferFile._meta.get_fields() if getattr(f, "unique", False)] == ["id"]
    assert not TransferFile._meta.constraints and not TransferFile._meta.unique_together


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("request_fields", "field"),
    [
        ({"checksum": "MD5:zz"}, "files[1].checksum"),
        ({"filesize": -1}, "files[1].filesize"),
        ({"destination": f"{SRC}//data/f1"}, "files[1].dest_surl"),
    ],
)
def test_a_bad_file_is_refused_naming_it_and_nothing_is_stored(request_fields, field) -> None:  # type: ignore[no-untyped-def]
    good = FileRequest(f"{SRC}//data/f0", f"{DST}//data/f0", filesize=10)
    bad = FileRequest(
        f"{SRC}//data/f1",
        request_fields.get("destination", f"{DST}//data/f1"),
        filesize=request_fields.get("filesize", 10),
        checksum=request_fields.get("checksum", ""),
    )
    jobs, files = TransferJob.objects.count(), TransferFile.objects.count()
    with pytest.raises(ValidationError) as refused:
        submit_job(files=[good, bad])
    assert field in refused.value.message_dict
    assert (TransferJob.objects.count(), TransferFile.objects.count()) == (jobs, files)

"""Mock storage (gfal2's mock plugin, transfers/mock_storage.py): the URLs a copy between mock endpoints is
given, the gate that serves mock:// only where SRCNET_MOCK_STORAGE is on, and real copies through the
service's executor with Debian's gfal2-plugin-mock (no bytes move; gfal2 checks sizes and checksums)."""

from __future__ import annotations

import pytest

from topology.services.storage_urls import StorageRegistry, UnregisteredStorageError
from transfers.mock_storage import CORRUPTED_ADLER32, as_copied

SOURCE = "mock://sdp.low.example.org:443/srcnet/ska/obs-1/part0.ms"
DESTINATION = "mock://storage.uksrc.example.org:443/srcnet/ska/obs-1/part0.ms"


def test_a_copy_between_mock_endpoints_is_the_catalogues_file() -> None:
    source, destination = as_copied(SOURCE, DESTINATION, filesize=150 * 10**6, checksum="ADLER32:0CC737EB")
    assert source == f"{SOURCE}?size=150000000&checksum=0cc737eb"
    assert destination == (
        f"{DESTINATION}?size=150000000&size_pre=0&size_post=150000000&time=0&checksum=0cc737eb"
    )


def test_other_urls_are_left_alone_and_a_mock_urls_own_query_is_dropped() -> None:
    root = "root://storage.uksrc.example.org:1094//srcnet/a"
    assert as_copied(SOURCE, root, filesize=1, checksum="ADLER32:1") == (SOURCE, root)
    source, destination = as_copied(
        SOURCE + "?errno=2", DESTINATION + "?signal=11", filesize=1, checksum="ADLER32:0cc737eb"
    )
    assert "errno" not in source and "signal" not in destination


def test_the_failure_fraction_corrupts_that_share_of_copies_drawn_by_file_and_attempt() -> None:
    def arrived(number: int, attempt: int) -> str:
        destination = DESTINATION.replace("part0.ms", f"part{number}.ms")
        return as_copied(
            SOURCE,
            destination,
            filesize=1,
            checksum="ADLER32:0cc737eb",
            failure_fraction=0.1,
            attempt=attempt,
        )[1]

    def corrupted(numbers, attempt: int) -> set[int]:  # type: ignore[no-untyped-def]
        return {n for n in numbers if f"checksum={CORRUPTED_ADLER32}" in arrived(n, attempt)}

    first = corrupted(range(2000), 1)
    assert 140 < len(first) < 260  # 10 % of 2000, with room for the hash's spread (sd ~13)
    assert corrupted(range(2000), 1) == first  # a run repeats exactly
    assert len(corrupted(first, 2)) < len(first) / 3  # a retry is drawn anew: most succeed


def _mock_endpoints():  # type: ignore[no-untyped-def]
    from topology.models import RegionalCentre, StorageEndpoint, Telescope

    low = Telescope.objects.create(name="T-LOW", region="oceania", country="AU", latitude=0, longitude=0)
    uk = RegionalCentre.objects.create(name="T-UK", region="europe", country="GB", latitude=0, longitude=0)
    made = []
    for name, site, host, role in (
        ("T_LOW_SDP", low, "sdp.low.example.org", "sdp"),
        ("T_UK_MOCK", uk, "storage.uksrc.example.org", "disk"),
    ):
        endpoint = StorageEndpoint(name=name, site=site, hostname=host, role=role, tpc_scheme="mock")
        endpoint.full_clean()
        endpoint.save()
        made.append(endpoint)
    return made


@pytest.mark.django_db
def test_mock_urls_resolve_only_where_mock_storage_is_on(settings) -> None:  # type: ignore[no-untyped-def]
    settings.SRCNET_MOCK_STORAGE = True
    _mock_endpoints()
    registry = StorageRegistry.load()
    assert registry.resolve(DESTINATION).name == "T_UK_MOCK"
    # A mock endpoint serves mock:// alone: no copy reaches its host by a real protocol.
    with pytest.raises(UnregisteredStorageError, match="no registered storage endpoint serves root"):
        registry.resolve("root://storage.uksrc.example.org:1094//srcnet/a")
    # Turned off (a deployment that holds a mock endpoint from before): its URLs are refused, naming why.
    settings.SRCNET_MOCK_STORAGE = False
    with pytest.raises(UnregisteredStorageError, match="SRCNET_MOCK_STORAGE"):
        StorageRegistry.load().resolve(DESTINATION)
    from django.core.exceptions import ValidationError

    from topology.models import StorageEndpoint

    with pytest.raises(ValidationError, match="SRCNET_MOCK_STORAGE"):
        StorageEndpoint.objects.get(name="T_UK_MOCK").full_clean()


@pytest.mark.django_db
def test_the_executor_copies_between_mock_endpoints_with_gfal2s_mock_plugin(settings) -> None:  # type: ignore[no-untyped-def]
    from transfers.executor import copy_file

    settings.SRCNET_MOCK_STORAGE, settings.SRCNET_MOCK_FAILURE_FRACTION = True, 0.0
    _mock_endpoints()
    copied = copy_file(
        source=SOURCE, destination=DESTINATION, checksum="ADLER32:0cc737eb", filesize=150 * 10**6
    )
    assert copied.ok, copied.error
    assert (copied.bytes, copied.source_checksum, copied.dest_checksum) == (
        150 * 10**6,
        "0cc737eb",
        "0cc737eb",
    )
    assert copied.seconds < 5  # the plugin's default copy lasts 5 s: time=0 was taken

    settings.SRCNET_MOCK_FAILURE_FRACTION = 1.0
    failed = copy_file(source=SOURCE, destination=DESTINATION, checksum="ADLER32:0cc737eb", filesize=10)
    assert not failed.ok and failed.retryable and failed.dest_touched
    assert "checksum" in failed.error.lower(), failed.error

    settings.SRCNET_MOCK_STORAGE = False  # the gate is checked again before anything is copied
    refused = copy_file(source=SOURCE, destination=DESTINATION, checksum="ADLER32:0cc737eb", filesize=10)
    assert not refused.ok and not refused.retryable and "SRCNET_MOCK_STORAGE" in refused.error

"""The storage endpoints that the recorded Rucio and fts3 bodies name, registered (the service refuses URLs
on storage the platform does not know)."""

import pytest

from tests.conftest import register_storage

RECORDED_ELEMENTS = (
    "root://127.0.0.1:21094",
    "root://127.0.0.1:21095",
    "root://127.0.0.1:21096",
    "root://a.example.org:1094",
    "root://b.example.org:1094",
    "root://a:1",
    "root://b:1",
    "davs://aus.example.org:443",
    "davs://uk.example.org:443",
)


@pytest.fixture
def recorded_storage(db):  # type: ignore[no-untyped-def]
    return register_storage(*RECORDED_ELEMENTS)

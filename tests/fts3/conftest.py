"""The storage endpoints that the recorded Rucio and fts3 bodies name, registered (the service refuses URLs
on storage the platform does not know)."""

import pytest
from django.test import Client

from identity.tokens import issue
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
def fts(operator) -> Client:  # type: ignore[no-untyped-def]
    """A client of the FTS3 endpoint with an operator's fts3-scoped token (as the fts3 client sends it)."""
    token = issue(operator, name="test", scope="fts3")[1]
    return Client(HTTP_AUTHORIZATION=f"Bearer {token}")


@pytest.fixture
def recorded_storage(db):  # type: ignore[no-untyped-def]
    return register_storage(*RECORDED_ELEMENTS)

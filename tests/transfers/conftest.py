"""The storage elements these tests' URLs name, registered (the service refuses unknown storage)."""

import pytest

from tests.conftest import register_storage


@pytest.fixture(autouse=True)
def known_storage(request):  # type: ignore[no-untyped-def]
    if "db" not in request.fixturenames and not request.node.get_closest_marker("django_db"):
        return None
    request.getfixturevalue("db")
    return register_storage(
        "root://src.example.org:1094",
        "root://dst.example.org:1094",
        "root://a.example.org:1094",
        "root://b.example.org:1094",
        "root://c.example.org:1094",
    )

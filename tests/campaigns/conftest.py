"""Campaign test fixtures: the CLI runner and the bound XRootD topology, shared from their own suites."""

from __future__ import annotations

import pytest

from tests.cli.conftest import operator_token, srcnet  # noqa: F401  (fixtures, by name; topology is the root conftest's)
from tests.integration.conftest import bound_topology  # noqa: F401  (fixture, by name)


@pytest.fixture
def campaigns_cli(srcnet):  # type: ignore[no-untyped-def]  # noqa: F811
    """``srcnet`` against the live server (the campaigns noun is registered in cli.main)."""
    return srcnet

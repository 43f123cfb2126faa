"""Campaign test fixtures: the CLI runner and the bound XRootD topology, shared from their own suites."""

from __future__ import annotations

import pytest

from tests.cli.conftest import operator_token, srcnet, topology  # noqa: F401  (fixtures, by name)
from tests.integration.conftest import bound_topology  # noqa: F401  (fixture, by name)


@pytest.fixture
def campaigns_cli(monkeypatch, srcnet):  # type: ignore[no-untyped-def]  # noqa: F811
    """``srcnet`` with the campaigns noun: it is not in cli.main's NOUNS yet (that also needs docs/cli.md)."""
    import cli.main
    from cli.commands import campaigns

    if campaigns not in cli.main.NOUNS:
        monkeypatch.setattr(cli.main, "NOUNS", (*cli.main.NOUNS, campaigns))
    return srcnet

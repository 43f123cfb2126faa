"""The rules tests run on the reference topology imported once for the package, each test in its own
rolled-back transaction (the portal tests' fixtures: an import recomputes every path, seconds each time)."""

from ..portal.conftest import _package_topology, reference_topology  # noqa: F401 (the fixtures)

"""Rules tests' fixtures: the reference topology bound to the local XRootD sites (the end-to-end test)."""

from ..integration.conftest import bound_topology  # noqa: F401 (the fixture)

"""A benchmark's own platform: the PostgreSQL and Redis of a local state of its own (``localnet``'s core
services), Django set up on them, the database emptied and the reference topology imported; stopped after.

    with platform_on_own_state("bench-name"):
        ...  # Django's models are usable here
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@contextmanager
def platform_on_own_state(name: str) -> Iterator[None]:
    sys.path.insert(0, str(ROOT))
    from localnet.stack import down, ensure_core, service_env
    from localnet.state import StateDir

    state = StateDir.named(name)
    ensure_core(state)
    try:
        os.environ.update(service_env(state, name))
        import django

        django.setup()
        from django.core.management import call_command

        from topology.services.importer import import_topology

        call_command("migrate", verbosity=0)
        call_command("flush", interactive=False, verbosity=0)  # a run starts from an empty platform
        import_topology(text=(ROOT / "topology" / "data" / "reference.yaml").read_text())
        yield
    finally:
        down(state)

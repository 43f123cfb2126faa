"""scripts/check_layers.py (run by `make lint`): each rule of the layers catches the import it names, imports
inside functions and relative ones are read like any other, and the project's own code breaks none."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from localnet.state import PROJECT_ROOT

sys.path.insert(0, str(PROJECT_ROOT / "scripts"))
import check_layers
from check_layers import Import, imports_of, problem


@pytest.mark.parametrize(
    ("source", "target", "says"),
    [
        ("replicas.services", "schedulers.loop", "replicas (layer 4) imports the higher schedulers"),
        ("transfers.models", "replicas.models", "transfers (layer 3) imports the higher replicas"),
        ("rules.services", "campaigns.models", "rules imports its peer campaigns"),
        ("srcnet.settings", "localnet.state", "the development tool"),
        ("campaigns.services", "localnet.demo", "the development tool"),
        ("replicas.services", "tests.factories", "the development tool"),
        ("schedulers.loop", "replicas.views", "the interface module replicas.views"),
        ("monitoring.selectors", "srcnet.celery", "the interface module srcnet.celery"),
        ("transfers.services.common", "cli.output", "the interface module cli.output"),
        ("schedulers.planning.planner", "django.db", "pure"),
        ("schedulers.simulation.engine", "topology.models", "pure"),
        ("topology.physics", "replicas.models", "pure"),
        ("transfertools.fts3_rest", "django.conf", "only the FTS3 REST protocol"),
        ("transfertools.fts3_rest", "transfers.scitags", "only the FTS3 REST protocol"),
        ("transfertools.interface", "schedulers.measurements", "only the FTS3 REST protocol"),
        ("localnet.demo", "localnet.synthetic", "no module localnet.synthetic"),  # moved, importer forgotten
        ("tests.integration.conftest", "projects.visibility", "no module projects.visibility"),
    ],
)
def test_each_rule_catches_the_import_it_names(source: str, target: str, says: str) -> None:
    for in_function in (False, True):  # an import inside a function hides nothing
        why = problem(Import(source, target, 1, in_function))
        assert why is not None and says in why, why


@pytest.mark.parametrize(
    ("source", "target"),
    [
        ("schedulers.loop", "replicas.models"),  # down the layers
        ("replicas.views", "schedulers.arrivals"),  # an interface imports any domain module
        ("transfers.fts3.auth", "identity.tokens"),
        ("srcnet.urls", "monitoring.views"),
        ("localnet.demo", "replicas.services"),  # the development tool imports the platform
        ("schedulers.planning.planner", "topology.physics"),  # pure imports pure
        ("replicas.rucio", "rucio.client"),  # a library
        ("transfertools.fts3_rest", "fts3.rest.client"),  # the FTS3 client the tool is built on
        ("transfertools.fts3_rest", "transfertools.protocol"),
        ("transfers.embedded_transfertool", "transfertools.interface"),  # any layer uses the clients
        ("schedulers.transfertools", "transfertools.fts3_rest"),
    ],
)
def test_what_the_layers_allow_passes(source: str, target: str) -> None:
    assert problem(Import(source, target, 1, True)) is None


def test_imports_are_read_wherever_they_are(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(check_layers, "ROOT", tmp_path)
    module = tmp_path / "replicas" / "things.py"
    module.parent.mkdir()
    module.write_text(
        "from typing import TYPE_CHECKING\n"
        "from .models import Replica\n"
        "if TYPE_CHECKING:\n"
        "    from schedulers.loop import PushCycle\n"
        "def later():\n"
        "    import schedulers.loop\n"
        "    return lambda: __import__('x')\n"
    )
    found = {(i.target, i.line, i.in_function) for i in imports_of(module)}
    assert found == {("typing", 1, False), ("replicas.models", 2, False), ("schedulers.loop", 6, True)}


def test_the_projects_code_breaks_no_layer() -> None:
    run = subprocess.run(
        [sys.executable, str(PROJECT_ROOT / "scripts" / "check_layers.py")], capture_output=True, text=True
    )
    assert run.returncode == 0, run.stdout + run.stderr

"""scripts/check_state_writes.py (run by `make lint`): every way the project's code wrote replica or
product state before the lifecycle was its only writer is found, and reads of the state are not."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from localnet.state import PROJECT_ROOT

sys.path.insert(0, str(PROJECT_ROOT / "scripts"))
from check_state_writes import lifecycle_functions, writes

IMPORTS = "from replicas.models import DataProduct, Replica\nfrom replicas.choices import ReplicaState\n"


@pytest.mark.parametrize(
    "code",
    [
        "replica.state = ReplicaState.FAILED",
        "pin.state = ReplicaState.COPYING",
        "product.state = ProductState.PLACED",
        "replica.state, replica.reason = state, reason",
        "waiting.state = new",
        "Replica.objects.create(product=p, endpoint=e, state=ReplicaState.PLANNED)",
        "Replica.objects.create(product=p, endpoint=e, state=s)",
        "Replica.objects.filter(pk=1, state=ReplicaState.PLANNED).update(state=ReplicaState.FAILED)",
        "Replica.objects.get_or_create(product=p, endpoint=e, defaults={'state': s, 'reason': r})",
        "product.replicas.create(endpoint=e, state=s)",
        "DataProduct.objects.filter(pk=1).update(state=s)",
        "Replica(product=p, endpoint=e, state=s).save()",
        "Replica.objects.bulk_update(rows, ['state', 'reason'])",
        "anything.update(state=ProductState.REGISTERED)",
    ],
)
def test_each_way_of_writing_the_state_is_found(code: str) -> None:
    found = list(writes(ast.parse(IMPORTS + code)))
    assert found and found[0][0] == 3, (code, found)


@pytest.mark.parametrize(
    "code",
    [
        "Replica.objects.filter(state=ReplicaState.PLANNED).count()",
        "product.replicas.exclude(state=ReplicaState.FAILED)",
        "if replica.state == ReplicaState.AVAILABLE: pass",
        "job.state = JobState.FINISHED",
        "TransferJob.objects.filter(pk=1).update(state=States.ACTIVE)",
        "lifecycle.new_replica(product=p, endpoint=e, state=ReplicaState.PLANNED)",
        "place_replica(product=p, endpoint=e, state=ReplicaState.COPYING)",
    ],
)
def test_reads_and_other_models_states_are_not_writes(code: str) -> None:
    allowed = lifecycle_functions(PROJECT_ROOT)
    assert list(writes(ast.parse(IMPORTS + code), allowed)) == []


def test_the_projects_code_writes_the_state_only_in_the_lifecycle(tmp_path: Path) -> None:
    run = subprocess.run(
        [sys.executable, str(PROJECT_ROOT / "scripts" / "check_state_writes.py")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stdout
    # And it fails, naming the line, on a module that writes it.
    (tmp_path / "replicas").mkdir()
    (tmp_path / "replicas" / "lifecycle.py").write_text("def move():\n    pass\n")
    (tmp_path / "rogue.py").write_text(IMPORTS + "def f(replica):\n    replica.state = ReplicaState.FAILED\n")
    run = subprocess.run(
        [sys.executable, str(PROJECT_ROOT / "scripts" / "check_state_writes.py"), str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 1 and "rogue.py:4: assigns replica.state" in run.stdout, run.stdout

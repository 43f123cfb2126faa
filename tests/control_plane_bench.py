"""Running bench/control_plane/end_to_end.py as a user runs it, for the tests of its smoke runs and the rate
gate: the result of a run that must succeed."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from localnet.state import PROJECT_ROOT

PYTHON = PROJECT_ROOT / ".venv" / "bin" / "python"
SCRIPT = PROJECT_ROOT / "bench" / "control_plane" / "end_to_end.py"


def run_end_to_end(tmp_path: Path, *arguments: str, timeout: float) -> dict[str, Any]:
    """The benchmark's result after a run with ``arguments`` (its output and log shown if it fails)."""
    out = tmp_path / "result.json"
    run = subprocess.run(
        [str(PYTHON), str(SCRIPT), *arguments, "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert run.returncode == 0, run.stderr[-3000:] + run.stdout[-3000:]
    result: dict[str, Any] = json.loads(out.read_text())
    return result

"""bench/fts3_submission.py with tiny sizes (its smoke run in make test: it cannot rot unseen). It runs as
the script it is, on a state of its own (its own PostgreSQL, Redis, issuer and FTS3 service), stopped
after."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from localnet.state import PROJECT_ROOT, StateDir

BENCH = PROJECT_ROOT / "bench" / "fts3_submission.py"


@pytest.mark.integration
def test_the_submission_benchmark_measures_with_and_without_tokens(tmp_path: Path) -> None:
    state = f"bench-smoke-{os.getpid()}"
    out = tmp_path / "result.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("SRCNET_") or k == "SRCNET_STATE_ROOT"}
    try:
        run = subprocess.run(
            [
                *(sys.executable, str(BENCH), "--files", "20", "--repeats", "1", "--polls", "2"),
                *("--state", state, "--out", str(out)),
            ],
            cwd=PROJECT_ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
    finally:
        shutil.rmtree(StateDir.named(state).path, ignore_errors=True)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    result = json.loads(out.read_text())
    assert set(result["submit_files_per_s"]) == {"plain", "tokens-managed", "tokens-unmanaged"}
    assert all(way["median"] > 0 for way in result["submit_files_per_s"].values())
    assert result["submit_ratio_to_plain"]["plain"] == 1.0
    assert result["poll_100_jobs_ms"]["median"] > 0

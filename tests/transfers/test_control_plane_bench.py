"""bench/control_plane/end_to_end.py with tiny sizes, run as a user runs it (its smoke run in make test: it
cannot rot unseen): on a state of its own, its own Celery worker and beat, every endpoint mock storage."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from localnet.state import PROJECT_ROOT

PYTHON = PROJECT_ROOT / ".venv" / "bin" / "python"
SCRIPT = PROJECT_ROOT / "bench" / "control_plane" / "end_to_end.py"


def run_bench(tmp_path: Path, *arguments: str, timeout: float) -> dict[str, Any]:
    """The benchmark's result after a run with ``arguments``, which must succeed."""
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


def test_the_end_to_end_benchmark_accounts_for_every_file(tmp_path: Path) -> None:
    result = run_bench(
        tmp_path,
        *("--products", "3", "--files", "4", "--failure-fraction", "0.2", "--timeout", "240"),
        *("--state", "bench-control-plane-smoke"),
        timeout=420,
    )
    # Every copy made once, none stuck; a fifth of the attempts failed and were retried until they took.
    assert result["all_accounted"] is True
    # gfal2's plugin loads and its events of each copy stay out of the worker's log (SRCNET_GFAL2_LOG_LEVEL),
    # which still says each task it ran.
    worker_log = Path(result["worker_log"]).read_text(errors="replace")
    assert "transfers.execute_" in worker_log
    assert "Event triggered" not in worker_log and "gfal_module_load" not in worker_log
    assert result["accounted"]["states"] == {"available": 3}, result["accounted"]
    assert result["accounted"]["files_available"] == 12 and result["accounted"]["available_twice"] == 0
    assert result["files_finished"] == 12
    assert result["retried_files"] >= 1, result
    assert result["files_per_second"] > 0 and result["rate_to_baseline"] > 0
    stages = result["stages"]
    assert set(stages) == {"wait_for_plan", "queued", "copying", "settling"}
    assert all(stage["p50_ms"] >= 0 for stage in stages.values())
    assert result["registration_to_available"]["p99_ms"] >= result["registration_to_available"]["p50_ms"] > 0
    # Every attempt ran (the retries too), alone or in a copy session; the worker's time by task, read
    # from its log, holds the messages that ran them.
    assert result["attempts"] >= 12 + result["retried_files"]
    assert 1 <= result["copy_messages"] <= result["attempts"]
    workers = result["worker_time"]
    ran = sum(
        workers.get(name, {}).get("tasks", 0)
        for name in ("transfers.execute_attempt", "transfers.execute_session")
    )
    assert ran >= result["copy_messages"], workers
    assert all(workers[name]["ms_per_file"] > 0 for name in workers if name.startswith("transfers.execute_"))
    # Where the machine's CPU went, per file, by component: the platform's own processes all worked.
    spent = result["cpu_ms_per_file"]
    assert set(spent) == {"worker", "postgresql", "redis", "bench", "machine", "other"}, spent
    assert spent["worker"] > 0 and spent["postgresql"] > 0 and spent["machine"] >= spent["worker"]


def test_the_benchmark_through_rucio_accounts_for_every_file_and_names_both_sides(tmp_path: Path) -> None:
    """``--through rucio``: Rucio's conveyor submits to the FTS3 endpoint (its real daemons, its catalogue
    emptied first); each side's stages, rates and CPU are reported."""
    result = run_bench(
        tmp_path,
        *("--through", "rucio", "--products", "2", "--files", "5", "--failure-fraction", "0.2"),
        *("--timeout", "240", "--state", "bench-control-plane-rucio-smoke"),
        timeout=600,
    )
    assert result["through"] == "rucio" and result["all_accounted"] is True
    assert result["accounted"]["states"] == {"available": 2}, result["accounted"]
    assert result["accounted"]["files_available"] == 10 and result["accounted"]["available_twice"] == 0
    assert result["files_finished"] == 10
    # A fifth of the copies fail their checksum at first: the platform retries them (Rucio sees them done).
    assert result["retried_files"] >= 1 and result["attempts"] >= 10 + result["retried_files"], result
    stages = result["stages"]
    assert set(stages) == {"wait_for_rule", "rucio_submit", "platform_queued", "copying", "rucio_finish"}
    # Every copy went through Rucio's submission and the platform's queue.
    assert all(stages[name]["p50_ms"] > 0 for name in ("wait_for_rule", "rucio_submit", "rucio_finish"))
    sides = result["sides"]
    # Each file handed to the FTS3 endpoint at least once (again if Rucio resubmitted one), each ended there.
    assert sides["rucio_submitted"]["files"] == sides["platform_finished"]["files"] >= 10, sides
    assert sides["jobs"] >= 1
    spent = result["cpu_ms_per_file"]
    for component in ("fts3_endpoint", "rucio_server", "conveyor_submitter", "conveyor_poller", "worker"):
        assert spent[component] > 0, spent

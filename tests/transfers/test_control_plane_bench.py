"""bench/control_plane/end_to_end.py with tiny sizes, run as a user runs it (its smoke run in make test: it
cannot rot unseen): on a state of its own, its own Celery worker and beat, every endpoint mock storage."""

from __future__ import annotations

from pathlib import Path

from ..control_plane_bench import run_end_to_end


def test_the_end_to_end_benchmark_accounts_for_every_file(tmp_path: Path) -> None:
    result = run_end_to_end(
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
    components = {"worker", "postgresql", "redis", "bench", "other"}
    assert set(spent) == components | {"machine", "machine_user", "machine_kernel"}, spent
    assert spent["worker"] > 0 and spent["postgresql"] > 0 and spent["machine"] >= spent["worker"]
    # The machine's time split into user space and kernel adds up to it (each figure rounded to 0.01 ms).
    assert abs(spent["machine_user"] + spent["machine_kernel"] - spent["machine"]) <= 0.02, spent

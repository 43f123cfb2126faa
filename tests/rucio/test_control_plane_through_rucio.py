"""bench/control_plane/end_to_end.py --through rucio with tiny sizes, run as a user runs it (its smoke run in
make test): on a state of its own, with its own Rucio server and daemons, FTS3 endpoint, token issuer, Celery
worker and beat; every endpoint mock storage. Here rather than beside the benchmark's other smoke run
(tests/transfers/test_control_plane_bench.py): what it runs is Rucio's path."""

from __future__ import annotations

from pathlib import Path

from ..control_plane_bench import run_end_to_end


def test_the_benchmark_through_rucio_accounts_for_every_file_and_names_both_sides(tmp_path: Path) -> None:
    """``--through rucio``: Rucio's conveyor submits to the FTS3 endpoint (its real daemons, its catalogue
    emptied first); each side's stages, rates and CPU are reported."""
    result = run_end_to_end(
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

"""The control plane's rate gate (issue 33, item 5): a bounded end-to-end run (1 000 files on mock storage,
bench/control_plane/end_to_end.py) must keep at least half of the documented rate, measured as a ratio to
the baseline taken in the same run (the transfer service's acceptance of one 1 000-file job), so that the
machine's own speed cancels out. The documented figure and how it was measured: bench/control_plane/gate.json
and docs/benchmarks.md. It runs after the parallel phase, alone on the machine (scripts/test.sh, AFTER)."""

from __future__ import annotations

import json
from pathlib import Path

from localnet.state import PROJECT_ROOT

from ..control_plane_bench import run_end_to_end

GATE = PROJECT_ROOT / "bench" / "control_plane" / "gate.json"


def test_the_end_to_end_rate_keeps_half_of_the_documented_figure(tmp_path: Path) -> None:
    gate = json.loads(GATE.read_text())
    result = run_end_to_end(tmp_path, *gate["arguments"], "--state", "bench-control-plane-gate", timeout=600)
    assert result["all_accounted"] is True and result["accounted"]["available_twice"] == 0, result[
        "accounted"
    ]
    floor = gate["documented_rate_to_baseline"] / 2
    assert result["rate_to_baseline"] >= floor, (
        f"{result['files_per_second']} files/s, {result['rate_to_baseline']} of the baseline "
        f"({result['baseline_acceptance_files_per_second']} files/s accepted): below half of the documented "
        f"{gate['documented_rate_to_baseline']} ({gate['measured']})"
    )

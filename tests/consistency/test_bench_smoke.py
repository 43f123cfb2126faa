"""bench/consistency_scale.py with tiny sizes (its smoke run in make test: it cannot rot unseen), in this
test's database with the reference topology, its synthetic listing as in the scale run."""

from __future__ import annotations

import importlib.util

import pytest

from localnet.state import PROJECT_ROOT

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_scale_benchmark_finds_every_fault_it_planted(reference_topology) -> None:  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location(
        "consistency_scale", PROJECT_ROOT / "bench" / "consistency_scale.py"
    )
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    result = bench.measure(2000)
    assert result["files"] == 2000
    assert result["found"] == {**result["expected"], "unchecked": 0}
    assert result["expected"] == {"lost": 2, "corrupt": 2, "dark": 1}
    assert result["check_files_per_s"] > 0 and result["check_to_baseline"] > 0
    assert result["postgres"]["tup_inserted"] >= 2000  # the listing went through the database

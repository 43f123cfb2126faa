"""The adapter's pure helpers: names Rucio accepts, the distance formula, state mapping."""

from __future__ import annotations

import pytest

from replicas.rucio_sync import (
    NamingError,
    PathMetrics,
    check_did_name,
    check_rse_name,
    check_scope,
    distance_from_path,
    distance_table,
    file_did_name,
    replica_state_of_locks,
    rse_expression,
)


def test_distance_formula() -> None:
    assert distance_from_path(0.5, 0) == 2
    assert distance_from_path(10.0, 0) == 2
    assert distance_from_path(10.1, 0) == 3
    assert distance_from_path(259.0, 3_700_000) == 1 + 26 + 4
    with pytest.raises(ValueError):
        distance_from_path(-1, 0)


def test_distance_table_is_directional_and_keeps_the_best_path() -> None:
    sites = {"SDP": 1, "UK": 2, "AU": 3, "UK2": 2}
    paths = [
        (1, 2, PathMetrics(200.0, 1_850_000)),
        (1, 2, PathMetrics(150.0, 3_700_000)),
        (2, 3, PathMetrics(300.0, 0)),
    ]
    table = distance_table(sites, paths)
    assert table[("SDP", "UK")] == min(1 + 20 + 2, 1 + 15 + 4)
    assert table[("SDP", "UK2")] == table[("SDP", "UK")]
    assert ("UK", "SDP") not in table  # no path back
    assert ("UK", "UK2") not in table  # same site
    assert table[("UK", "AU")] == 31 and ("AU", "UK") not in table


def test_names() -> None:
    check_scope("ska-low.2026")
    check_did_name("obs-1/vis.ms")
    check_rse_name("SKA1-LOW_SDP")
    assert file_did_name("obs-1", "vis.ms") == "obs-1/vis.ms"
    for bad in ("", "a" * 26, "sp ace"):
        with pytest.raises(NamingError):
            check_scope(bad)
    for bad in ("", ".hidden", "bad name!", "x" * 251):
        with pytest.raises(NamingError):
            check_did_name(bad)
    with pytest.raises(NamingError):
        check_rse_name("lower_case")
    with pytest.raises(NamingError):
        file_did_name("obs", "a/b")
    assert rse_expression(["UKSRC_DISK", "AUSRC_DISK", "UKSRC_DISK"]) == "AUSRC_DISK|UKSRC_DISK"
    with pytest.raises(NamingError):
        rse_expression([])


def test_lock_states_to_replica_state() -> None:
    assert replica_state_of_locks(["OK", "OK"]) == "available"
    assert replica_state_of_locks(["OK", "REPLICATING"]) == "copying"
    assert replica_state_of_locks(["OK", "STUCK"]) == "failed"
    assert replica_state_of_locks([]) == "planned"


def test_adapter_and_policy_package_name_the_same_ska_activities() -> None:
    import ast

    from localnet.rucio import POLICY_PATH
    from replicas.rucio_sync import SKA_ACTIVITIES

    tree = ast.parse((POLICY_PATH / "ska_rucio_policy" / "schema.py").read_text())
    assigned = {
        node.targets[0].id: node.value
        for node in tree.body
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name)
    }
    assert tuple(ast.literal_eval(assigned["SKA_ACTIVITIES"])) == SKA_ACTIVITIES

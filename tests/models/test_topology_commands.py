"""manage.py import_topology / export_topology, run as an operator runs them: a separate process against
the test database, with its exit status, stdout and stderr."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import yaml
from django.db import connection

from localnet.state import PROJECT_ROOT
from topology.management.commands.import_topology import REFERENCE
from topology.models import Dtn, Link, NetworkPath, Site, StorageEndpoint, Telescope, Vrf
from topology.services.importer import import_topology

from .test_importer import SMALL

# The commands run in their own process and commit: the test database must be really written (and emptied
# after each test), not held in this process's transaction.
pytestmark = pytest.mark.django_db(transaction=True)


def manage(*argv: str) -> tuple[int, str, str]:
    """``python manage.py argv`` against the test database: (exit status, stdout, stderr)."""
    env = {**os.environ, "SRCNET_DB_NAME": connection.settings_dict["NAME"]}
    proc = subprocess.run(
        [sys.executable, "manage.py", *argv],
        cwd=PROJECT_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return proc.returncode, proc.stdout, proc.stderr


def snapshot() -> dict[str, list[tuple[object, ...]]]:
    return {
        "sites": sorted(Site.objects.values_list("name", "kind", "latitude", "longitude")),
        "links": sorted(Link.objects.values_list("name", "capacity_bps", "rtt_ms", "is_up")),
        "paths": sorted(NetworkPath.objects.values_list("name", "rtt_ms", "capacity_bps", "hop_count")),
        "storage": sorted(StorageEndpoint.objects.values_list("name", "role", "capacity_bytes")),
        "dtns": sorted(Dtn.objects.values_list("name", "tcp_window_bytes")),
        "vrfs": sorted(Vrf.objects.values_list("name", "scope", "parent__name")),
    }


def test_import_good_file_prints_the_summary(tmp_path):
    path = tmp_path / "small.yaml"
    path.write_text(SMALL)
    status, out, err = manage("import_topology", str(path))
    assert status == 0, err
    summary = json.loads(out)
    assert summary["created"]["link"] == 2 and summary["paths_computed"] == 1
    assert set(Site.objects.values_list("name", flat=True)) == {"SKA1-Low", "AUSRC", "Perth"}
    assert NetworkPath.objects.get().name == "SKA1-Low--AUSRC"


def test_import_without_a_file_loads_the_reference_topology():
    status, out, err = manage("import_topology")
    assert status == 0, err
    assert json.loads(out)["warnings"] == []
    assert Telescope.objects.count() == 2
    assert NetworkPath.objects.filter(name="Paris--Canberra--pacific").exists()


def test_bad_file_exits_non_zero_naming_line_and_field_and_writes_nothing(tmp_path):
    good = tmp_path / "small.yaml"
    good.write_text(SMALL)
    assert manage("import_topology", str(good))[0] == 0
    before = snapshot()
    # Earlier sections are fine and would change the database (a moved telescope, a new site); the
    # second link (line 12) is not: nothing of the file may be written.
    bad_text = SMALL.replace("latitude: -26.7", "latitude: -26.0").replace("rtt_ms: 0.5,", "rtt_ms: -3,")
    bad_text = bad_text.replace(
        "points_of_presence:\n",
        "points_of_presence:\n  - {name: Geraldton, region: oceania, "
        "country: AU, latitude: -28.8, longitude: 114.6}\n",
    )
    bad = tmp_path / "bad.yaml"
    bad.write_text(bad_text)
    status, out, err = manage("import_topology", str(bad))
    assert status != 0
    assert out == ""
    assert str(bad) in err and "line 13" in err and "links[1].rtt_ms" in err, err
    assert snapshot() == before
    assert not Site.objects.filter(name="Geraldton").exists()


def test_missing_file_exits_non_zero_with_the_reason(tmp_path):
    status, _, err = manage("import_topology", str(tmp_path / "nope.yaml"))
    assert status != 0
    assert "nope.yaml" in err and "No such file" in err
    assert Site.objects.count() == 0


def test_export_round_trip_rebuilds_the_same_topology_from_the_file_alone(tmp_path):
    import_topology(text=REFERENCE.read_text())
    before = snapshot()
    status, exported, err = manage("export_topology")
    assert status == 0, err
    assert yaml.safe_load(exported)["version"] == 1
    # Empty the database, then rebuild it from nothing but the exported file.
    NetworkPath.objects.all().delete()
    Link.objects.all().delete()
    Dtn.objects.all().delete()
    StorageEndpoint.objects.all().delete()
    Site.objects.all().delete()
    while Vrf.objects.exists():
        Vrf.objects.filter(children__isnull=True).delete()
    path = tmp_path / "exported.yaml"
    path.write_text(exported)
    status, _, err = manage("import_topology", str(path))
    assert status == 0, err
    assert snapshot() == before
    assert manage("export_topology")[1] == exported

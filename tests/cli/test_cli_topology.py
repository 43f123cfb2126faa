"""srcnet topology/sites/links/paths against the live server."""

from __future__ import annotations

import json

import pytest

from cli.exit_codes import ExitCode
from topology.models import Link, NetworkPath, Site


def test_import_good_file_prints_the_summary(srcnet, transactional_db, reference_file):
    result = srcnet("topology", "import", str(reference_file))
    assert result.code == ExitCode.OK, result.err
    lines = result.out.splitlines()
    assert lines[0].split() == ["KIND", "CREATED", "UPDATED"]
    created = {
        line.split()[0]: int(line.split()[1]) for line in lines[2:] if line and not line.startswith("paths")
    }
    assert created["link"] == Link.objects.count() == 40
    assert created["telescope"] == 2
    assert Site.objects.filter(name="SKA1-Low").exists()
    assert f"paths computed: {NetworkPath.objects.filter(is_computed=True).count()}" in result.out


def test_import_json_output_is_the_servers_summary(srcnet, transactional_db, reference_file):
    result = srcnet("topology", "import", str(reference_file), "-o", "json")
    assert result.code == ExitCode.OK, result.err
    summary = json.loads(result.out)
    assert set(summary) == {"created", "updated", "paths_computed", "warnings"}
    assert summary["paths_computed"] > 0


def test_import_bad_file_names_line_and_field_and_writes_nothing(
    srcnet, transactional_db, tmp_path, reference_file
):
    lines = reference_file.read_text().splitlines()
    # Break a link late in the file, so that an import that was not all-or-nothing would have written sites.
    index = next(i for i, line in enumerate(lines) if "name: perth-canberra" in line)
    lines[index] = lines[index].replace("capacity: 100G", "capacity: lots")
    bad = tmp_path / "bad.yaml"
    bad.write_text("\n".join(lines) + "\n")
    result = srcnet("topology", "import", str(bad))
    assert result.code == ExitCode.VALIDATION == 3
    assert result.out == ""
    assert result.err.startswith(f"{bad}: line {index + 1}, ")
    assert result.err.strip().endswith(
        "links[2].capacity: not a rate: 'lots' (use e.g. '100G' or '40 Gbit/s')"
    )
    assert Site.objects.count() == 0
    assert Link.objects.count() == 0


def test_export_to_a_file_reads_back(srcnet, topology, tmp_path):
    out = tmp_path / "exported.yaml"
    result = srcnet("topology", "export", "-f", str(out))
    assert result.code == ExitCode.OK, result.err
    assert result.out == ""
    assert f"srcnet: wrote {out}" in result.err
    assert "SKA1-Low" in out.read_text()
    again = srcnet("topology", "import", str(out), "-o", "json")
    assert again.code == ExitCode.OK, again.err
    assert json.loads(again.out)["created"] == {}


def test_export_to_stdout(srcnet, topology):
    result = srcnet("topology", "export")
    assert result.code == ExitCode.OK
    assert result.out.lstrip().startswith(("#", "version"))
    assert "UKSRC" in result.out


def test_sites_list_filters_by_kind_and_region(srcnet, topology):
    result = srcnet("sites", "list", "--kind", "src", "--region", "europe")
    assert result.code == ExitCode.OK, result.err
    names = [line.split()[0] for line in result.out.splitlines()[2:]]
    assert "UKSRC" in names
    assert "SKA1-Low" not in names
    assert "London" not in names  # a PoP
    data = json.loads(srcnet("sites", "list", "--kind", "telescope", "-o", "json").out)
    assert sorted(s["name"] for s in data) == ["SKA1-Low", "SKA1-Mid"]


def test_sites_list_limit_reports_truncation(srcnet, topology):
    result = srcnet("sites", "list", "--limit", "3")
    assert result.code == ExitCode.OK
    assert len(result.out.splitlines()) == 2 + 3
    assert f"srcnet: showing 3 of {Site.objects.count()} sites" in result.err


def test_lists_follow_next_links(live_server, operator_token, topology):
    from cli.client import Client
    from cli.config import load_config

    client = Client(load_config(url=live_server.url, token=operator_token, env={}), page_size=4)
    rows, count = client.paginate("/api/topology/sites/")
    assert count == Site.objects.count() > 4
    assert len(rows) == count
    assert len({r["name"] for r in rows}) == count
    rows, _ = client.paginate("/api/topology/sites/", limit=6)
    assert len(rows) == 6


def test_links_list_by_site(srcnet, topology):
    result = srcnet("links", "list", "--site", "Perth", "-o", "json")
    assert result.code == ExitCode.OK
    links = json.loads(result.out)
    assert {link["name"] for link in links} == set(
        Link.objects.filter(a_end__name="Perth").values_list("name", flat=True)
        | Link.objects.filter(b_end__name="Perth").values_list("name", flat=True)
    )
    assert "perth-singapore" in {link["name"] for link in links}
    table = srcnet("links", "list", "--site", "Perth").out
    assert "100.0 Gbit/s" in table


def _uksrc_path(paths):  # type: ignore[no-untyped-def]
    return next(p for p in paths if p["destination"] == "UKSRC")


def test_paths_list_from_ska1_low_json(srcnet, topology):
    result = srcnet("paths", "list", "--from", "SKA1-Low", "-o", "json")
    assert result.code == ExitCode.OK, result.err
    paths = json.loads(result.out)
    assert paths and all(p["source"] == "SKA1-Low" for p in paths)
    uk = _uksrc_path(paths)
    assert uk["rtt_ms"] == pytest.approx(223.1)
    assert uk["per_flow_ceiling_bps"] == pytest.approx(2**30 * 8 / 0.2231, rel=1e-6)  # ~38.5 Gbit/s
    assert uk["hops"][0] == "low-access"
    assert uk["streams_to_fill"] >= 1


def test_paths_list_from_ska1_low_table(srcnet, topology):
    result = srcnet("paths", "list", "--from", "SKA1-Low", "--to", "UKSRC")
    assert result.code == ExitCode.OK, result.err
    header, _, *rows = result.out.splitlines()
    assert header.split() == [
        "NAME",
        "FROM",
        "TO",
        "RTT_MS",
        "BOTTLENECK",
        "PER_FLOW_CEILING",
        "STREAMS_TO_FILL",
        "HOPS",
    ]
    assert (
        len(rows)
        == NetworkPath.objects.filter(source__name="SKA1-Low", destination__name="UKSRC").count()
        >= 1
    )
    row = rows[0]
    assert "SKA1-Low" in row
    assert "UKSRC" in row
    assert "223.1" in row
    assert "38.5 Gbit/s" in row
    assert "low-access > " in row


def test_paths_show_by_name_and_not_found(srcnet, topology):
    path = NetworkPath.objects.filter(source__name="SKA1-Low", destination__name="UKSRC").first()
    assert path is not None
    result = srcnet("paths", "show", path.name)
    assert result.code == ExitCode.OK, result.err
    assert result.out.splitlines()[1].split() == ["name", path.name]
    assert "38.5 Gbit/s" in result.out
    shown = json.loads(srcnet("paths", "show", path.name, "-o", "json").out)
    assert shown["id"] == path.pk
    missing = srcnet("paths", "show", "no-such-path")
    assert missing.code == ExitCode.NOT_FOUND == 4
    assert "srcnet: no path named 'no-such-path'" in missing.err

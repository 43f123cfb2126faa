"""srcnet products and policies against the live server."""

from __future__ import annotations

import json
import re

from cli.exit_codes import ExitCode
from replicas.models import DataProduct, ReplicaPolicy
from topology.models import Telescope

FILES = ["--file", "vis.ms.tar:1073741824:0a1b2c3d", "--file", "psf.fits:52428800:1f2e3d4c"]


def _create(srcnet, name="obs-001", *extra):  # type: ignore[no-untyped-def]
    return srcnet(
        "products", "create", "--scope", "ska1-low", "--name", name, "--telescope", "SKA1-Low", *FILES, *extra
    )


def test_products_create_then_list_and_show(srcnet, topology):
    created = _create(srcnet, "obs-001", "--priority", "4")
    assert created.code == ExitCode.OK, created.err
    product = DataProduct.objects.get(scope="ska1-low", name="obs-001")
    assert product.priority == 4
    assert sorted(product.files.values_list("name", "size_bytes", "adler32")) == [
        ("psf.fits", 52428800, "1f2e3d4c"),
        ("vis.ms.tar", 1073741824, "0a1b2c3d"),
    ]
    assert f"srcnet: created product {product.pk} (ska1-low:obs-001)" in created.err
    assert re.search(r"^did +ska1-low:obs-001$", created.out, re.M), created.out
    assert "1.0 GiB" in created.out  # vis.ms.tar in the FILES table

    listed = srcnet("products", "list", "--telescope", "SKA1-Low")
    assert listed.code == ExitCode.OK
    header, _, row = listed.out.splitlines()
    assert header.split()[:4] == ["ID", "DID", "TELESCOPE", "STATE"]
    assert row.split()[:4] == [str(product.pk), "ska1-low:obs-001", "SKA1-Low", "registered"]

    shown = srcnet("products", "show", str(product.pk), "-o", "json")
    assert shown.code == ExitCode.OK
    data = json.loads(shown.out)
    assert data["did"] == "ska1-low:obs-001"
    assert data["size_bytes"] == 1073741824 + 52428800
    assert {f["name"] for f in data["files"]} == {"vis.ms.tar", "psf.fits"}
    # The product's first replica is its source, at the telescope's SDP storage.
    assert [(r["endpoint"], r["site"]) for r in data["replicas"]] == [("SKA1-LOW_SDP", "SKA1-Low")]

    table = srcnet("products", "show", str(product.pk))
    assert "FILES" in table.out
    assert "REPLICAS" in table.out


def test_products_list_filters(srcnet, topology):
    assert _create(srcnet, "obs-a").code == ExitCode.OK
    assert _create(srcnet, "calib-b").code == ExitCode.OK
    found = json.loads(srcnet("products", "list", "--search", "calib", "-o", "json").out)
    assert [p["name"] for p in found] == ["calib-b"]
    assert json.loads(srcnet("products", "list", "--state", "placed", "-o", "json").out) == []
    assert len(json.loads(srcnet("products", "list", "--state", "registered", "-o", "json").out)) == 2
    assert json.loads(srcnet("products", "list", "--telescope", "SKA1-Mid", "-o", "json").out) == []


def test_products_create_invalid_exits_3_naming_the_field(srcnet, topology):
    result = srcnet(
        "products",
        "create",
        "--scope",
        "ska1-low",
        "--name",
        "x",
        "--telescope",
        "SKA9",
        "--file",
        "a.fits:10:0a1b2c3d",
    )
    assert result.code == ExitCode.VALIDATION
    assert result.err.startswith("srcnet: invalid request: telescope: ")
    assert "SKA9" in result.err
    assert not DataProduct.objects.exists()
    duplicate = [_create(srcnet, "twice"), _create(srcnet, "twice")]
    assert [d.code for d in duplicate] == [ExitCode.OK, ExitCode.VALIDATION]
    # The API names the field (docs/api.md); the CLI says it as the API does.
    assert "srcnet: invalid request: name: A product with this scope and name exists." in duplicate[1].err


def test_products_show_and_push_unknown_id_exit_4(srcnet, topology):
    result = srcnet("products", "show", "999999")
    assert result.code == ExitCode.NOT_FOUND
    assert "srcnet: not found: GET " in result.err
    assert "/api/replicas/products/999999/" in result.err
    assert srcnet("products", "push", "999999").code == ExitCode.NOT_FOUND


def test_policies_list(srcnet, topology):
    ReplicaPolicy.objects.create(name="low-weighted", telescope=Telescope.objects.get(name="SKA1-Low"))
    ReplicaPolicy.objects.create(
        name="mid-pairs",
        telescope=Telescope.objects.get(name="SKA1-Mid"),
        kind="two_replicas",
        partners={"UKSRC": "AUSRC"},
    )
    result = srcnet("policies", "list")
    assert result.code == ExitCode.OK, result.err
    lines = result.out.splitlines()
    assert lines[0].split()[-1] == "PARAMETERS"
    assert lines[2].split()[:2] == ["low-weighted", "SKA1-Low"]
    assert "UKSRC_DISK=2" in lines[2]  # the default weights are the SRCs' share weights
    assert lines[3].split()[:3] == ["mid-pairs", "SKA1-Mid", "two_replicas"]
    assert "partners UKSRC -> AUSRC; others: the next SRC by name" in lines[3]
    data = json.loads(srcnet("policies", "list", "-o", "json").out)
    assert [p["name"] for p in data] == ["low-weighted", "mid-pairs"]
    assert data[0]["effective_weights"]["UKSRC_DISK"] == 2.0
    assert data[1]["partners"] == {"UKSRC": "AUSRC"}
    assert data[1]["parameters"].startswith("partners UKSRC -> AUSRC")


def test_a_scientist_sees_another_projects_proprietary_product_nowhere(srcnet, scientist_token, topology):  # type: ignore[no-untyped-def]
    """The CLI reads the API: a product of a project the scientist is not in lists as nothing and shows as
    not found (exit 4), until its proprietary period ends; a bad project is refused naming the field."""
    from projects.models import Project

    Project.objects.create(code="AA01", proprietary_days=30)
    assert _create(srcnet, "obs-open").code == ExitCode.OK
    made = _create(srcnet, "obs-closed", "--project", "AA01")
    assert made.code == ExitCode.OK, made.err
    closed = DataProduct.objects.get(name="obs-closed")
    assert "AA01" in made.out

    listed = json.loads(srcnet("products", "list", "-o", "json", token=scientist_token).out)
    assert [p["name"] for p in listed] == ["obs-open"]
    hidden = srcnet("products", "show", str(closed.pk), token=scientist_token)
    assert hidden.code == ExitCode.NOT_FOUND, (hidden.code, hidden.err)
    DataProduct.objects.filter(pk=closed.pk).update(proprietary_until="2000-01-01T00:00:00Z")
    assert srcnet("products", "show", str(closed.pk), token=scientist_token).code == ExitCode.OK

    refused = _create(srcnet, "obs-bad", "--project", "ZZ99")
    assert refused.code == ExitCode.VALIDATION and "project" in refused.err
    assert not DataProduct.objects.filter(name="obs-bad").exists()


def test_products_show_prints_each_pending_replicas_predicted_arrival(srcnet, topology):  # type: ignore[no-untyped-def]
    """The ARRIVALS table: each replica still to come with its own prediction and note (the SDP's copy,
    already there, is not in it)."""
    import datetime as dt

    from replicas.models import Replica
    from schedulers.models import PathMeasurement
    from topology.models import StorageEndpoint

    assert _create(srcnet, "obs-arrive").code == ExitCode.OK
    product = DataProduct.objects.get(name="obs-arrive")
    predicted = dt.datetime(2030, 1, 2, 3, 4, 5, tzinfo=dt.UTC)
    DataProduct.objects.filter(pk=product.pk).update(
        predicted_arrival=predicted, arrival_note="moving on SKA1-Low -> AUSRC since this cycle"
    )
    PathMeasurement.objects.create(
        source="AUSRC", destination="UKSRC", streams=4, bytes=10**9, seconds=10, throughput_bps=800e6
    )
    au, uk = (StorageEndpoint.objects.get(name=n) for n in ("AUSRC_DISK", "UKSRC_DISK"))
    first = Replica.objects.create(product=product, endpoint=au, state="copying")
    Replica.objects.create(product=product, endpoint=uk, state="planned", upstream=first)

    shown = srcnet("products", "show", str(product.pk))
    assert shown.code == ExitCode.OK, shown.err
    arrivals = shown.out.split("\nARRIVALS\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert arrivals[0].split() == ["ENDPOINT", "STATE", "PREDICTED_ARRIVAL", "ARRIVAL_NOTE"]
    au_row, uk_row = arrivals[2:]
    assert au_row.split(None, 3) == [
        "AUSRC_DISK",
        "copying",
        "2030-01-02T03:04:05Z",
        "moving on SKA1-Low -> AUSRC since this cycle",
    ]
    # Its 1126 MB (the two files) at 100 MB/s after the first copy's arrival: 11.26 s.
    assert uk_row.split(None, 3) == [
        "UKSRC_DISK",
        "planned",
        "2030-01-02T03:04:16.261706Z",
        "second copy waits for AUSRC_DISK (predicted 03:04:05) on AUSRC -> UKSRC: 0 copy(ies) ahead on "
        "the lane, 1126 MB to go up to this copy; the lane delivers 800 Mbit/s lately",
    ]

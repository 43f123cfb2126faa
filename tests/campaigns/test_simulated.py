"""Simulated campaigns: the campaign's own workload (curve, ramp, sources, destinations, file sizes)
through the flow-level simulator, each product pinned to its destination, scored against the curve the
workload followed; inputs the simulator cannot honour are refused naming the field."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from campaigns.models import Campaign
from campaigns.report import report_dir
from campaigns.scoring import outcomes
from campaigns.services import advance
from campaigns.simulated import bin_seconds, placement, simulate, until_seconds
from campaigns.workload import Workload
from schedulers.simulations import read_summary

pytestmark = pytest.mark.django_db
GB = 10**9
HOUR = 3600
BASE: dict[str, Any] = {
    "name": "sim-dc",
    "mode": "simulated",
    "topology": "reference",
    "sources": ["SKA1-Low", "SKA1-MID_SDP"],
    "destinations": ["UKSRC_DISK", "AUSRC_DISK"],
    "target_rate_bps": 30e9,
    "ramp_seconds": 1200,
    "duration_seconds": HOUR,
    "min_file_bytes": 4 * GB,
    "max_file_bytes": 12 * GB,
    "files_per_product": 2,
}
SITES = {"UKSRC_DISK": "UKSRC", "AUSRC_DISK": "AUSRC", "ZASRC_DISK": "ZASRC"}
TELESCOPES = {"SKA1-Low": "SKA1-Low", "SKA1-MID_SDP": "SKA1-Mid", "SKA1-Mid": "SKA1-Mid"}


def _create(client: Any, **change: Any) -> Campaign:
    response = client.post("/api/campaigns/", {**BASE, **change}, format="json")
    assert response.status_code == 201, response.json()
    return Campaign.objects.get(pk=response.json()["id"])


def test_a_simulated_campaign_runs_the_campaigns_own_workload(operator_client, reference_topology, tmp_path):
    c = _create(operator_client)
    pinned, run, place = simulate(c, tmp_path / "check")
    assert run.result is not None and place.site_of == {"UKSRC_DISK": "UKSRC", "AUSRC_DISK": "AUSRC"}
    # Round-robin pairs SKA1-Low with UKSRC and SKA1-Mid with AUSRC: each telescope's lanes go there only.
    assert place.topology.telescope("SKA1-Low").share_sites == ("UKSRC",)
    assert place.topology.telescope("SKA1-Mid").share_sites == ("AUSRC",)
    assert {lane for lane in run.result.lane_bytes if lane[0].startswith("SKA1")} == {
        ("SKA1-Low", "UKSRC"),
        ("SKA1-Mid", "AUSRC"),
    }
    workload = Workload.of(c)
    # The simulator's products are the workload's: the same curve, order, sizes, files, sources.
    assert [wp for wp, _ in pinned] == [p for _, p in workload.arrivals()] and len(pinned) > 100
    largest = max(wp.size_bytes for wp, _ in pinned)
    for t in [k * 60.0 for k in range(1, 61)]:
        # ``records`` is what the simulator ran: bytes offered by t follow the curve within one product.
        offered = sum(r.product.size_bytes for r in run.result.records.values() if r.product.arrival_s <= t)
        assert workload.planned_bytes_at(t) <= offered <= workload.planned_bytes_at(t) + largest, t
    for wp, p in pinned:
        record = run.result.records[p.id]
        assert p.destination == SITES[wp.destination] == SITES[BASE["destinations"][wp.index % 2]]
        assert p.telescope == TELESCOPES[BASE["sources"][wp.index % 2]]
        assert record.replicas[0] == p.destination  # the first copy went where the campaign said
        assert p.files == len(wp.files) == 2 and p.size_bytes == wp.size_bytes
        assert p.file_bytes == tuple(f.size_bytes for f in wp.files)  # each file its own size
        assert all(4 * GB <= f.size_bytes <= 12 * GB for f in wp.files)
    delivered = [o for o in outcomes(pinned, run.result) if math.isfinite(o.delivered_s)]
    assert len(delivered) > len(pinned) / 2
    # The worker's run (the task's body: the on-commit hook never fires in a rolled-back test).
    assert advance(c.pk, 0) == "finished"
    assert advance(c.pk, 0) == "not scheduled"  # a redelivered message does nothing
    c.refresh_from_db()
    s = c.summary
    assert c.state == Campaign.State.FINISHED, c.error
    # The target is the one the workload followed; offered and achieved are the simulator's.
    assert s["planned_bytes"] == int(workload.planned_bytes_at(HOUR)) == int(c.planned_bytes_at(HOUR))
    assert s["offered_bytes"] == sum(wp.size_bytes for wp, _ in pinned) == c.generated_bytes
    assert s["products"] == len(pinned) == c.products_created == s["simulator"][0]["products"]
    assert s["complete"] + s["incomplete"] == s["products"] and s["failed"] == 0
    per = s["per_destination"]
    assert set(per) == {"UKSRC_DISK", "AUSRC_DISK"}
    for name, entry in per.items():
        mine = [wp for wp, _ in pinned if wp.destination == name]
        assert entry["offered"] == sum(wp.size_bytes for wp in mine)
        assert entry["planned"] == int(s["planned_bytes"] / 2) and 0 < entry["achieved"] <= entry["offered"]
        assert entry["complete"] + entry["incomplete"] == len(mine)
        assert 0 < entry["latency_seconds"]["p50"] <= entry["latency_seconds"]["p90"] <= lat_max(s)
    assert s["achieved_bytes"] == sum(e["achieved"] for e in per.values())
    assert s["achieved_fraction"] == pytest.approx(s["achieved_bytes"] / s["planned_bytes"])
    assert s["achieved_rate_bps"] == pytest.approx(s["achieved_bytes"] * 8 / s["simulated_seconds"])
    assert HOUR <= s["simulated_seconds"] <= until_seconds(c)
    lat = s["latency_seconds"]
    assert 0 < lat["p50"] <= lat["p90"] <= lat["max"]
    # The access links carried what the simulator sent over them during the hour.
    links = s["access_links"]
    assert {t: e["link"] for t, e in links.items()} == {"SKA1-Low": "low-access", "SKA1-Mid": "mid-access"}
    for tel, entry in links.items():
        bins = s["simulator"][0]["utilisation_series"][tel][: round(HOUR / bin_seconds(HOUR))]
        assert entry["utilisation"] == pytest.approx(sum(bins) / len(bins))
        assert 0 < entry["utilisation"] < 30e9 / 100e9
    # The samples: one per bin until the end, the last one the score.
    samples = list(c.samples.all())
    assert samples[-1].achieved_bytes == s["achieved_bytes"] and samples[-1].products == s["products"]
    assert samples[-1].planned_bytes == s["planned_bytes"] and samples[-1].target_rate_bps == 0
    for sample in samples:
        assert sample.planned_bytes == int(workload.planned_bytes_at(sample.wall_seconds))
        assert 0 <= sample.planned_bytes - sum(e["planned"] for e in sample.per_destination.values()) <= 2
    ramp_sample = next(x for x in samples if x.wall_seconds == 600)
    assert ramp_sample.target_rate_bps == pytest.approx(15e9)  # halfway up the ramp
    # Its report: the simulator's files (summary.json is its own summary) and the campaign's.
    assert s["simulator"] == json.loads(json.dumps(read_summary(report_dir(c.pk))))
    files = {p.name for p in report_dir(c.pk).iterdir()}
    assert {
        "report.md",
        "summary.json",
        "campaign.json",
        "samples.csv",
        "rate.png",
        "destinations.png",
    } <= files
    header = (report_dir(c.pk) / "samples.csv").read_text().splitlines()[0]
    assert header.endswith("UKSRC_DISK_achieved_bytes,AUSRC_DISK_achieved_bytes")


def lat_max(summary: dict[str, Any]) -> float:
    return summary["latency_seconds"]["max"]


def _fingerprint(c: Campaign, tmp_path: Any) -> tuple[list[tuple[Any, ...]], dict[str, Any]]:
    from campaigns.simulated import score_run

    pinned, run, place = simulate(c, tmp_path / "r")
    summary, _ = score_run(c, pinned, run, place)
    products = [(p.telescope, p.destination, p.size_bytes, p.files, round(p.arrival_s, 6)) for _, p in pinned]
    return products, summary


# Each input, changed alone, and what must follow in the simulator's products (telescope, site, size,
# files, arrival) and in the score, given the unchanged campaign's products and score.
CHANGES: list[tuple[dict[str, Any], Any]] = [
    (
        {"target_rate_bps": 15e9},
        lambda p, s, bp, bs: s["planned_bytes"] == pytest.approx(bs["planned_bytes"] / 2),
    ),
    (
        {"ramp_seconds": 0},
        lambda p, s, bp, bs: s["planned_bytes"] > bs["planned_bytes"] and p[1][4] < bp[1][4],
    ),
    (
        {"duration_seconds": 2 * HOUR},
        lambda p, s, bp, bs: max(x[4] for x in p) > HOUR > max(x[4] for x in bp),
    ),
    ({"destinations": ["ZASRC_DISK"]}, lambda p, s, bp, bs: {x[1] for x in p} == {"ZASRC"}),
    ({"sources": ["SKA1-Mid"]}, lambda p, s, bp, bs: {x[0] for x in p} == {"SKA1-Mid"} != {x[0] for x in bp}),
    (
        {"min_file_bytes": 11 * GB},
        lambda p, s, bp, bs: min(x[2] for x in p) >= 22 * GB > min(x[2] for x in bp),
    ),
    (
        {"max_file_bytes": 5 * GB},
        lambda p, s, bp, bs: max(x[2] for x in p) <= 10 * GB < max(x[2] for x in bp),
    ),
    (
        {"files_per_product": 1},
        lambda p, s, bp, bs: {x[3] for x in p} == {1} and max(x[2] for x in p) <= 12 * GB,
    ),
    ({"scenario": "one_replica_slot"}, lambda p, s, bp, bs: s["scenario"] == "one_replica_slot" and p == bp),
]


@pytest.mark.parametrize(("change", "follows"), CHANGES, ids=[next(iter(c)) for c, _ in CHANGES])
def test_each_input_changes_what_the_simulator_gets(change, follows, reference_topology, tmp_path):
    base = Campaign(pk=1, **BASE)
    changed = Campaign(pk=1, **{**BASE, **change})
    changed.full_clean()
    base_products, base_summary = _fingerprint(base, tmp_path / "base")
    products, summary = _fingerprint(changed, tmp_path / "changed")
    assert summary != base_summary  # the score moved too
    assert follows(products, summary, base_products, base_summary), change
    if change == {"destinations": ["ZASRC_DISK"]}:
        assert set(summary["per_destination"]) == {"ZASRC_DISK"}
    if change == {"sources": ["SKA1-Mid"]}:
        assert set(summary["access_links"]) == {"SKA1-Mid"}


@pytest.mark.parametrize(
    ("change", "field", "words"),
    [
        ({"destinations": ["LONDONDC_BUFFER"]}, "destinations", "distribution centre"),
        ({"destinations": ["SKA1-LOW_SDP"]}, "destinations", "not an SRC storage endpoint"),
        ({"destinations": ["UKSRC_DISK", "Nowhere_DISK"]}, "destinations", "Nowhere_DISK"),
        ({"sources": ["Atlantis"]}, "sources", "Atlantis"),
        ({"sources": ["UKSRC_DISK"]}, "sources", "UKSRC_DISK"),
        ({"sources": ["SKA1-Low"], "target_rate_bps": 101e9}, "target_rate_bps", "low-access"),
        # Two names of one telescope: one access link carries all of it.
        ({"sources": ["SKA1-Low", "SKA1-LOW_SDP"], "target_rate_bps": 150e9}, "target_rate_bps", "100%"),
        ({"scenario": "warp"}, "scenario", "'warp': unknown"),
        # A campaign asks for one copy at each destination (as the push loop plans pinned products).
        ({"scenario": "two_replicas"}, "scenario", "more than one copy"),
        ({"scenario": "full_copy"}, "scenario", "more than one copy"),
        (
            {
                "target_rate_bps": 150e9,
                "duration_seconds": 7 * 86400,
                "min_file_bytes": GB,
                "max_file_bytes": GB,
            },
            "min_file_bytes",
            "products",
        ),
        ({"topology": "atlas"}, "topology", "db or reference"),
    ],
)
def test_inputs_the_simulator_cannot_honour_are_400_naming_the_field(
    operator_client, reference_topology, change, field, words
):
    response = operator_client.post("/api/campaigns/", {**BASE, **change}, format="json")
    assert response.status_code == 400 and field in response.json(), response.json()
    assert words in " ".join(response.json()[field])
    assert not Campaign.objects.exists()


def test_a_rate_split_over_two_telescopes_fits_their_access_links(operator_client, reference_topology):
    c = _create(operator_client, target_rate_bps=150e9, sources=["SKA1-Low", "SKA1-Mid"])
    assert placement(c).telescope_of == {"SKA1-Low": "SKA1-Low", "SKA1-Mid": "SKA1-Mid"}


def test_the_stored_topology_is_checked_at_creation_and_again_at_run_time(
    operator_client, reference_topology, settings, tmp_path
):
    from topology.models import Link, NetworkPath

    settings.SRCNET_REPORTS_DIR = tmp_path
    stored = {**BASE, "topology": "db", "sources": ["SKA1-Low"], "destinations": ["UKSRC_DISK"]}
    c = _create(operator_client, **stored)
    # The access link shrinks after the campaign was accepted: its run fails naming the rate.
    Link.objects.filter(name="low-access").update(capacity_bps=20 * 10**9)
    assert advance(c.pk, 0) == "failed"
    c.refresh_from_db()
    assert c.state == Campaign.State.FAILED and c.error.startswith("target_rate_bps: ")
    assert "low-access" in c.error and not c.samples.exists() and c.summary == {}
    response = operator_client.post("/api/campaigns/", stored, format="json")
    assert response.status_code == 400 and "target_rate_bps" in response.json()
    Link.objects.filter(name="low-access").update(capacity_bps=100 * 10**9)
    # No path from the telescope to the destination's SRC: refused naming the destinations.
    NetworkPath.objects.filter(source__name="SKA1-Low", destination__name="UKSRC").delete()
    response = operator_client.post("/api/campaigns/", stored, format="json")
    assert response.status_code == 400 and "No path from SKA1-Low" in response.json()["destinations"][0]
    assert Campaign.objects.count() == 1


# One telescope's access link full, shared by a 7.5 ms lane (AUSRC) and a 223 ms one (UKSRC), on the stored
# topology at the long-haul local network's scale (capacities / 1000, as bench_reality runs it): at full
# scale a cold copy of a few seconds on 223 ms spends most of its time in slow start, whatever the share.
SHARED_LINK = {
    **BASE,
    "topology": "db",
    "sources": ["SKA1-Low"],
    "target_rate_bps": 100e6,
    "ramp_seconds": 0,
    "duration_seconds": 300,
    "min_file_bytes": 16 * 2**20,
    "max_file_bytes": 48 * 2**20,
}


@pytest.mark.parametrize(("control", "sooner"), [("bbr", "UKSRC_DISK"), ("cubic", "AUSRC_DISK")])
def test_a_simulated_campaign_models_the_sites_congestion_control(
    control, sooner, reference_topology, settings, tmp_path
):
    """BBR gives the long path the larger share of a full link, CUBIC the short one (schedulers/
    simulations.deployed_stack, SRCNET_SITES_CONGESTION_CONTROL): the lane it favours delivers sooner."""
    settings.SRCNET_SITES_CONGESTION_CONTROL = control
    settings.SRCNET_NETWORK_SCALE = 1000.0
    _, summary = _fingerprint(Campaign(pk=1, **SHARED_LINK), tmp_path)
    p50 = {name: entry["latency_seconds"]["p50"] for name, entry in summary["per_destination"].items()}
    later = next(name for name in p50 if name != sooner)
    assert p50[sooner] < p50[later], p50


@pytest.mark.parametrize(
    ("name", "value", "words"),
    [
        ("SRCNET_SITES_CONGESTION_CONTROL", "vegas", "'vegas' (known: cubic, bbr)"),
        ("SRCNET_NETWORK_MTU", "jumbo", "'jumbo' is not a number of bytes in 576..65535"),
        ("SRCNET_NETWORK_MTU", "100", "'100' is not a number of bytes"),
    ],
)
def test_a_bad_network_setting_stops_the_simulation_naming_it(
    name, value, words, reference_topology, settings, tmp_path
):
    from django.core.exceptions import ImproperlyConfigured

    setattr(settings, name, value)
    with pytest.raises(ImproperlyConfigured, match=f"^{name}: .*") as raised:
        _fingerprint(Campaign(pk=1, **SHARED_LINK), tmp_path)
    assert words in str(raised.value)


def test_a_campaign_run_with_a_bad_network_setting_ends_failed_naming_it(
    operator_client, reference_topology, settings, tmp_path
):
    settings.SRCNET_REPORTS_DIR = tmp_path
    settings.SRCNET_SITES_CONGESTION_CONTROL = "vegas"
    c = _create(operator_client)
    assert advance(c.pk, 0) == "failed"
    c.refresh_from_db()
    assert c.state == Campaign.State.FAILED and not c.samples.exists()
    assert c.error.startswith("SRCNET_SITES_CONGESTION_CONTROL: unknown congestion control 'vegas'"), c.error

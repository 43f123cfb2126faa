"""Storage consistency checks (issue 36) against real XRootD sites: a file deleted, truncated, its bytes
flipped under an unchanged time, a stray file written: each found by one check, the replica marked at once
and healed by a copy the push loop plans, its adler32 verified; nothing else touched. What cannot be read
(an unlistable directory, a name that is not UTF-8, a site that does not answer) is reported, never taken
for lost."""

from __future__ import annotations

import datetime as dt
import os
import time
from pathlib import Path

import pytest
from django.test import Client

from consistency.checker import run_check
from consistency.choices import CheckMode, CheckState, FindingAction, FindingKind
from consistency.models import ConsistencyCheck
from consistency.storage import StorageReader, StorageReadError
from localnet.xrootd import stop_site
from operations.models import AuditEvent
from replicas.choices import ProductState, ReplicaState
from replicas.models import Replica
from schedulers.loop import push_cycle
from tests.cli.conftest import operator_token, srcnet  # noqa: F401 - fixtures
from tests.conftest import token_site, wait_until
from tests.integration.conftest import adler32_of, put_file
from topology.models import StorageEndpoint

from .conftest import SITES, Placed, placed_product

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]
TWO_DAYS = 2 * 86400


def check_of(
    endpoint: str = "UKSRC_DISK", mode: str = CheckMode.LIST, fraction: float = 1.0
) -> ConsistencyCheck:
    """A check as the worker runs it (``run_check``), with every whole file's adler32 read again."""
    check = ConsistencyCheck.objects.create(
        endpoint=StorageEndpoint.objects.get(name=endpoint), mode=mode, checksum_fraction=fraction
    )
    return run_check(check)


def findings(check: ConsistencyCheck, kind: str) -> set[str]:
    return set(check.findings.filter(kind=kind).values_list("path", flat=True))


def path_of(placed: Placed, name: str) -> str:
    return f"{placed.product.scope}/{placed.product.name}/{name}"


def flip_bytes_keeping_the_time(path: Path) -> None:
    """Bit rot: bytes changed in place, the file's size and times as they were."""
    before = path.stat()
    with open(path, "r+b") as fh:
        fh.seek(1000)
        data = fh.read(16)
        fh.seek(1000)
        fh.write(bytes(b ^ 0xFF for b in data))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))


def stray_file(sites, relative: str, *, age_s: float) -> Path:  # type: ignore[no-untyped-def]
    put_file(sites["UKSRC_DISK"], relative, 4096)
    path = sites["UKSRC_DISK"].local_path(f"srcnet/{relative}")
    then = time.time() - age_s
    os.utime(path, (then, then))
    return path


def test_each_fault_is_found_by_one_check_and_healed_with_its_adler32_verified(
    checked, celery_worker
) -> None:  # type: ignore[no-untyped-def]
    lost, truncated, flipped, healthy = (placed_product(checked) for _ in range(4))
    checked_at = lambda placed, name="a.ms": placed.at(checked, "UKSRC_DISK", name)  # noqa: E731
    checked_at(lost).unlink()
    os.truncate(checked_at(truncated), 1000)
    flip_bytes_keeping_the_time(checked_at(flipped))
    stray_file(checked, "ska/left-behind/orphan.ms", age_s=TWO_DAYS)
    stray_file(checked, "ska/in-flight/part.ms", age_s=10)  # a copy arriving now: never dark

    check = check_of()

    assert check.state == CheckState.COMPLETE, check.errors
    assert findings(check, FindingKind.LOST) == {path_of(lost, "a.ms")}
    assert findings(check, FindingKind.CORRUPT) == {path_of(truncated, "a.ms"), path_of(flipped, "a.ms")}
    assert findings(check, FindingKind.DARK) == {"ska/left-behind/orphan.ms"}
    by_size = check.findings.get(kind=FindingKind.CORRUPT, path=path_of(truncated, "a.ms"))
    assert (by_size.expected_size, by_size.found_size) == (1024 * 1024, 1000)
    by_sum = check.findings.get(kind=FindingKind.CORRUPT, path=path_of(flipped, "a.ms"))
    assert by_sum.expected_adler32 == flipped.files["a.ms"] != by_sum.found_adler32 != ""
    assert (check.files_checked, check.unchecked, check.lost, check.corrupt, check.dark) == (8, 0, 1, 2, 1)
    assert check.files_listed == 8 - 1 + 2  # one deleted, two strays
    assert check.checksums_read == 8 - 1 - 1  # every whole file: not the lost one nor the truncated one
    # Marked at once, and planned again from the SDP's copy (the only other one); the healthy one untouched.
    for placed in (lost, truncated, flipped):
        replica = placed.product.replicas.get(endpoint__name="UKSRC_DISK")
        assert replica.state == ReplicaState.PLANNED and replica.repairs == 1
        assert replica.upstream == placed.product.replicas.get(endpoint__name="SKA1-LOW_SDP")
        assert f"consistency check {check.pk}" in replica.reason
        placed.product.refresh_from_db()
        assert placed.product.state == ProductState.PLACING
    assert set(check.findings.exclude(kind=FindingKind.DARK).values_list("action", flat=True)) == {
        FindingAction.HEALING
    }
    untouched = healthy.product.replicas.get(endpoint__name="UKSRC_DISK")
    assert untouched.state == ReplicaState.AVAILABLE and untouched.repairs == 0
    assert check.findings.get(kind=FindingKind.DARK).action == ""  # an operator's decision

    # The push loop carries the healing copies like any waiting copy; each arrives verified.
    cycle = push_cycle()
    assert cycle.error == "" and len(cycle.submitted) == 3, cycle.submitted
    healed = [p.product.replicas.get(endpoint__name="UKSRC_DISK") for p in (lost, truncated, flipped)]

    def all_available() -> bool:
        for replica in healed:
            replica.refresh_from_db()
        return all(r.state == ReplicaState.AVAILABLE for r in healed)

    wait_until(all_available, timeout=120, what="the healed replicas")
    for placed in (lost, truncated, flipped, healthy):
        for name, checksum in placed.files.items():
            assert adler32_of(checked_at(placed, name)) == checksum
        placed.product.refresh_from_db()
        assert placed.product.state == ProductState.PLACED
    # And the next check finds nothing wrong with them (the stray files are still there to decide on).
    again = check_of(mode=CheckMode.STAT)
    assert (again.state, again.lost, again.corrupt, again.files_checked) == (CheckState.COMPLETE, 0, 0, 8)


def test_a_stat_check_finds_lost_and_corrupt_files_but_no_dark_ones(checked) -> None:  # type: ignore[no-untyped-def]
    lost, truncated = placed_product(checked), placed_product(checked)
    lost.at(checked, "UKSRC_DISK", "b.ms").unlink()
    os.truncate(truncated.at(checked, "UKSRC_DISK", "b.ms"), 10)
    stray_file(checked, "ska/left-behind/orphan.ms", age_s=TWO_DAYS)
    check = check_of(mode=CheckMode.STAT, fraction=0.0)
    assert check.state == CheckState.COMPLETE
    assert findings(check, FindingKind.LOST) == {path_of(lost, "b.ms")}
    assert findings(check, FindingKind.CORRUPT) == {path_of(truncated, "b.ms")}
    assert (check.dark, check.checksums_read, check.files_checked) == (0, 0, 4)


def test_what_cannot_be_read_is_reported_and_never_taken_for_lost(checked) -> None:  # type: ignore[no-untyped-def]
    hidden, odd_neighbour = placed_product(checked), placed_product(checked)
    # A directory the server cannot list (its files, one of them deleted, cannot be judged)...
    hidden.at(checked, "UKSRC_DISK", "a.ms").unlink()
    directory = hidden.at(checked, "UKSRC_DISK", "b.ms").parent
    directory.chmod(0)
    # ...and a name that is not UTF-8 beside a product's files (over davs:// it breaks the directory's whole
    # PROPFIND answer): reported, and the product's files judged by a stat each.
    odd = os.path.join(os.fsencode(odd_neighbour.at(checked, "UKSRC_DISK", "a.ms").parent), b"bad-\xff.ms")
    with open(odd, "wb") as fh:
        fh.write(b"x")
    try:
        check = check_of()
    finally:
        directory.chmod(0o755)
        os.unlink(odd)
    assert check.state == CheckState.INCOMPLETE
    assert (check.lost, check.corrupt, check.unchecked, check.files_checked) == (0, 0, 2, 2), check.errors
    assert any(hidden.product.name in e for e in check.errors), check.errors
    assert any("UTF-8" in e for e in check.errors), check.errors  # (over davs:// the listing itself breaks)
    assert hidden.product.replicas.get(endpoint__name="UKSRC_DISK").state == ReplicaState.AVAILABLE


def test_a_site_that_does_not_answer_fails_the_check_and_marks_nothing(
    checked, test_state, token_issuer
) -> None:  # type: ignore[no-untyped-def]
    placed = placed_product(checked)
    stop_site(test_state, SITES["UKSRC_DISK"])
    try:
        check = check_of()
    finally:
        token_site(test_state, token_issuer, SITES["UKSRC_DISK"])
    assert check.state == CheckState.FAILED and check.errors, check.errors
    assert not check.findings.exists()
    assert placed.product.replicas.get(endpoint__name="UKSRC_DISK").state == ReplicaState.AVAILABLE


def test_operators_check_on_demand_and_decide_on_dark_files(  # type: ignore[no-untyped-def]
    checked,
    celery_worker,
    operator_client,
    scientist_client,
    srcnet,  # noqa: F811
) -> None:
    placed = placed_product(checked)
    placed.at(checked, "UKSRC_DISK", "a.ms").unlink()
    kept = stray_file(checked, "ska/left-behind/kept.ms", age_s=TWO_DAYS)
    removed = stray_file(checked, "ska/left-behind/removed.ms", age_s=TWO_DAYS)
    url = "/api/consistency/checks/"
    # Bad input names its field; a scientist may not start one.
    answer = operator_client.post(url, {"endpoint": "NOWHERE_DISK"}, format="json")
    assert answer.status_code == 400 and "endpoint" in answer.json(), answer.json()
    answer = operator_client.post(url, {"endpoint": "UKSRC_DISK", "checksum_fraction": 2}, format="json")
    assert answer.status_code == 400 and "checksum_fraction" in answer.json()
    assert scientist_client.post(url, {"endpoint": "UKSRC_DISK"}, format="json").status_code == 403
    # A filter with a NUL character (the API fuzzer's): 400 naming it, not a database error.
    for listing, name in ((url, "endpoint"), ("/api/consistency/findings/", "kind")):
        answer = operator_client.get(listing, {name: "UKSRC\x00_DISK"})
        assert answer.status_code == 400 and name in answer.json(), (listing, answer.status_code)
    assert scientist_client.get(url).status_code == 403
    # The CLI starts one and follows it to its end on the worker: something found is exit 10.
    result = srcnet(
        "storage", "check", "UKSRC_DISK", "--checksum-fraction", "0", "--wait", "--timeout", "120"
    )
    assert result.code == 10, result.err
    check = ConsistencyCheck.objects.get()
    assert (check.state, check.requested_by, check.lost, check.dark) == (CheckState.COMPLETE, "op", 1, 2)
    assert AuditEvent.objects.filter(action="check_storage", target="UKSRC_DISK").exists()
    assert srcnet("storage", "check", "NOWHERE_DISK").code == 3
    # Dark files wait for an operator: one removed from the storage, one kept; each audited, once.
    dark = {
        f["path"]: f["id"]
        for f in operator_client.get("/api/consistency/findings/?kind=dark").json()["results"]
    }
    assert set(dark) == {"ska/left-behind/kept.ms", "ska/left-behind/removed.ms"}
    assert srcnet("storage", "remove-dark", str(dark["ska/left-behind/removed.ms"])).code == 0
    assert not removed.exists() and kept.exists()
    assert (
        operator_client.post(f"/api/consistency/findings/{dark['ska/left-behind/kept.ms']}/keep/").status_code
        == 200
    )
    assert kept.exists()
    again = operator_client.post(f"/api/consistency/findings/{dark['ska/left-behind/removed.ms']}/remove/")
    assert again.status_code == 400 and "acted on already" in str(again.json())
    lost_finding = check.findings.get(kind=FindingKind.LOST).pk
    not_dark = operator_client.post(f"/api/consistency/findings/{lost_finding}/remove/")
    assert not_dark.status_code == 400 and "not a dark file" in str(not_dark.json())
    assert AuditEvent.objects.filter(action="remove_dark_file").count() == 1
    assert AuditEvent.objects.filter(action="keep_dark_file").count() == 1
    assert operator_client.get("/api/consistency/findings/?kind=dark&open=1").json()["count"] == 0


def test_the_metrics_show_each_endpoints_last_check(checked) -> None:  # type: ignore[no-untyped-def]
    placed = placed_product(checked)
    placed.at(checked, "UKSRC_DISK", "a.ms").unlink()
    check_of()
    client = Client()  # from loopback, which the metrics allow
    text = client.get("/metrics").content.decode()
    assert 'srcnet_consistency_findings{endpoint="UKSRC_DISK",kind="lost"} 1.0' in text
    assert 'srcnet_consistency_files_checked{endpoint="UKSRC_DISK"} 2.0' in text
    assert 'srcnet_consistency_last_complete_timestamp_seconds{endpoint="UKSRC_DISK"}' in text
    assert 'srcnet_consistency_check_overdue{endpoint="UKSRC_DISK"} 0.0' in text
    # The healing copy is planned, so the product still has a good replica coming.
    assert "srcnet_products_without_good_replica 0.0" in text
    # A check that completed long ago (twice the period) is overdue.
    ConsistencyCheck.objects.update(
        started=dt.datetime(2020, 1, 1, tzinfo=dt.UTC), finished=dt.datetime(2020, 1, 1, tzinfo=dt.UTC)
    )
    text = client.get("/metrics").content.decode()
    assert 'srcnet_consistency_check_overdue{endpoint="UKSRC_DISK"} 1.0' in text


class BreaksPartWay(StorageReader):
    """The real site's listing, broken after the first entry of one directory (a connection dropped half
    way through a large listing: not something a local XRootD server can be made to do on cue)."""

    def __init__(self, endpoint: StorageEndpoint, broken: str) -> None:
        super().__init__(endpoint)
        self.broken = broken

    def list_directory(self, path: str):  # type: ignore[no-untyped-def]
        for count, entry in enumerate(super().list_directory(path)):
            if path == self.broken and count == 1:
                raise StorageReadError(f"list {path}: connection reset by peer after 1 entry")
            yield entry

    def size(self, path: str) -> int:
        if path.startswith(self.broken + "/"):
            raise StorageReadError(f"stat {path}: connection reset by peer")
        return super().size(path)


def test_a_listing_that_fails_part_way_marks_nothing_lost_behind_it(checked) -> None:  # type: ignore[no-untyped-def]
    broken = placed_product(checked, files=("a.ms", "b.ms", "c.ms"))
    broken.at(checked, "UKSRC_DISK", "c.ms").unlink()  # gone, but behind the break: not provable
    whole = placed_product(checked)
    whole.at(checked, "UKSRC_DISK", "b.ms").unlink()
    uk = StorageEndpoint.objects.get(name="UKSRC_DISK")
    check = ConsistencyCheck.objects.create(endpoint=uk, mode=CheckMode.LIST, checksum_fraction=0.0)
    run_check(check, reader=BreaksPartWay(uk, f"ska/{broken.product.name}"))
    assert check.state == CheckState.INCOMPLETE
    assert findings(check, FindingKind.LOST) == {path_of(whole, "b.ms")}  # the other directory is judged
    # Of the broken directory, the one entry listed before the break is judged (present); the other two,
    # one of them really gone, are unchecked (their stat fails as well).
    assert (check.unchecked, check.files_checked) == (2, 3), check.errors
    assert any("connection reset" in e for e in check.errors)
    assert broken.product.replicas.get(endpoint=uk).state == ReplicaState.AVAILABLE


def test_a_product_that_lost_every_replica_says_so_and_raises_the_alert(checked) -> None:  # type: ignore[no-untyped-def]
    placed = placed_product(checked, files=("a.ms",))
    for endpoint in ("SKA1-LOW_SDP", "UKSRC_DISK"):
        placed.at(checked, endpoint, "a.ms").unlink()
    at_sdp = check_of("SKA1-LOW_SDP", mode=CheckMode.STAT)
    assert at_sdp.lost == 1
    sdp = placed.product.replicas.get(endpoint__name="SKA1-LOW_SDP")
    assert sdp.state == ReplicaState.LOST  # marked; nothing is ever copied to the SDP
    placed.product.refresh_from_db()
    assert placed.product.state == ProductState.PLACED  # its copy at UKSRC was still believed good
    at_uk = check_of("UKSRC_DISK", mode=CheckMode.STAT)
    (finding,) = at_uk.findings.all()
    assert finding.action == FindingAction.NO_SOURCE
    replica = placed.product.replicas.get(endpoint__name="UKSRC_DISK")
    assert replica.state == ReplicaState.FAILED and "no available replica" in replica.reason
    placed.product.refresh_from_db()
    assert placed.product.state == ProductState.FAILED
    text = Client().get("/metrics").content.decode()
    assert "srcnet_products_without_good_replica 1.0" in text


def test_a_rucio_replicas_declaration_not_taken_is_made_again_by_the_next_check(checked, caplog) -> None:  # type: ignore[no-untyped-def]
    """A replica of a Rucio rule whose declaration of bad files Rucio did not take (here: no Rucio server
    configured) stays marked, and the next check declares it again; once one was taken, no more."""
    placed = placed_product(checked)
    replica = placed.product.replicas.get(endpoint__name="UKSRC_DISK")
    Replica.objects.filter(pk=replica.pk).update(rucio_rule="a-rule")
    placed.at(checked, "UKSRC_DISK", "a.ms").unlink()
    not_configured = "but no Rucio server is configured"

    first = check_of(mode=CheckMode.STAT)
    replica.refresh_from_db()
    assert replica.state == ReplicaState.LOST
    assert first.findings.get().action == FindingAction.NONE
    assert caplog.text.count(not_configured) == 1

    check_of(mode=CheckMode.STAT)
    assert caplog.text.count(not_configured) == 2  # tried again
    replica.refresh_from_db()
    assert replica.state == ReplicaState.LOST

    first.findings.update(action=FindingAction.RUCIO, acted=dt.datetime.now(dt.UTC))  # as if Rucio took it
    check_of(mode=CheckMode.STAT)
    assert caplog.text.count(not_configured) == 2

"""Faults while products are being pushed, with real processes: after each, within a bounded time, every
transfer has ended FINISHED or FAILED with a reason, no replica is AVAILABLE unless its bytes at the
destination have the right adler32, no partial file is left where no replica is, and no product is lost.

Each test appends its figures to test-artifacts/reliability.json (docs/reliability.md's table)."""

from __future__ import annotations

import os
import signal
import subprocess
import time

import pytest
from django.db import connection

from localnet.postgres import ensure_postgres, stop_postgres
from localnet.processes import stop_pid
from localnet.state import REDIS_PASSWORD
from tests.conftest import token_site

from .conftest import (
    FILE_BYTES,
    active_copies,
    assert_nothing_lost,
    partial_at,
    policy_to,
    push_products,
    settle_and_audit,
    site_pid,
    wait_for,
)

pytestmark = [pytest.mark.integration, pytest.mark.faults]


def four_products_mid_copy(fault_net, fault_worker):  # type: ignore[no-untyped-def]
    """Four products pushed to UKSRC; returns once copies are under way (a partial file at the
    destination): the products, the copies in flight, and the instant to strike."""
    policy_to("UKSRC_DISK")
    fault_worker.start()
    products = push_products(fault_net, 4)
    wait_for(lambda: active_copies() and partial_at(fault_net["FAULT-UK"]), 60, "a copy under way")
    return products, active_copies(), time.monotonic()


def test_a_worker_killed_mid_copy_loses_nothing(fault_net, fault_worker):
    products, in_flight, struck = four_products_mid_copy(fault_net, fault_worker)
    fault_worker.kill()
    fault_worker.start()
    report = settle_and_audit(
        "Celery worker SIGKILLed mid-copy", products, fault_net, in_flight=in_flight, since=struck
    )
    assert_nothing_lost(report)
    # The reaper found the dead worker's copies and they were retried: all arrived.
    assert report.finished == 4, report


def test_the_destination_server_killed_mid_copy_then_restarted(
    fault_net, fault_worker, test_state, token_issuer
):
    products, in_flight, struck = four_products_mid_copy(fault_net, fault_worker)
    stop_pid(site_pid(test_state, "FAULT-UK"), sig=signal.SIGKILL)
    time.sleep(2)
    token_site(test_state, token_issuer, "FAULT-UK")
    report = settle_and_audit(
        "destination XRootD SIGKILLed mid-copy, restarted after 2 s",
        products,
        fault_net,
        in_flight=in_flight,
        since=struck,
    )
    assert_nothing_lost(report)
    assert report.finished == 4, report


def test_postgresql_restarted_while_copies_run(fault_net, fault_worker, test_state):
    products, in_flight, struck = four_products_mid_copy(fault_net, fault_worker)
    connection.close()
    stop_postgres(test_state)
    ensure_postgres(test_state)
    connection.close()
    report = settle_and_audit(
        "PostgreSQL restarted mid-copy", products, fault_net, in_flight=in_flight, since=struck
    )
    assert_nothing_lost(report)
    assert report.finished == 4, report


def test_the_broker_flushed_with_work_queued(fault_net, fault_worker, test_state):
    from transfers.models import LinkLimit

    policy_to("UKSRC_DISK")
    # One copy at a time on every link: most of the work waits in the queue when the broker loses it.
    LinkLimit.objects.create(source_se="*", dest_se="*", max_active=1)
    fault_worker.start()
    products = push_products(fault_net, 4)
    wait_for(lambda: active_copies(), 60, "the first copy under way")
    in_flight = active_copies()
    struck = time.monotonic()
    port = test_state.read_runtime()["ports"]["redis"]
    # The password through the environment (redis-cli reads REDISCLI_AUTH), not the command line.
    auth = {**os.environ, "REDISCLI_AUTH": test_state.secret(REDIS_PASSWORD)}
    flushed = subprocess.run(
        ["redis-cli", "-p", str(port), "FLUSHALL"], check=True, capture_output=True, env=auth
    )
    assert flushed.stdout.strip() == b"OK", flushed
    report = settle_and_audit(
        "Redis flushed (every queued message lost)",
        products,
        fault_net,
        in_flight=in_flight,
        since=struck,
        timeout=240,
    )
    assert_nothing_lost(report)
    assert report.finished == 4, report


def test_a_full_destination_disk_fails_with_the_reason_and_leaves_nothing(fault_net, fault_worker, settings):
    # 40 MiB of tmpfs for three products of 24 MiB: one fits, the others cannot.
    policy_to("ZASRC_DISK")
    # A full disk is the lane's failure, not the source's: a product that hits it goes back to the queue and
    # the lane is out until its cool-off (scheduler.md, "When a lane breaks"); with ZASRC the only SRC, the
    # products wait for it, are probed once more after 2 s and then fail with the reason.
    lane = {"SRCNET_LANE_COOL_OFF": "2", "SRCNET_MAX_REROUTES": "1"}
    settings.SRCNET_LANE_HEALTH = {**settings.SRCNET_LANE_HEALTH, "COOL_OFF_SECONDS": 2, "MAX_REROUTES": 1}
    fault_worker.start(**lane)
    struck = time.monotonic()
    products = push_products(fault_net, 3)
    report = settle_and_audit(
        "destination disk full (tmpfs of 40 MiB, 3 x 24 MiB)", products, fault_net, in_flight=0, since=struck
    )
    assert_nothing_lost(report)
    assert report.failed_with_reason >= 1, report
    assert any("No space left" in r or "ENOSPC" in r or "space" in r.lower() for r in report.reasons), report
    assert report.finished >= 1, report


def test_a_task_delivered_twice_copies_once(fault_net, fault_worker):
    from transfers.models import TransferAttempt
    from transfers.tasks import execute_attempt

    policy_to("UKSRC_DISK")
    fault_worker.start()
    products = push_products(fault_net, 2)
    wait_for(
        lambda: TransferAttempt.objects.filter(claimed__isnull=False).count() == 2, 60, "both copies claimed"
    )
    struck = time.monotonic()
    for attempt in TransferAttempt.objects.all():
        execute_attempt.delay(attempt.pk)
    report = settle_and_audit(
        "every copy task delivered twice", products, fault_net, in_flight=2, since=struck
    )
    assert_nothing_lost(report)
    assert report.finished == 2
    # One attempt per file: the second delivery found its attempt claimed and did nothing.
    assert TransferAttempt.objects.count() == 2
    assert fault_worker.log.read_text().count("already claimed") >= 2


def test_a_worker_dying_after_the_copy_before_recording_it(fault_net, fault_worker):
    from transfers.choices import AttemptState
    from transfers.models import TransferAttempt

    policy_to("UKSRC_DISK")
    # This worker's pool process kills itself between a finished copy and its record.
    fault_worker.start(SRCNET_FAULT_POINTS="after_copy")
    products = push_products(fault_net, 1)
    (on_disk,) = wait_for(
        lambda: [
            p
            for p in fault_net["FAULT-UK"].local_path("srcnet/ska").rglob(f"{products[0].name}.ms")
            if p.stat().st_size == FILE_BYTES
        ],
        60,
        "the copy to complete",
    )
    # The bytes are there, complete, but nothing says so: the process that copied them is gone.
    wait_for(
        lambda: "exited prematurely: signal 9" in fault_worker.log.read_text(), 30, "the pool process to die"
    )
    assert TransferAttempt.objects.get().state == AttemptState.RUNNING
    struck = time.monotonic()
    fault_worker.stop()
    fault_worker.start()
    report = settle_and_audit(
        "worker died after the copy, before recording it", products, fault_net, in_flight=1, since=struck
    )
    assert_nothing_lost(report)
    assert report.finished == 1
    # The lost attempt was reaped and the copy made again over what it had left.
    reasons = list(TransferAttempt.objects.order_by("number").values_list("reason", flat=True))
    assert len(reasons) == 2 and reasons[0].startswith("worker lost"), reasons
    assert on_disk.stat().st_size == FILE_BYTES

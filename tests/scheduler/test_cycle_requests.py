"""Push cycles asked for while one runs (schedulers/cycle_requests.py): the ask leaves a mark and ends at
once, and the running cycle asks for one more once it commits. Another connection holds the cycle's lock, as a
running cycle would; the tasks this sends go to a queue of the test's own (``idle_queue``)."""

from __future__ import annotations

import threading
import time

import psycopg
import pytest
from django.db import connection, transaction

from schedulers.cycle_requests import CYCLE_ASK, again_key
from schedulers.loop import PUSH_CYCLE_LOCK
from schedulers.models import PushCycle
from schedulers.services import request_push_cycle
from schedulers.tasks import push_cycle as push_cycle_task
from srcnet.task_queue import broker_redis

pytestmark = pytest.mark.django_db(transaction=True)
CYCLE = "schedulers.push_cycle"


class RunningCycle:
    """A connection of its own holding the push cycle's lock (as a cycle in another worker does)."""

    def __init__(self) -> None:
        params = connection.get_connection_params()
        self.conn = psycopg.connect(
            **{k: v for k, v in params.items() if k in ("dbname", "user", "password", "host", "port")}
        )
        self.conn.autocommit = True

    def __enter__(self) -> RunningCycle:
        self.conn.execute("SELECT pg_advisory_lock(%s)", [PUSH_CYCLE_LOCK])
        return self

    def end(self) -> None:
        self.conn.execute("SELECT pg_advisory_unlock(%s)", [PUSH_CYCLE_LOCK])

    def __exit__(self, *exc: object) -> None:
        self.conn.close()


def test_an_ask_while_a_cycle_runs_ends_at_once_and_one_more_cycle_follows(idle_queue) -> None:  # type: ignore[no-untyped-def]
    redis = broker_redis()
    redis.delete(again_key())
    with RunningCycle() as running:
        started = time.monotonic()
        assert push_cycle_task() == 0
        assert push_cycle_task() == 0  # a second ask: the same one mark
        assert time.monotonic() - started < 5  # no process waits for the lock
        assert not PushCycle.objects.exists()
        assert redis.get(again_key()) == b"1"
        running.end()
    # The next cycle to run (the running one, once committed) sees the mark and asks for one more, once.
    push_cycle_task()
    assert PushCycle.objects.count() == 1
    assert redis.get(again_key()) is None
    assert idle_queue.waiting(CYCLE) == 1
    push_cycle_task()  # nothing asked meanwhile: no further cycle
    assert idle_queue.waiting(CYCLE) == 1


def test_a_broker_that_cannot_keep_the_mark_makes_the_ask_wait_for_its_cycle(idle_queue, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import redis

    from localnet.state import free_port
    from srcnet import task_queue

    unreachable = redis.Redis(port=free_port(), socket_connect_timeout=0.5)  # nothing listens there
    monkeypatch.setattr(task_queue, "broker_redis", lambda: unreachable)
    with RunningCycle() as running:
        threading.Timer(1.5, running.end).start()
        started = time.monotonic()
        push_cycle_task()
        assert time.monotonic() - started >= 1.4  # it waited for the running cycle, then ran its own
    assert PushCycle.objects.count() == 1


def test_asks_made_before_the_asked_cycle_begins_send_one_message(idle_queue) -> None:  # type: ignore[no-untyped-def]
    """Every push job that ends asks for a cycle (several a second at a file rate): the asks made while the
    cycle asked for first has not begun send nothing more; once it begins, the next ask sends one."""
    CYCLE_ASK.begins()
    try:
        for _ in range(20):
            with transaction.atomic():
                request_push_cycle()
        assert idle_queue.waiting(CYCLE) == 1
        push_cycle_task()  # begins: what commits from now on may come after its look
        assert PushCycle.objects.count() == 1
        with transaction.atomic():
            request_push_cycle()
        with transaction.atomic():
            request_push_cycle()
        assert idle_queue.waiting(CYCLE) == 2
    finally:
        CYCLE_ASK.begins()


def test_an_ask_rolled_back_sends_nothing(idle_queue) -> None:  # type: ignore[no-untyped-def]
    CYCLE_ASK.begins()
    with pytest.raises(RuntimeError), transaction.atomic():
        request_push_cycle()
        raise RuntimeError("rolled back")
    assert idle_queue.waiting(CYCLE) == 0

"""Asking for a dispatch: every change that may free or fill a slot asks, and at a file rate that is hundreds
of asks a second, so one dispatch waits at a time (transfers/services/common.py). The messages are read
from a queue of the test's own that no worker reads (the ``idle_queue`` fixture)."""

from __future__ import annotations

import pytest
from django.db import transaction

from transfers.services import FileRequest, submit_job
from transfers.services.common import dispatch_begins, enqueue_dispatch
from transfers.tasks import dispatch as dispatch_task

pytestmark = pytest.mark.django_db(transaction=True)
DISPATCH = "transfers.dispatch"
SRC, DST = "root://src.example.org:1094", "root://dst.example.org:1094"


def _changed(countdown: float = 0.0) -> None:
    with transaction.atomic():
        enqueue_dispatch(countdown)


def test_many_changes_ask_for_one_dispatch_until_it_begins(idle_queue) -> None:  # type: ignore[no-untyped-def]
    try:
        for _ in range(25):
            _changed()
        assert idle_queue.waiting(DISPATCH) == 1
        dispatch_begins()  # what changes from now on may come after its look: asked for again, once
        _changed()
        _changed()
        assert idle_queue.waiting(DISPATCH) == 2
        _changed(countdown=5)  # a retry's later dispatch is always sent
        assert idle_queue.waiting(DISPATCH) == 3
    finally:
        dispatch_begins()


def test_a_change_rolled_back_asks_nothing(idle_queue) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(RuntimeError), transaction.atomic():
        enqueue_dispatch()
        raise RuntimeError("rolled back")
    assert idle_queue.waiting(DISPATCH) == 0


def test_the_dispatch_task_lets_the_next_change_ask_again(idle_queue) -> None:  # type: ignore[no-untyped-def]
    try:
        first = submit_job(files=[FileRequest(f"{SRC}//data/a", f"{DST}//data/a")])
        second = submit_job(files=[FileRequest(f"{SRC}//data/b", f"{DST}//data/b")])
        assert idle_queue.waiting(DISPATCH) == 1  # the second submission's ask is the first's
        assert dispatch_task() == 2  # both admitted by the one dispatch
        assert idle_queue.waiting("transfers.execute_attempt") == 2
        assert {first.files.get().state, second.files.get().state} == {"ACTIVE"}
        submit_job(files=[FileRequest(f"{SRC}//data/c", f"{DST}//data/c")])
        assert idle_queue.waiting(DISPATCH) == 2
    finally:
        dispatch_begins()


def test_a_broker_that_cannot_keep_the_mark_still_gets_every_ask(idle_queue, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The mark is an economy, never a reason to ask for nothing: if its Redis cannot answer, each ask
    sends its dispatch (as before the marks), and a dispatch begins all the same."""
    import redis

    from localnet.state import free_port
    from srcnet import pending_asks

    unreachable = redis.Redis(port=free_port(), socket_connect_timeout=0.5)  # nothing listens there
    monkeypatch.setattr(pending_asks, "_client", lambda: unreachable)
    _changed()
    _changed()
    assert idle_queue.waiting(DISPATCH) == 2
    dispatch_begins()  # logs, does not raise

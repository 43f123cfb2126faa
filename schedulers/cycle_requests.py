"""Push cycles asked for while one runs: one more cycle after it, not one waiting process per ask.

Cycles are asked for by the beat, by every job that ends (its lane freed), by rules and campaigns: at a file
rate, several a second, and one cycle at a time may run (``loop.PUSH_CYCLE_LOCK``). Each ask used to take a
worker process and wait for the lock: the end-to-end benchmark's worker ran 78 cycles of 3.5 s each (most
of it waiting) in a 38 s run, holding the processes the copies and the dispatcher need. Now a cycle that
finds another running leaves a mark and ends; the running cycle, once committed, sees the mark and asks
for one more, which sees everything the asks were for. A broker that cannot keep the mark makes the ask
wait for the lock, as before. And an ask made while a cycle asked for earlier has not begun yet sends
nothing (``CYCLE_ASK``): that cycle will see what the ask was for."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from srcnet.pending_asks import PendingAsk

log = logging.getLogger(__name__)
AGAIN_SECONDS = 600  # a mark outlives any cycle; expired, the beat's next cycle does what it asked
# A cycle asked for and not begun yet (the beat's own are sent without it): a lost message delays the next
# cycle by at most this long, and by default the beat's next cycle comes sooner.
CYCLE_ASK = PendingAsk("schedulers:push-cycle", 60)


def again_key() -> str:
    from srcnet.task_queue import app

    return f"srcnet:schedulers:push-cycle-again:{app.conf.task_default_queue}"


def run_coalesced(try_run: Callable[[], Any], run: Callable[[], Any]) -> int:
    """Run a cycle (``try_run``: ``loop.push_cycle_unless_running``) unless another is running, in which case
    one more runs after that one (``run``, which waits for the lock: only when the broker cannot keep the
    mark); returns the legs this process's cycle submitted (0 if none ran here)."""
    import redis

    from srcnet.task_queue import broker_redis

    CYCLE_ASK.begins()
    cycle = try_run()
    if cycle is None:
        try:
            broker_redis().set(again_key(), "1", ex=AGAIN_SECONDS)
        except redis.RedisError:
            log.warning("push-cycle mark unavailable; waiting for the running cycle", exc_info=True)
            return int(run().legs_submitted)
        # The running cycle may have ended before the mark was set (no one would see it): try once more.
        cycle = try_run()
        if cycle is None:
            return 0  # the cycle holding the lock sees the mark once it commits
    try:
        again = broker_redis().getdel(again_key())
    except redis.RedisError:
        log.warning("push-cycle mark unreadable; the beat's next cycle follows", exc_info=True)
        again = None
    if again:
        from srcnet.task_queue import app

        app.send_task("schedulers.push_cycle")
    return int(cycle.legs_submitted)

"""A task asked for and not yet begun: the asks made meanwhile send nothing more.

At a file rate, every commit that may free or fill a copy slot asks for a dispatch, and every push job that
ends asks for a push cycle: hundreds of asks a second. Each sent message takes a worker process, and only one
dispatch or one cycle can run at a time; one task that has not begun yet sees every change made before it
begins, so the asks that find it waiting send nothing. A mark in the broker's Redis says one is waiting: set
by the ask that sends it, taken away as the task begins (what commits from then on may come after the task's
look, so it asks again). The mark expires, so a lost message delays the next task by at most its lifetime;
a broker that cannot keep the mark is no reason to ask for nothing: every ask is then sent, as before."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

log = logging.getLogger(__name__)


def _client() -> Any:
    from .task_queue import broker_redis

    return broker_redis()


@dataclass(frozen=True)
class PendingAsk:
    name: str  # what is asked for, e.g. "transfers:dispatch"
    seconds: int  # the mark's lifetime: the longest a lost message delays the next task

    def key(self) -> str:
        from .task_queue import app

        return f"srcnet:{self.name}-pending:{app.conf.task_default_queue}"

    def first(self) -> bool:
        """Whether no task asked for earlier is still waiting to begin (and mark that one is now)."""
        import redis

        try:
            return bool(_client().set(self.key(), "1", nx=True, ex=self.seconds))
        except redis.RedisError:
            log.warning("%s mark unavailable; sending the task", self.name, exc_info=True)
            return True

    def begins(self) -> None:
        """The task begins: what commits from now on asks for another."""
        import redis

        try:
            _client().delete(self.key())
        except redis.RedisError:
            log.warning("%s mark not cleared; it expires in %s s", self.name, self.seconds, exc_info=True)

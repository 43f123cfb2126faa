"""The local network's Redis (the Celery broker) asks every client for the state's password: an account of
the machine without it can neither read nor queue work; the platform's processes have it."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
import redis
from django.conf import settings

from localnet.processes import read_pid
from localnet.redis import ensure_redis
from localnet.state import REDIS_PASSWORD, StateDir


def test_the_broker_refuses_a_client_without_the_password(test_state: StateDir) -> None:
    port = ensure_redis(test_state)
    with pytest.raises(redis.exceptions.AuthenticationError):
        redis.Redis(host="127.0.0.1", port=port, socket_timeout=5).ping()
    with pytest.raises(redis.exceptions.AuthenticationError):
        redis.Redis(host="127.0.0.1", port=port, password="guessed", socket_timeout=5).ping()
    # The platform's own URL (this process's settings, as every worker's) has it.
    assert redis.Redis.from_url(settings.CELERY_BROKER_URL, socket_timeout=5).ping()


def test_the_password_is_in_no_command_line_and_readable_by_its_owner_only(test_state: StateDir) -> None:
    ensure_redis(test_state)
    password = test_state.secret(REDIS_PASSWORD)
    assert len(password) >= 32
    pid = read_pid(test_state, "redis")
    assert pid
    assert password.encode() not in Path(f"/proc/{pid}/cmdline").read_bytes()
    config = test_state.path / "redis" / "redis.conf"
    assert stat.S_IMODE(config.stat().st_mode) == 0o600
    assert stat.S_IMODE((test_state.path / "secrets" / REDIS_PASSWORD).stat().st_mode) == 0o600

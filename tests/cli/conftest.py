"""CLI test fixtures: a live server (real HTTP and database), tokens, ``srcnet`` run in-process."""

from __future__ import annotations

import io
import socket
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from cli.main import main
from identity.tokens import issue
from tests.conftest import REFERENCE_TOPOLOGY


@dataclass
class Result:
    code: int
    out: str
    err: str


class TtyStringIO(io.StringIO):
    """A stderr that says it is a terminal, to see the in-place progress line."""

    def isatty(self) -> bool:
        return True


Runner = Callable[..., Result]


@pytest.fixture
def operator_token(transactional_db, operator) -> str:  # type: ignore[no-untyped-def]
    return issue(operator, name="cli", scope="operate")[1]


@pytest.fixture
def scientist_token(transactional_db, scientist) -> str:  # type: ignore[no-untyped-def]
    return issue(scientist, name="cli", scope="operate")[1]


@pytest.fixture
def srcnet(live_server, operator_token, tmp_path) -> Runner:  # type: ignore[no-untyped-def]
    """``srcnet(*argv, token=..., url=..., stderr=...)``: main() in-process against the live server;
    the operator's token unless ``token`` says otherwise (None: no token at all). Its sign-on folder is the
    test's own (never the account's ~/.config/srcnet)."""

    def run(
        *argv: str,
        token: str | None = operator_token,
        url: str | None = None,
        stderr: io.StringIO | None = None,
    ) -> Result:
        env = {"SRCNET_URL": url or live_server.url, "SRCNET_CONFIG_DIR": str(tmp_path / "srcnet-config")}
        if token is not None:
            env["SRCNET_TOKEN"] = token
        out, err = io.StringIO(), stderr if stderr is not None else io.StringIO()
        code = main(list(argv), env=env, stdout=out, stderr=err)
        return Result(code, out.getvalue(), err.getvalue())

    return run


@pytest.fixture
def closed_port_url() -> str:
    """A URL nobody listens on: a port bound and released again."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


@pytest.fixture
def reference_file() -> Path:
    return REFERENCE_TOPOLOGY


@pytest.fixture
def tty_stderr() -> TtyStringIO:
    return TtyStringIO()

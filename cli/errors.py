"""The CLI's exceptions: each carries the exit code and a one-line message for stderr."""

from __future__ import annotations

from typing import Any

from .exit_codes import ExitCode


class CliError(Exception):
    """A failure reported as ``srcnet: <message>`` on stderr and the exit code ``code``."""

    code: ExitCode = ExitCode.ERROR

    def __init__(self, message: str, *, body: Any = None, status: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.body = body
        self.status = status


class UsageError(CliError):
    code = ExitCode.USAGE


class ApiError(CliError):
    """The server answered with an error the CLI has no better name for (5xx, unexpected 4xx)."""

    code = ExitCode.ERROR


class ValidationFailed(CliError):
    """HTTP 400: ``body`` holds the server's ``{field: [messages]}`` (or the topology import's shape)."""

    code = ExitCode.VALIDATION


class NotFound(CliError):
    code = ExitCode.NOT_FOUND


class AuthError(CliError):
    code = ExitCode.AUTH


class ConnectionFailed(CliError):
    code = ExitCode.CONNECTION


class WatchTimeout(CliError):
    code = ExitCode.TIMEOUT


class TransferFailed(CliError):
    code = ExitCode.TRANSFER_FAILED


class UnsuitableMachine(CliError):
    """The command needs what this machine lacks (root, a TUN device, the checkout's bench/ folder)."""

    code = ExitCode.ENVIRONMENT


def format_field_errors(body: Any) -> list[str]:
    """``{"field": ["msg", ...]}`` -> ``["field: msg", ...]`` (nested lists/dicts flattened)."""
    if isinstance(body, dict):
        lines: list[str] = []
        for key, value in body.items():
            for message in _messages(value):
                lines.append(message if key in ("detail", "non_field_errors") else f"{key}: {message}")
        return lines
    return [str(m) for m in _messages(body)]


def _messages(value: Any) -> list[str]:
    if isinstance(value, list):
        return [m for item in value for m in _messages(item)]
    if isinstance(value, dict):
        return [f"{k}: {m}" for k, v in value.items() for m in _messages(v)]
    return [str(value)]

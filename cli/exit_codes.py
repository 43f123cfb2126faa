"""The exit codes of ``srcnet``, defined here only (a test checks docs/cli.md's table against them)."""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    """What a ``srcnet`` process tells its caller; every command exits with one of these."""

    OK = 0
    ERROR = 1
    USAGE = 2
    VALIDATION = 3
    NOT_FOUND = 4
    AUTH = 5
    CONNECTION = 6
    TRANSFER_FAILED = 7
    TIMEOUT = 8
    ENVIRONMENT = 9
    PROBLEMS_FOUND = 10
    INTERRUPTED = 130


DESCRIPTIONS: dict[ExitCode, str] = {
    ExitCode.OK: "Success (for `transfers watch`: every selected file FINISHED).",
    ExitCode.ERROR: "Unexpected error: a server error (HTTP 5xx), another HTTP error, an unreadable answer.",
    ExitCode.USAGE: "Bad command line (unknown command or option, missing argument, unreadable local file).",
    ExitCode.VALIDATION: "The server rejected the request as invalid (HTTP 400), e.g. a topology file error.",
    ExitCode.NOT_FOUND: "The object does not exist (HTTP 404, or `paths show` finds no path of that name).",
    ExitCode.AUTH: "Not authenticated (HTTP 401) or not allowed (HTTP 403: a write by a non-operator).",
    ExitCode.CONNECTION: "The server could not be reached (refused, unresolvable host, timed out).",
    ExitCode.TRANSFER_FAILED: "`transfers watch`: every file ended, but at least one FAILED or was CANCELED.",
    ExitCode.TIMEOUT: (
        "`transfers watch`: `--timeout` expired before every file ended; `storage check --wait`: before "
        "the check ended."
    ),
    ExitCode.ENVIRONMENT: (
        "This machine cannot run the command (`bench path`: needs root, /dev/net/tun, for plugin sites "
        "the built XRootD plugin and, with tokens, a local token issuer that starts)."
    ),
    ExitCode.PROBLEMS_FOUND: (
        "`tokens check`: at least one problem found (each printed with what to change); `storage check "
        "--wait`: the check found lost, corrupt or dark files, or could not read part of the storage."
    ),
    ExitCode.INTERRUPTED: "Interrupted by Ctrl-C (SIGINT).",
}


def markdown_table() -> str:
    """The exit code table of docs/cli.md, generated from the enum."""
    lines = ["| Code | Name | Meaning |", "|-----:|------|---------|"]
    lines += [f"| {code.value} | `{code.name}` | {DESCRIPTIONS[code]} |" for code in ExitCode]
    return "\n".join(lines)


if __name__ == "__main__":  # pragma: no cover - a helper for updating docs/cli.md
    print(markdown_table())

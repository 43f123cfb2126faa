"""What every command gets: the API client, the output streams and format, and the argparse helpers."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

from .client import Client
from .output import render_json, render_kv, render_table

Row = Mapping[str, Any]
Handler = Callable[["Context", argparse.Namespace], int]


@dataclass
class Context:
    client: Client
    stdout: TextIO
    stderr: TextIO
    output: str  # "table" or "json"
    env: Mapping[str, str]

    @property
    def as_json(self) -> bool:
        return self.output == "json"

    def out(self, text: str) -> None:
        """Data: to stdout."""
        self.stdout.write(text if text.endswith("\n") else text + "\n")

    def info(self, text: str) -> None:
        """Diagnostics and progress: to stderr."""
        self.stderr.write(f"{text}\n")

    def emit_list(
        self,
        rows: Sequence[Row],
        columns: Sequence[str],
        to_row: Callable[[Row], Row] | None = None,
        *,
        count: int | None = None,
        what: str = "rows",
    ) -> None:
        """A list: the raw API objects as JSON, or a table of ``to_row(obj)`` with ``columns``."""
        if self.as_json:
            self.out(render_json(list(rows)))
        else:
            self.out(render_table([to_row(r) if to_row else r for r in rows], columns))
        if count is not None and count > len(rows):
            self.info(f"srcnet: showing {len(rows)} of {count} {what} (use --limit to see more)")

    def emit_object(self, obj: Row, keys: Sequence[str], to_row: Callable[[Row], Row] | None = None) -> None:
        """One object: the raw API object as JSON, or ``key  value`` lines."""
        if self.as_json:
            self.out(render_json(obj))
        else:
            self.out(render_kv(to_row(obj) if to_row else obj, keys))


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1: {text!r}")
    return value


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be more than 0: {text!r}")
    return value


def common_options(*, output: bool, suppress: bool) -> argparse.ArgumentParser:
    """--url, --token (and -o/--output): accepted before the noun and after the verb."""
    parser = argparse.ArgumentParser(add_help=False)
    default: Any = argparse.SUPPRESS if suppress else None
    group = parser.add_argument_group("connection")
    group.add_argument("--url", default=default, help="the control plane's base URL (env SRCNET_URL)")
    group.add_argument("--token", default=default, help="an API token (env SRCNET_TOKEN)")
    if output:
        parser.add_argument(
            "-o",
            "--output",
            choices=("table", "json"),
            default=argparse.SUPPRESS if suppress else "table",
            help="output format (default: table)",
        )
    return parser


def add_noun(subparsers: Any, name: str, help_text: str, *, aliases: Sequence[str] = ()) -> Any:
    """A noun and its verbs' subparsers; ``aliases`` are other names for the same noun."""
    noun = subparsers.add_parser(name, aliases=list(aliases), help=help_text, description=help_text)
    return noun.add_subparsers(dest="verb", metavar="VERB", required=True)


def add_verb(
    verbs: Any, name: str, help_text: str, func: Handler, *, output: bool = True, epilog: str | None = None
) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = verbs.add_parser(
        name,
        help=help_text,
        description=help_text,
        epilog=epilog,
        parents=[common_options(output=output, suppress=True)],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.set_defaults(func=func)
    return parser


def add_limit(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--limit",
        type=positive_int,
        default=None,
        help="show at most this many rows (default: all, up to 100000)",
    )

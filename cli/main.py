"""``srcnet``: the operators' command line for the SRCNet control plane (a REST client; see docs/cli.md)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping
from contextlib import redirect_stderr, redirect_stdout
from typing import TextIO

from .client import Client
from .commands import (
    auth,
    bench,
    campaigns,
    jobs,
    links,
    paths,
    policies,
    products,
    rules,
    scheduling,
    sites,
    storage,
    subscriptions,
    tokens,
    topology,
    transfers,
)
from .config import load_config
from .context import Context, common_options
from .errors import CliError
from .exit_codes import ExitCode

VERSION = "0.1.0"
NOUNS = (
    topology,
    sites,
    links,
    paths,
    products,
    rules,
    subscriptions,
    policies,
    transfers,
    jobs,
    scheduling,
    bench,
    campaigns,
    tokens,
    storage,
    auth,
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="srcnet",
        parents=[common_options(output=True, suppress=False)],
        description="Operate the SRCNet control plane: topology, products, replica policies and transfers.",
        epilog="Configuration: SRCNET_URL, SRCNET_TOKEN (or --url/--token). Exit codes: see docs/cli.md.",
    )
    parser.add_argument("--version", action="version", version=f"srcnet {VERSION}")
    nouns = parser.add_subparsers(dest="noun", metavar="NOUN", required=True)
    for module in NOUNS:
        module.register(nouns)
    return parser


def main(
    argv: list[str] | None = None,
    *,
    env: Mapping[str, str] | None = None,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
) -> int:
    env = os.environ if env is None else env
    out = stdout if stdout is not None else sys.stdout
    err = stderr if stderr is not None else sys.stderr
    parser = build_parser()
    with redirect_stdout(out), redirect_stderr(err):
        try:
            args = parser.parse_args(sys.argv[1:] if argv is None else argv)
        except SystemExit as exc:  # argparse: --help/--version (0) or a usage error (2)
            return ExitCode.OK if exc.code in (0, None) else ExitCode.USAGE
    try:
        config = load_config(url=args.url, token=args.token, env=env)
        ctx = Context(client=Client(config), stdout=out, stderr=err, output=args.output, env=env)
        return int(args.func(ctx, args))
    except CliError as exc:
        err.write(f"srcnet: {exc.message}\n")
        return int(exc.code)
    except KeyboardInterrupt:
        err.write("srcnet: interrupted\n")
        return int(ExitCode.INTERRUPTED)
    except Exception as exc:  # a bug or something unforeseen: still one line and a documented code
        err.write(f"srcnet: unexpected error: {type(exc).__name__}: {exc}\n")
        return int(ExitCode.ERROR)


if __name__ == "__main__":
    sys.exit(main())

"""``srcnet auth login|logout|status``: sign the CLI on through the platform's token issuer (the device
code flow; docs/cli.md), forget that sign-on, or say who the CLI is to the server."""

from __future__ import annotations

import argparse
import time
from typing import Any

from .. import credentials, signon
from ..context import Context, add_noun, add_verb
from ..exit_codes import ExitCode

SCOPES = ("read", "rules", "operate")


def register(nouns: Any) -> None:
    verbs = add_noun(nouns, "auth", "Sign the CLI on through the token issuer, or off again.")
    p = add_verb(
        verbs,
        "login",
        "Sign on through the platform's token issuer: open the page it prints, sign on there and approve; "
        "the refresh token is kept in ~/.config/srcnet/credentials.json (0600; SRCNET_CONFIG_DIR).",
        login_cmd,
        output=False,
        epilog="examples:\n  srcnet auth login\n  srcnet auth login --scope read",
    )
    p.add_argument(
        "--scope",
        choices=SCOPES,
        default="operate",
        help="what the CLI may do within your role (default operate: all it allows)",
    )
    add_verb(
        verbs,
        "logout",
        "Forget this server's sign-on (and revoke it at the issuer).",
        logout_cmd,
        output=False,
    )
    add_verb(verbs, "status", "Who the CLI is to the server, and how.", status_cmd)


def login_cmd(ctx: Context, args: argparse.Namespace) -> int:
    client = ctx.client
    kept = signon.device_sign_on(client.session, client.config.url, args.scope, ctx.info)
    path = credentials.save(client.config.config_dir, client.config.url, kept)
    client.session.headers["Authorization"] = f"Bearer {kept.access_token}"
    me = client.get("/api/")
    ctx.info(f"srcnet: signed on as {me.get('user')} ({me.get('role')}); kept in {path}")
    return ExitCode.OK


def logout_cmd(ctx: Context, args: argparse.Namespace) -> int:
    client = ctx.client
    kept = credentials.load(client.config.config_dir, client.config.url)
    if kept is None:
        ctx.info(f"srcnet: no sign-on kept for {client.config.url}")
        return ExitCode.OK
    revoked = signon.revoke(client.session, kept)
    credentials.forget(client.config.config_dir, client.config.url)
    ctx.info(f"srcnet: signed off from {client.config.url}" + (" (revoked at the issuer)" if revoked else ""))
    return ExitCode.OK


def status_cmd(ctx: Context, args: argparse.Namespace) -> int:
    client = ctx.client
    me = client.get("/api/")
    if client.config.token:
        how = "a token (--token or SRCNET_TOKEN)"
    else:
        kept = credentials.load(client.config.config_dir, client.config.url)
        how = (
            f"the sign-on at {kept.issuer} ({kept.scope or 'no scope'}; access token for "
            f"{max(0, int(kept.expires_at - time.time()))} s more)"
            if kept
            else "nothing"
        )
    ctx.emit_object({"user": me.get("user"), "role": me.get("role"), "by": how}, ["user", "role", "by"])
    return ExitCode.OK

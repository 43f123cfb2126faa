"""Start-up checks of the token settings: ``manage.py check`` and the Celery workers refuse to start with an
issuer that does not answer, publishes no key, or will not give the transfer client the storage scopes,
naming the setting to change (docs/tokens.md). Nothing is checked when no issuer is configured."""

from __future__ import annotations

from typing import Any

from django.core.checks import Error, register

PROBE_SCOPE = "storage.read:/"


def token_problems() -> list[tuple[str, str, str]]:
    """Each problem as (setting, what is wrong, what to change); empty when the issuer serves the client."""
    from .token_doctor import check_issuer
    from .tokens import TokenClient, TokenError, settings_from_django

    issuer = settings_from_django()
    if issuer is None:
        return []
    problems = [
        ("SRCNET_TOKEN_ISSUER", finding.message, finding.fix)
        for finding in check_issuer(issuer)
        if not finding.ok
    ]
    if problems:
        return problems
    try:
        token = TokenClient(issuer).fetch_new([PROBE_SCOPE], "")
    except TokenError as exc:
        return [
            (
                "SRCNET_TOKEN_CLIENT_ID",
                str(exc),
                "check SRCNET_TOKEN_CLIENT_ID and SRCNET_TOKEN_CLIENT_SECRET, and that the client may use "
                "the client credentials grant and ask for storage.read, storage.create and storage.modify",
            )
        ]
    if PROBE_SCOPE not in token.scope.split():
        return [
            (
                "SRCNET_TOKEN_CLIENT_ID",
                f"the issuer does not grant the client {issuer.client_id} the storage scopes (asked for "
                f"{PROBE_SCOPE}, granted {token.scope or 'nothing'})",
                "give the client the path-parameterised storage.read, storage.create and storage.modify "
                "scopes",
            )
        ]
    return []


@register("tokens")
def check_token_issuer(app_configs: Any = None, **kwargs: Any) -> list[Error]:
    return [
        Error(f"{setting}: {message}", hint=fix or None, obj=setting, id="transfers.E001")
        for setting, message, fix in token_problems()
    ]

"""manage.py api_token: personal API tokens from a shell (an operator bootstrapping a deployment, or a
service account's token for the FTS3 endpoint).

    manage.py api_token issue USER [--scope read|rules|operate|fts3] [--days N] [--name NAME]
        prints the key, once (nothing else on standard output, for scripts);
    manage.py api_token list [USER]
    manage.py api_token revoke ID"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from identity.models import ApiToken, TokenScope
from identity.tokens import TokenError, issue, revoke


class Command(BaseCommand):
    help = "Make, list and revoke personal API tokens."

    def add_arguments(self, parser: CommandParser) -> None:
        actions = parser.add_subparsers(dest="action", required=True)
        made = actions.add_parser("issue", help="make a token and print its key")
        made.add_argument("user")
        made.add_argument("--scope", default=TokenScope.OPERATE, choices=TokenScope.values)
        made.add_argument("--days", type=int, default=None, help="lifetime in days (default 30)")
        made.add_argument("--name", default=None)
        listed = actions.add_parser("list", help="list tokens (of USER)")
        listed.add_argument("user", nargs="?")
        revoked = actions.add_parser("revoke", help="revoke a token by its id")
        revoked.add_argument("id", type=int)

    def handle(self, *args: Any, **options: Any) -> None:
        getattr(self, f"_{options['action']}")(options)

    def _issue(self, options: dict[str, Any]) -> None:
        user = get_user_model().objects.filter(username=options["user"]).first()
        if user is None:
            raise CommandError(f"no account {options['user']!r}")
        name = options["name"] or f"made with manage.py on {timezone.now():%Y-%m-%d %H:%M}"
        try:
            token, key = issue(user, name=name, scope=options["scope"], days=options["days"])
        except TokenError as error:
            raise CommandError(
                f"--{'days' if error.field == 'expires_in_days' else error.field}: {error}"
            ) from error
        expires = f"{token.expires:%Y-%m-%d %H:%M} UTC"
        self.stderr.write(f"token {token.pk} of {user.username}, scope {token.scope}, expires {expires}")
        self.stdout.write(key)

    def _list(self, options: dict[str, Any]) -> None:
        tokens = ApiToken.objects.select_related("user").order_by("user__username", "-created")
        if options["user"]:
            tokens = tokens.filter(user__username=options["user"])
        now = timezone.now()
        for token in tokens:
            state = "revoked" if token.revoked else ("expired" if token.expires <= now else "live")
            used = f"{token.last_used:%Y-%m-%d %H:%M}" if token.last_used else "never"
            self.stdout.write(
                f"{token.pk}\t{token.user.username}\t{token.scope}\t{state}\t{token.prefix}...\t"
                f"expires {token.expires:%Y-%m-%d}\tlast used {used}\t{token.name}"
            )

    def _revoke(self, options: dict[str, Any]) -> None:
        token = ApiToken.objects.select_related("user").filter(pk=options["id"]).first()
        if token is None:
            raise CommandError(f"no token {options['id']}")
        self.stdout.write(
            f"token {token.pk} revoked" if revoke(token, None) else f"token {token.pk} was revoked already"
        )

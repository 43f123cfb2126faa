"""manage.py fts3_identity DN USERNAME: let a client certificate's subject act as a user on the FTS3 API."""

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from srcnet.roles import (
    grant_configure_transfers,
    grant_submit_transfers,
    may_configure_transfers,
    may_submit_transfers,
)
from transfers.models import ClientIdentity


class Command(BaseCommand):
    help = "Register (or move) an X.509 subject DN as a user of the FTS3 endpoint."

    def add_arguments(self, parser):  # type: ignore[no-untyped-def]
        parser.add_argument("dn", help="e.g. /O=srcnet-local/CN=rucio")
        parser.add_argument("username")
        parser.add_argument(
            "--submitter",
            action="store_true",
            help="also let the account submit transfers without being an operator (a service such as "
            "Rucio's conveyor)",
        )
        parser.add_argument(
            "--configurer",
            action="store_true",
            help="also let the account set link, storage and activity limits through /config without being "
            "an admin (the push scheduler's service account)",
        )

    def handle(self, *args, **options):  # type: ignore[no-untyped-def]
        if not options["dn"].startswith("/"):
            raise CommandError("A DN looks like /O=example/CN=name")
        user = get_user_model().objects.filter(username=options["username"]).first()
        if user is None:
            raise CommandError(f"no user named {options['username']!r}")
        ClientIdentity.objects.update_or_create(dn=options["dn"], defaults={"user": user})
        if options["submitter"]:
            grant_submit_transfers(user)
        if options["configurer"]:
            grant_configure_transfers(user)
        user = get_user_model().objects.get(pk=user.pk)  # permissions are cached on the instance
        may = [
            what
            for what, allowed in (
                ("submit transfers", may_submit_transfers(user)),
                ("configure links, storage and shares", may_configure_transfers(user)),
            )
            if allowed
        ]
        role = f" (may {' and '.join(may)})" if may else ""
        self.stdout.write(f"{options['dn']} -> {user.get_username()}{role}")

"""manage.py fts3_identity DN USERNAME: let a client certificate's subject act as a user on the FTS3 API;
manage.py fts3_identity --issuer URL SUBJECT USERNAME: the same for a token issuer's subject (its JWTs'
``sub``), as Rucio's conveyor presents its issuer's token."""

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from srcnet.roles import (
    grant_configure_transfers,
    grant_submit_transfers,
    may_configure_transfers,
    may_submit_transfers,
)
from transfers.models import ClientIdentity, TokenIdentity


class Command(BaseCommand):
    help = (
        "Register (or move) an X.509 subject DN, or a token issuer's subject, as a user of the FTS3 endpoint."
    )

    def add_arguments(self, parser):  # type: ignore[no-untyped-def]
        parser.add_argument(
            "dn", help="e.g. /O=srcnet-local/CN=rucio; with --issuer, the subject (sub) of its tokens"
        )
        parser.add_argument(
            "--issuer",
            default="",
            help="the token issuer (its tokens' iss, e.g. https://ska-iam.stfc.ac.uk/) whose subject DN is",
        )
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
        issuer = str(options["issuer"]).rstrip("/")
        if issuer and not issuer.startswith("https://"):
            raise CommandError("--issuer: an issuer is an https:// URL, as its tokens name it in iss")
        if not issuer and not options["dn"].startswith("/"):
            raise CommandError("A DN looks like /O=example/CN=name (a token subject needs --issuer)")
        user = get_user_model().objects.filter(username=options["username"]).first()
        if user is None:
            raise CommandError(f"no user named {options['username']!r}")
        if issuer:
            TokenIdentity.objects.update_or_create(
                issuer=issuer, subject=options["dn"], defaults={"user": user}
            )
        else:
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

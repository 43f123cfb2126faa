"""``manage.py rucio_sync``: follow Rucio's rules into the platform's replicas now (what the periodic
``replicas.follow_rucio_rules`` task does), for recent changes, everything, or named products."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone


class Command(BaseCommand):
    help = "Sync replica and product states from Rucio's rules (the platform's and scientists' own)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "products", nargs="*", metavar="SCOPE:NAME", help="products to sync whatever their rules"
        )
        scope = parser.add_mutually_exclusive_group()
        scope.add_argument("--all", action="store_true", help="every product with a rule in Rucio")
        scope.add_argument(
            "--minutes", type=float, default=60.0, help="rules changed in the last N minutes (default 60)"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        from replicas.models import DataProduct
        from replicas.rucio import RucioAdapter, RucioAdapterError

        products = []
        for did in options["products"]:
            scope, _, name = did.partition(":")
            product = DataProduct.objects.filter(scope=scope, name=name).first()
            if product is None:
                raise CommandError(f"no product {did}")
            products.append(product)
        since = None if options["all"] else timezone.now() - timedelta(minutes=options["minutes"])
        try:
            report = RucioAdapter.from_env().follow_rules(since=since, products=products)
        except RucioAdapterError as exc:
            raise CommandError(str(exc)) from exc
        for did in report.products:
            self.stdout.write(f"synced {did}")
        for error in report.errors:
            self.stderr.write(f"not synced: {error}")
        self.stdout.write(f"{len(report.products)} products, {report.replicas} replicas")
        if report.errors:
            raise CommandError(f"{len(report.errors)} products could not be synced")

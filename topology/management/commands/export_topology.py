"""manage.py export_topology: write the topology file of what the database holds."""

from django.core.management.base import BaseCommand

from topology.services.exporter import export_topology


class Command(BaseCommand):
    help = "Export the topology in the import file format to standard output."

    def handle(self, *args, **options):  # type: ignore[no-untyped-def]
        self.stdout.write(export_topology())

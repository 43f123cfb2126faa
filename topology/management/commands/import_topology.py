"""manage.py import_topology FILE: load a topology file (all or nothing)."""

import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from topology.services.importer import import_topology
from topology.yamlio import MAX_FILE_BYTES, TopologyFileError, decode

REFERENCE = Path(__file__).resolve().parents[2] / "data" / "reference.yaml"


class Command(BaseCommand):
    help = "Import a topology file; with no file, the reference SKA topology. Nothing is written on error."

    def add_arguments(self, parser):  # type: ignore[no-untyped-def]
        parser.add_argument("file", nargs="?", default=str(REFERENCE))

    def handle(self, *args, **options):  # type: ignore[no-untyped-def]
        path = Path(options["file"])
        try:
            # Never more than the limit and one byte: a huge file is refused without being read whole.
            with open(path, "rb") as fh:
                data = fh.read(MAX_FILE_BYTES + 1)
        except OSError as exc:
            raise CommandError(f"{path}: {exc.strerror}") from exc
        try:
            summary = import_topology(text=decode(data, str(path)))
        except TopologyFileError as exc:
            raise CommandError(f"{path}: {exc}") from exc
        self.stdout.write(json.dumps(summary.as_dict(), indent=2))

# Written by hand: the symbolic name is added empty, filled from each row's pair, then made unique.

import re

from django.core.validators import MinValueValidator
from django.db import migrations, models


def _slug(element: str) -> str:
    # Frozen copy of transfers.storage_urls.default_symbolicname's spelling (a migration must not change).
    return re.sub(r"[^A-Za-z0-9.*_]+", "-", element).strip("-") or "-"


def name_existing_links(apps, schema_editor):  # type: ignore[no-untyped-def]
    LinkLimit = apps.get_model("transfers", "LinkLimit")
    for row in LinkLimit.objects.all():
        row.symbolicname = f"{_slug(row.source_se)}--{_slug(row.dest_se)}"
        row.save(update_fields=["symbolicname"])


class Migration(migrations.Migration):
    dependencies = [
        ("transfers", "0007_attempt_heartbeat_dest_dirty"),
    ]

    operations = [
        migrations.AddField(
            model_name="linklimit",
            name="symbolicname",
            field=models.CharField(blank=True, default="", max_length=255),
            preserve_default=False,
        ),
        migrations.RunPython(name_existing_links, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="linklimit",
            name="symbolicname",
            field=models.CharField(blank=True, max_length=255, unique=True),
        ),
        migrations.AlterModelOptions(
            name="linklimit",
            options={
                "ordering": ["source_se", "dest_se"],
                "permissions": [
                    (
                        "configure_transfers",
                        "Can set link, storage and activity limits through FTS3's /config API",
                    )
                ],
            },
        ),
        migrations.AlterField(
            model_name="storageelementlimit",
            name="inbound_max_active",
            field=models.PositiveIntegerField(blank=True, null=True, validators=[MinValueValidator(1)]),
        ),
        migrations.AlterField(
            model_name="storageelementlimit",
            name="outbound_max_active",
            field=models.PositiveIntegerField(blank=True, null=True, validators=[MinValueValidator(1)]),
        ),
    ]

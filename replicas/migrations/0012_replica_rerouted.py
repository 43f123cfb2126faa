"""A replica kept as the history of a re-route is flagged (``rerouted``) rather than known by the
"[re-routed]" its reason says (issue 34: no code reads a reason string to learn a replica's standing); the
rows written before the flag get it from their reason, once."""

from django.db import migrations, models


def flag_from_reasons(apps, schema_editor):  # type: ignore[no-untyped-def]
    replica = apps.get_model("replicas", "Replica")
    replica.objects.filter(state="failed", reason__contains="[re-routed]").update(rerouted=True)


class Migration(migrations.Migration):
    dependencies = [
        ("replicas", "0011_lost_and_corrupt_replicas"),
    ]

    operations = [
        migrations.AddField(
            model_name="replica",
            name="rerouted",
            field=models.BooleanField(
                default=False,
                help_text="Kept as the history of a re-route (its product went back to the SDP queue, or its "
                "pin was given up): not one of the product's current replicas",
            ),
        ),
        migrations.RunPython(flag_from_reasons, migrations.RunPython.noop),
    ]

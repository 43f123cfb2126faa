"""A copy request names its product as well as its replica, and outlives the replica: an operator's re-route
removes the replica it was copying, and the canceled job stays in the product's transfer history, found
through the request (issue 34: no code finds a product's jobs by the metadata their submitter wrote). The
rows written before get their replica's product, once."""

import django.db.models.deletion
from django.db import migrations, models

PRODUCT_HELP = (
    "The product whose copy it is: the request stays in its history whatever becomes of the replica"
)
REPLICA_HELP = (
    "The replica it makes; none once an operator re-routed the copy elsewhere (its end settles nothing)"
)


def product_from_replica(apps, schema_editor):  # type: ignore[no-untyped-def]
    request = apps.get_model("replicas", "CopyRequest")
    replica = apps.get_model("replicas", "Replica")
    request.objects.update(
        product=models.Subquery(replica.objects.filter(pk=models.OuterRef("replica")).values("product")[:1])
    )


class Migration(migrations.Migration):
    dependencies = [
        ("replicas", "0012_replica_rerouted"),
    ]

    operations = [
        migrations.AddField(
            model_name="copyrequest",
            name="product",
            field=models.ForeignKey(
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="copy_requests",
                to="replicas.dataproduct",
                help_text=PRODUCT_HELP,
            ),
        ),
        migrations.RunPython(product_from_replica, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="copyrequest",
            name="product",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.CASCADE,
                related_name="copy_requests",
                to="replicas.dataproduct",
                help_text=PRODUCT_HELP,
            ),
        ),
        migrations.AlterField(
            model_name="copyrequest",
            name="replica",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="copy_requests",
                to="replicas.replica",
                help_text=REPLICA_HELP,
            ),
        ),
    ]

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("replicas", "0006_product_metadata"),
    ]

    operations = [
        migrations.AddField(
            model_name="dataproduct",
            name="arrival_factor",
            field=models.FloatField(default=1.0),
        ),
    ]

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("schedulers", "0006_pathmeasurement_copy_dead_s"),
    ]

    operations = [
        migrations.AddField(
            model_name="pathmeasurement",
            name="planned_bps",
            field=models.FloatField(blank=True, null=True),
        ),
    ]

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("schedulers", "0005_planned_rule"),
    ]

    operations = [
        migrations.AddField(
            model_name="pathmeasurement",
            name="copy_dead_s",
            field=models.FloatField(blank=True, null=True),
        ),
    ]

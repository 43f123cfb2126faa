from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("schedulers", "0003_external_job")]

    operations = [
        migrations.AddField(
            model_name="pushcycle",
            name="duration_seconds",
            field=models.FloatField(blank=True, help_text="How long the cycle took", null=True),
        ),
    ]

# The broker's Kafka-protocol listener (issue 14), registered with its gRPC address.

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("fleet", "0002_controller_epoch_and_stopped_state"),
    ]

    operations = [
        migrations.AddField(
            model_name="brokernode",
            name="kafka_port",
            field=models.PositiveIntegerField(default=0),
        ),
    ]

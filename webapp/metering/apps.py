from django.apps import AppConfig


class MeteringConfig(AppConfig):
    name = "webapp.metering"
    label = "metering"
    default_auto_field = "django.db.models.BigAutoField"

from django.apps import AppConfig


class FleetConfig(AppConfig):
    name = "webapp.fleet"
    label = "fleet"
    default_auto_field = "django.db.models.BigAutoField"

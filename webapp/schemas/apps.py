from django.apps import AppConfig


class SchemasConfig(AppConfig):
    name = "webapp.schemas"
    label = "schemas"
    default_auto_field = "django.db.models.BigAutoField"

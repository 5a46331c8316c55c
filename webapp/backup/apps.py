from django.apps import AppConfig


class BackupConfig(AppConfig):
    name = "webapp.backup"
    label = "backup"
    default_auto_field = "django.db.models.BigAutoField"

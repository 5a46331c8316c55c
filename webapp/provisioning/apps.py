from django.apps import AppConfig


class ProvisioningConfig(AppConfig):
    name = "webapp.provisioning"
    label = "provisioning"
    default_auto_field = "django.db.models.BigAutoField"

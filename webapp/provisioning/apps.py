from django.apps import AppConfig


class ProvisioningConfig(AppConfig):
    name = "webapp.provisioning"
    label = "provisioning"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Accounts and catalog actions record their changes through webapp.common.changes,
        # which cannot import this app (it sits above them); this installs the recorder.
        from webapp.common import changes
        from webapp.provisioning.facade import record_change

        changes.install_recorder(record_change)

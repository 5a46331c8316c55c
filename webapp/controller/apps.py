from django.apps import AppConfig


class ControllerConfig(AppConfig):
    """The controller has no models; it is an app for its management commands."""

    name = "webapp.controller"
    label = "controller"
    default_auto_field = "django.db.models.BigAutoField"

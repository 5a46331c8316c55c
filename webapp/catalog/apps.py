from django.apps import AppConfig


class CatalogConfig(AppConfig):
    name = "webapp.catalog"
    label = "catalog"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Accounts sits below catalog and cannot import it: catalog adds its rows and checks to
        # the tenant's sign-up and plan changes here.
        from webapp.accounts.facade import add_plan_fit_check, add_sign_up_hook
        from webapp.catalog.limits import create_quota_row, plan_fit_problems

        add_sign_up_hook(create_quota_row)
        add_plan_fit_check(plan_fit_problems)

"""Operators look at Weir's own models in the Django admin; they cannot add, change or delete them."""

from __future__ import annotations

from django.contrib import admin
from django.test import RequestFactory

from webapp.read_only_admin import ReadOnlyModelAdmin

WEIR_APP_LABELS = {"accounts", "audit", "catalog", "fleet", "metering", "provisioning"}


def test_every_weir_model_in_the_admin_is_read_only() -> None:
    registered = {model: model_admin for model, model_admin in admin.site._registry.items() if model._meta.app_label in WEIR_APP_LABELS}
    assert {model._meta.app_label for model in registered} == WEIR_APP_LABELS
    request = RequestFactory().get("/admin/")
    for model, model_admin in registered.items():
        assert isinstance(model_admin, ReadOnlyModelAdmin), model
        assert not model_admin.has_add_permission(request)
        assert not model_admin.has_change_permission(request)
        assert not model_admin.has_delete_permission(request)

"""The base of every Django admin registration: operators look, they do not edit.

Changes to tenants' data must go through the domain actions, which validate them and record
the provisioning job that pushes them to the brokers; an edit in the admin would skip both
and leave brokers out of step. So the admin is a read-only window (search, filters, detail).

It lives at the project level, not in an app, because every app's admin.py uses it: in
``dashboard`` it made each of them import the web UI app, and the UI app imports them.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest


class ReadOnlyModelAdmin(admin.ModelAdmin):
    """Lists and shows every field; adding, changing and deleting are off."""

    list_per_page = 100

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

"""Operators' read-only admin of tenants, memberships, service accounts, keys, invitations."""

from django.contrib import admin

from webapp.accounts.models import ApiKey, Invitation, Membership, ServiceAccount, Tenant
from webapp.read_only_admin import ReadOnlyModelAdmin


@admin.register(Tenant)
class TenantAdmin(ReadOnlyModelAdmin):
    list_display = ["public_id", "name", "slug", "plan", "created_at"]
    list_filter = ["plan"]
    search_fields = ["public_id", "name", "slug"]


@admin.register(Membership)
class MembershipAdmin(ReadOnlyModelAdmin):
    list_display = ["public_id", "user", "tenant", "role", "created_at"]
    list_filter = ["role"]
    list_select_related = ["user", "tenant"]
    search_fields = ["public_id", "user__username", "user__email", "tenant__public_id", "tenant__name"]


@admin.register(ServiceAccount)
class ServiceAccountAdmin(ReadOnlyModelAdmin):
    list_display = ["public_id", "name", "tenant", "role", "created_at"]
    list_select_related = ["tenant"]
    search_fields = ["public_id", "name", "tenant__public_id"]


@admin.register(ApiKey)
class ApiKeyAdmin(ReadOnlyModelAdmin):
    list_display = ["key_id", "kind", "tenant", "principal", "created_at", "last_used_at", "revoked_at"]
    list_filter = ["kind", ("revoked_at", admin.EmptyFieldListFilter)]
    list_select_related = ["tenant", "owner_service_account", "owner_membership"]
    search_fields = ["key_id", "tenant__public_id", "description"]
    # The hash is not a secret an operator needs; keep it off the page.
    exclude = ["secret_sha256"]


@admin.register(Invitation)
class InvitationAdmin(ReadOnlyModelAdmin):
    list_display = ["email", "tenant", "role", "created_at", "expires_at", "accepted_at"]
    list_select_related = ["tenant"]
    search_fields = ["email", "tenant__public_id"]
    exclude = ["token_sha256"]

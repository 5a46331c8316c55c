"""What other apps may use of accounts: tenants, users' memberships and roles, service accounts,
API keys, the actor a request acts as, and the typed errors every action raises.

Accounts is the lowest app (docs/architecture.md, "Apps and their facades"): it imports no
other app. What the apps above it add to a tenant's life (catalog's quota row at sign-up, its
checks before a plan change) they register through ``add_sign_up_hook`` and
``add_plan_fit_check``. The model classes are handed out as they are because the front doors
(REST API, dashboard) query and render them; other apps refer to them in foreign keys by name
("accounts.Tenant"), which needs no import.
"""

from __future__ import annotations

from webapp.accounts.actions.key_use import SeenApplication, do_record_cluster_key_use, do_record_key_applications
from webapp.accounts.actions.keys import check_create_key, do_create_key, do_revoke_key, owns
from webapp.accounts.actions.members import (
    check_accept_invitation,
    check_change_role,
    check_invite,
    do_accept_invitation,
    do_change_role,
    do_invite,
    do_remove_member,
)
from webapp.accounts.actions.scram_users import (
    ScramDeletion,
    ScramUpsertion,
    ScramUserResult,
    ScramUserSummary,
    do_alter_scram_users,
    do_delete_scram_user,
    scram_users,
)
from webapp.accounts.actions.service_accounts import (
    check_service_account_fields,
    do_create_service_account,
    do_delete_service_account,
    do_update_service_account,
)
from webapp.accounts.actions.signup import check_new_user, check_sign_up, create_user, do_sign_up
from webapp.accounts.actions.tenant import check_update_tenant, do_update_tenant
from webapp.accounts.authentication import CloudApiKeyAuthentication, SessionActorAuthentication
from webapp.accounts.errors import ActionError, Conflict, InvalidInput, NotAllowed, NotFound, StateConflict
from webapp.accounts.identity import SESSION_TENANT_KEY, Actor, is_operator
from webapp.accounts.key_access import KeyAccess, key_access, key_is_cluster_admin, owner_role
from webapp.accounts.models import (
    PLAN_LIMITS,
    ApiKey,
    ApiKeyApplication,
    ApiKeyKind,
    Invitation,
    Membership,
    Plan,
    PlanLimits,
    Role,
    ScramCredential,
    ScramUserCredential,
    ServiceAccount,
    Tenant,
)
from webapp.accounts.roles import acts_as_cluster_admin, require_role, role_at_least
from webapp.accounts.tenant_hooks import add_plan_fit_check, add_sign_up_hook

__all__ = [
    "ActionError",
    "Actor",
    "ApiKey",
    "ApiKeyApplication",
    "ApiKeyKind",
    "CloudApiKeyAuthentication",
    "Conflict",
    "InvalidInput",
    "Invitation",
    "KeyAccess",
    "Membership",
    "NotAllowed",
    "NotFound",
    "PLAN_LIMITS",
    "Plan",
    "PlanLimits",
    "Role",
    "SESSION_TENANT_KEY",
    "ScramCredential",
    "ScramDeletion",
    "ScramUpsertion",
    "ScramUserCredential",
    "ScramUserResult",
    "ScramUserSummary",
    "do_alter_scram_users",
    "do_delete_scram_user",
    "scram_users",
    "ServiceAccount",
    "SessionActorAuthentication",
    "StateConflict",
    "Tenant",
    "add_plan_fit_check",
    "add_sign_up_hook",
    "check_accept_invitation",
    "check_change_role",
    "check_create_key",
    "check_invite",
    "check_new_user",
    "check_service_account_fields",
    "check_sign_up",
    "check_update_tenant",
    "create_user",
    "do_accept_invitation",
    "do_change_role",
    "do_create_key",
    "do_create_service_account",
    "do_delete_service_account",
    "do_invite",
    "do_record_cluster_key_use",
    "do_record_key_applications",
    "SeenApplication",
    "do_remove_member",
    "do_revoke_key",
    "do_sign_up",
    "do_update_service_account",
    "do_update_tenant",
    "is_operator",
    "key_access",
    "key_is_cluster_admin",
    "owner_role",
    "owns",
    "acts_as_cluster_admin",
    "require_role",
    "role_at_least",
]

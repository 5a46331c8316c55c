"""Service account actions (admins): create, update, delete."""

from __future__ import annotations

from django.db import IntegrityError, transaction

from webapp.accounts.errors import Conflict, InvalidInput, NotAllowed
from webapp.accounts.identity import Actor
from webapp.accounts.models import ApiKey, ApiKeyKind, Role, ServiceAccount
from webapp.accounts.roles import require_role, role_at_least
from webapp.audit.facade import record_event
from webapp.common.changes import JobKind, RecordedChange, record_change

MAX_NAME_LENGTH = 64
MAX_DESCRIPTION_LENGTH = 256


def check_service_account_fields(actor: Actor, name: str | None, description: str | None, role: str | None) -> None:
    """Validate the given fields (None: unchanged). A service account's role is never owner
    and never above the role of the admin granting it."""
    require_role(actor, Role.ADMIN, "manage service accounts")
    errors: dict[str, object] = {}
    if name is not None and not (name.strip() and len(name) <= MAX_NAME_LENGTH):
        errors["display_name"] = [f"1 to {MAX_NAME_LENGTH} characters."]
    if description is not None and len(description) > MAX_DESCRIPTION_LENGTH:
        errors["description"] = [f"At most {MAX_DESCRIPTION_LENGTH} characters."]
    if role is not None and role not in Role.values:
        errors["role"] = [f"One of {', '.join(Role.values)}."]
    if errors:
        raise InvalidInput(errors)
    if role == Role.OWNER:
        raise InvalidInput.for_field("role", "A service account cannot be an owner.")
    if role is not None and not role_at_least(actor.role, role):
        raise NotAllowed(f"Your role ({actor.role}) may not grant {role}.")


def do_create_service_account(actor: Actor, name: str, description: str, role: str) -> ServiceAccount:
    try:
        with transaction.atomic():
            if ServiceAccount.objects.filter(tenant=actor.tenant, name=name).exists():
                raise Conflict(f"A service account named '{name}' exists.")
            account = ServiceAccount.objects.create(tenant=actor.tenant, name=name, description=description, role=role)
            record_event(actor, "service_account.create", account.public_id, {"name": name, "description": description, "role": role})
            return account
    except IntegrityError as error:
        raise Conflict(f"A service account named '{name}' exists.") from error


def do_update_service_account(actor: Actor, account: ServiceAccount, name: str | None, description: str | None, role: str | None) -> ServiceAccount:
    try:
        with transaction.atomic():
            locked = ServiceAccount.objects.select_for_update().get(pk=account.pk, tenant=actor.tenant)
            if name is not None and name != locked.name:
                if ServiceAccount.objects.filter(tenant=actor.tenant, name=name).exists():
                    raise Conflict(f"A service account named '{name}' exists.")
                locked.name = name
            if description is not None:
                locked.description = description
            if role is not None:
                locked.role = role
            locked.save(update_fields=["name", "description", "role"])
            changed = {"name": name, "description": description, "role": role}
            record_event(actor, "service_account.update", locked.public_id, {field: value for field, value in changed.items() if value is not None})
            return locked
    except IntegrityError as error:
        raise Conflict(f"A service account named '{name}' exists.") from error


def do_delete_service_account(actor: Actor, account: ServiceAccount, request_id: str = "") -> RecordedChange | None:
    """Delete the account and its keys; SYNC_SECURITY when brokers knew one of its keys."""
    require_role(actor, Role.ADMIN, "manage service accounts")
    with transaction.atomic():
        had_cluster_keys = ApiKey.objects.filter(owner_service_account=account, kind=ApiKeyKind.CLUSTER, revoked_at__isnull=True).exists()
        public_id = account.public_id
        record_event(actor, "service_account.delete", public_id, {"name": account.name})
        ServiceAccount.objects.filter(pk=account.pk, tenant=actor.tenant).delete()
        if had_cluster_keys:
            return record_change(actor.tenant, JobKind.SYNC_SECURITY, public_id, created_by=actor.user, request_id=request_id)
    return None

"""API key actions: create (the secret is returned once), revoke.

Developers create and revoke keys they own themselves; admins any key of the tenant.
Cluster keys are credentials the brokers hold, so creating or revoking one records a
SYNC_SECURITY job; cloud keys are checked by the control plane alone. A new cluster key also
gets SASL/SCRAM credentials for Kafka clients (``webapp.accounts.scram``), derived here because
the secret exists only now.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass

from django.db import transaction
from django.utils import timezone

from webapp.accounts.api_keys import hash_secret, new_key_pair
from webapp.accounts.errors import InvalidInput, NotAllowed, NotFound, StateConflict
from webapp.accounts.identity import Actor
from webapp.accounts.models import ApiKey, ApiKeyKind, Membership, Role, ScramCredential, ServiceAccount
from webapp.accounts.roles import require_role, role_at_least
from webapp.accounts.scram import new_scram_credentials
from webapp.audit.facade import record_event
from webapp.common.changes import JobKind, RecordedChange, record_change

MAX_DESCRIPTION_LENGTH = 256


@dataclass(frozen=True)
class KeyOwner:
    service_account: ServiceAccount | None = None
    membership: Membership | None = None


@dataclass(frozen=True)
class NewApiKey:
    key: ApiKey
    secret: str  # shown once; only its hash is stored
    job: RecordedChange | None


def owns(actor: Actor, key: ApiKey) -> bool:
    """Whether ``key`` belongs to the caller itself (its membership or its service account)."""
    if actor.membership is not None:
        return key.owner_membership_id == actor.membership.pk
    return actor.service_account is not None and key.owner_service_account_id == actor.service_account.pk


def check_create_key(actor: Actor, kind: str, owner_id: str | None, description: str) -> KeyOwner:
    """Resolve the owner (``sa-...``, ``u-...``, or None for the caller itself) within the
    tenant and authorize: a key for anyone else needs admin."""
    require_role(actor, Role.DEVELOPER, "create API keys")
    errors: dict[str, object] = {}
    if kind not in ApiKeyKind.values:
        errors["kind"] = [f"One of {', '.join(ApiKeyKind.values)}."]
    if len(description) > MAX_DESCRIPTION_LENGTH:
        errors["description"] = [f"At most {MAX_DESCRIPTION_LENGTH} characters."]
    if errors:
        raise InvalidInput(errors)
    if owner_id is None:
        return KeyOwner(service_account=actor.service_account, membership=actor.membership)
    owner = _resolve_owner(actor, owner_id)
    is_self = owner.membership == actor.membership if owner.membership else owner.service_account == actor.service_account
    if not is_self and not role_at_least(actor.role, Role.ADMIN):
        raise NotAllowed(f"Your role ({actor.role}) may create keys only for yourself; keys for others need admin.")
    return owner


def _resolve_owner(actor: Actor, owner_id: str) -> KeyOwner:
    if owner_id.startswith("sa-"):
        account = ServiceAccount.objects.filter(tenant=actor.tenant, public_id=owner_id).first()
        if account is not None:
            return KeyOwner(service_account=account)
    elif owner_id.startswith("u-"):
        membership = Membership.objects.select_related("user").filter(tenant=actor.tenant, public_id=owner_id).first()
        if membership is not None:
            return KeyOwner(membership=membership)
    raise StateConflict.for_field("owner", f"No service account or member '{owner_id}' in this tenant.")


def do_create_key(actor: Actor, kind: str, owner: KeyOwner, description: str, request_id: str = "") -> NewApiKey:
    key_id, secret = new_key_pair(kind)
    with transaction.atomic():
        key = ApiKey.objects.create(
            tenant=actor.tenant,
            kind=kind,
            key_id=key_id,
            secret_sha256=hash_secret(secret),
            owner_service_account=owner.service_account,
            owner_membership=owner.membership,
            description=description,
            created_by=actor.user,
        )
        owner_principal = (owner.service_account or owner.membership).principal  # type: ignore[union-attr]
        record_event(actor, "api_key.create", key_id, {"kind": kind, "owner": owner_principal, "description": description})
        job = None
        if kind == ApiKeyKind.CLUSTER:
            _store_scram_credentials(key, secret)
            job = record_change(actor.tenant, JobKind.SYNC_SECURITY, key_id, created_by=actor.user, request_id=request_id)
    return NewApiKey(key, secret, job)


def _store_scram_credentials(key: ApiKey, secret: str) -> None:
    """Derive and store the key's SCRAM-SHA-256 and SCRAM-SHA-512 credentials (never the salted password)."""
    ScramCredential.objects.bulk_create(
        ScramCredential(
            api_key=key,
            mechanism=credential.mechanism,
            salt=_base64(credential.salt),
            iterations=credential.iterations,
            stored_key=_base64(credential.stored_key),
            server_key=_base64(credential.server_key),
        )
        for credential in new_scram_credentials(secret)
    )


def _base64(value: bytes) -> str:
    return base64.b64encode(value).decode("ascii")


def do_revoke_key(actor: Actor, key: ApiKey, request_id: str = "") -> tuple[ApiKey, RecordedChange | None]:
    """Revoke (idempotently); a cluster key's revocation reaches brokers with SYNC_SECURITY."""
    require_role(actor, Role.DEVELOPER, "revoke API keys")
    if not owns(actor, key) and not role_at_least(actor.role, Role.ADMIN):
        raise NotAllowed(f"Your role ({actor.role}) may revoke only your own keys.")
    with transaction.atomic():
        locked = ApiKey.objects.select_for_update().filter(pk=key.pk, tenant=actor.tenant).first()
        if locked is None:
            raise NotFound("No such API key.")
        if locked.revoked_at is not None:
            return locked, None
        locked.revoked_at = timezone.now()
        locked.save(update_fields=["revoked_at"])
        record_event(actor, "api_key.revoke", locked.key_id, {"kind": locked.kind, "owner": locked.principal})
        job = None
        if locked.kind == ApiKeyKind.CLUSTER:
            job = record_change(actor.tenant, JobKind.SYNC_SECURITY, locked.key_id, created_by=actor.user, request_id=request_id)
    return locked, job

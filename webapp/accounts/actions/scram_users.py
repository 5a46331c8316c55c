"""A tenant's SCRAM users: Kafka's AlterUserScramCredentials (KIP-554) applied to the catalog, and
the REST listing and deletion of the same users.

A SCRAM user is a name a tenant's admin chooses, with a credential per mechanism
(``ScramUserCredential``); Kafka clients log in as ``<name>@<tenant id>``
(``weir.admin_scram.scram_login_name``) and act as principal ``User:<name>`` in that tenant, where
its ACLs decide. Names live in their tenant: two tenants may each have an ``alice``, and neither
sees nor touches the other's.

:func:`do_alter_scram_users` follows Kafka's controller (``ScramControlManager``) and its codes,
one result per user, in order of first mention; a user's alterations apply together or not at all:

- an empty user name, too few (< 4096) or too many (> 16384) iterations, an empty salt, a salted
  password whose length is not the mechanism's hash size: UNACCEPTABLE_CREDENTIAL;
- a mechanism other than SCRAM-SHA-256 / SCRAM-SHA-512: UNSUPPORTED_SASL_MECHANISM;
- the same user and mechanism twice in one request: DUPLICATE_RESOURCE;
- deleting a credential the user does not have: RESOURCE_NOT_FOUND.

Weir refuses, also UNACCEPTABLE_CREDENTIAL, names that would be someone else: the forms of the
identities it generates (``sa-...`` service accounts and ``u-...`` members, whose principals a
SCRAM user would otherwise share, and API key ids, which describe lists beside the users), names
longer than ``MAX_SCRAM_USER_NAME_CHARS``, and names with control characters. Each applied change
is audited and records SYNC_SECURITY (the security snapshot carries the users to the brokers).
Only StoredKey and ServerKey are kept; the salted password is used once and dropped.
"""

from __future__ import annotations

import base64
import hashlib
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from django.db import transaction

from webapp.accounts.errors import NotFound
from webapp.accounts.identity import Actor
from webapp.accounts.models import MAX_SCRAM_USER_NAME_CHARS, ApiKey, Role, ScramUserCredential, Tenant
from webapp.accounts.roles import require_role
from webapp.accounts.scram import credential_from_salted_password
from webapp.audit.facade import record_event, record_tenant_event
from webapp.common.changes import JobKind, record_change
from weir.admin_scram import MAX_SCRAM_ITERATIONS, MIN_SCRAM_ITERATIONS, SCRAM_HASHES, scram_login_name
from weir.errors import ErrorCode

logger = logging.getLogger(__name__)

# Names Weir generates for its own identities (webapp.public_ids): a SCRAM user may not take one.
_GENERATED_IDENTITY = re.compile(r"(sa|u)-[a-z0-9]{10}|[A-Z0-9]{16}")


@dataclass(frozen=True)
class ScramDeletion:
    user: str
    mechanism: str


@dataclass(frozen=True)
class ScramUpsertion:
    user: str
    mechanism: str
    iterations: int
    salt: bytes
    salted_password: bytes = field(repr=False)


@dataclass(frozen=True)
class ScramUserResult:
    """One user's outcome: code 0, or Kafka's error code and why."""

    user: str
    error_code: int = 0
    error_message: str = ""


@dataclass(frozen=True)
class ScramUserSummary:
    """A SCRAM user as REST lists it: never a salt or a key."""

    name: str
    login_name: str
    mechanisms: list[tuple[str, int]]  # (mechanism, iterations), by mechanism
    updated_at: datetime


class _Refused(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def scram_user_name_problem(tenant: Tenant, name: str) -> str | None:
    """Why ``name`` cannot be a SCRAM user of ``tenant``, or None."""
    if not name:
        return "the user name must not be empty"
    if len(name) > MAX_SCRAM_USER_NAME_CHARS:
        return f"the user name must be at most {MAX_SCRAM_USER_NAME_CHARS} characters"
    if not name.isprintable() or name.strip() != name:
        return "the user name must be printable, without control characters or surrounding spaces"
    if _GENERATED_IDENTITY.fullmatch(name) or ApiKey.objects.filter(tenant=tenant, key_id=name).exists():
        return f"{name!r} has the form of a service account, member or API key id, which Weir reserves for its own identities"
    return None


def _check_alteration(tenant: Tenant, user: str, mechanism: str, upsertion: ScramUpsertion | None) -> None:
    problem = scram_user_name_problem(tenant, user)
    if problem is not None:
        raise _Refused(ErrorCode.UNACCEPTABLE_CREDENTIAL, problem)
    if mechanism not in SCRAM_HASHES:
        raise _Refused(ErrorCode.UNSUPPORTED_SASL_MECHANISM, f"unknown SCRAM mechanism {mechanism!r}: one of {', '.join(SCRAM_HASHES)}")
    if upsertion is None:
        return
    if upsertion.iterations < MIN_SCRAM_ITERATIONS:
        raise _Refused(ErrorCode.UNACCEPTABLE_CREDENTIAL, f"too few iterations ({upsertion.iterations}): at least {MIN_SCRAM_ITERATIONS}")
    if upsertion.iterations > MAX_SCRAM_ITERATIONS:
        raise _Refused(ErrorCode.UNACCEPTABLE_CREDENTIAL, f"too many iterations ({upsertion.iterations}): at most {MAX_SCRAM_ITERATIONS}")
    if not upsertion.salt:
        raise _Refused(ErrorCode.UNACCEPTABLE_CREDENTIAL, "the salt must not be empty")
    size = hashlib.new(SCRAM_HASHES[mechanism]).digest_size
    if len(upsertion.salted_password) != size:
        raise _Refused(ErrorCode.UNACCEPTABLE_CREDENTIAL, f"a {mechanism} salted password is {size} bytes, not {len(upsertion.salted_password)}")


def _text(value: bytes) -> str:
    return base64.b64encode(value).decode("ascii")


def _apply_user(tenant: Tenant, user: str, deletions: list[ScramDeletion], upsertions: list[ScramUpsertion], principal: str) -> None:
    """Check and apply one user's alterations in one transaction (all or none); raise _Refused."""
    seen: set[str] = set()
    for mechanism, upsertion in [*((item.mechanism, None) for item in deletions), *((item.mechanism, item) for item in upsertions)]:
        _check_alteration(tenant, user, mechanism, upsertion)
        if mechanism in seen:
            raise _Refused(ErrorCode.DUPLICATE_RESOURCE, f"user {user!r} has {mechanism} altered more than once in this request")
        seen.add(mechanism)
    with transaction.atomic():
        rows = ScramUserCredential.objects.select_for_update().filter(tenant=tenant, user_name=user)
        existing = {row.mechanism: row for row in rows}
        for deletion in deletions:
            if deletion.mechanism not in existing:
                raise _Refused(ErrorCode.RESOURCE_NOT_FOUND, f"user {user!r} has no {deletion.mechanism} credential to delete")
            existing[deletion.mechanism].delete()
        for upsertion in upsertions:
            derived = credential_from_salted_password(upsertion.mechanism, upsertion.salt, upsertion.iterations, upsertion.salted_password)
            ScramUserCredential.objects.update_or_create(
                tenant=tenant,
                user_name=user,
                mechanism=upsertion.mechanism,
                defaults={
                    "salt": _text(derived.salt),
                    "iterations": derived.iterations,
                    "stored_key": _text(derived.stored_key),
                    "server_key": _text(derived.server_key),
                },
            )
        summary = {"deleted": sorted(item.mechanism for item in deletions), "upserted": sorted(item.mechanism for item in upsertions)}
        record_tenant_event(tenant, "scram_user.alter", user, summary, principal=principal)
        record_change(tenant, JobKind.SYNC_SECURITY, f"SCRAM user {user}")


def do_alter_scram_users(
    tenant: Tenant, deletions: Sequence[ScramDeletion], upsertions: Sequence[ScramUpsertion], *, principal: str
) -> tuple[list[ScramUserResult], bool]:
    """Apply Kafka's AlterUserScramCredentials for ``tenant`` (see the module docstring); the
    results (one per user, order of first mention) and whether anything changed. ``principal``
    is who asked, for the audit log. The caller checked that it may (ALTER on the cluster)."""
    users = list(dict.fromkeys([*(item.user for item in deletions), *(item.user for item in upsertions)]))
    results = []
    changed = False
    for user in users:
        try:
            _apply_user(tenant, user, [item for item in deletions if item.user == user], [item for item in upsertions if item.user == user], principal)
        except _Refused as refused:
            results.append(ScramUserResult(user, refused.code, refused.message))
            continue
        changed = True
        results.append(ScramUserResult(user))
    altered = sum(not result.error_code for result in results)
    logger.info("AlterUserScramCredentials from %s of tenant %s: %d of %d user(s) altered", principal, tenant.public_id, altered, len(users))
    return results, changed


def scram_users(tenant: Tenant) -> list[ScramUserSummary]:
    """The tenant's SCRAM users by name, with their mechanisms and iteration counts (one query)."""
    rows: dict[str, list[ScramUserCredential]] = {}
    for row in ScramUserCredential.objects.filter(tenant=tenant).order_by("user_name", "mechanism"):
        rows.setdefault(row.user_name, []).append(row)
    return [
        ScramUserSummary(
            name,
            scram_login_name(name, tenant.public_id),
            [(row.mechanism, row.iterations) for row in credentials],
            max(row.updated_at for row in credentials),
        )
        for name, credentials in rows.items()
    ]


def do_delete_scram_user(actor: Actor, name: str, request_id: str = "") -> None:
    """Delete every credential of the tenant's SCRAM user ``name`` (admins): its connections are
    refused at their next request once the brokers have the snapshot. NotFound when it has none."""
    require_role(actor, Role.ADMIN, "manage SCRAM users")
    with transaction.atomic():
        deleted, _ = ScramUserCredential.objects.filter(tenant=actor.tenant, user_name=name).delete()
        if not deleted:
            raise NotFound(f"No SCRAM user {name!r}.")
        record_event(actor, "scram_user.delete", name, {})
        record_change(actor.tenant, JobKind.SYNC_SECURITY, f"SCRAM user {name}", created_by=actor.user, request_id=request_id)

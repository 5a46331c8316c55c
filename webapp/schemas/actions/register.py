"""Registering a schema under a subject, and checking one against a subject's versions.

``check_register`` validates (role, subject name, mode, schema, references, compatibility) and
``do_register`` writes; both run in one transaction holding the tenant's ``Registry`` row lock, so
concurrent registrations of one schema see each other and share one id. The unique constraints on
(tenant, id), (tenant, fingerprint) and (tenant, subject, version) back the lock up.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, transaction

from webapp.accounts.facade import Actor, Role, Tenant
from webapp.audit.facade import record_event
from webapp.schemas import compatibility, schema_types
from webapp.schemas.candidates import Candidate, check_candidate, live_versions, parsed_version
from webapp.schemas.errors import BadRequest, IdDoesNotMatch, IncompatibleSchema, OperationNotPermitted
from webapp.schemas.limits import check_subject_name, check_version_room
from webapp.schemas.models import Registry, Schema, SchemaReference, SubjectVersion
from webapp.schemas.permissions import require
from webapp.schemas.queries import effective_settings, get_version, subject_versions


@dataclass(frozen=True)
class Registration:
    schema_id: int
    version: int
    created: bool


@dataclass(frozen=True)
class ValidRegistration:
    subject: str
    candidate: Candidate
    requested_id: int | None
    requested_version: int | None
    existing: Schema | None
    live_row: SubjectVersion | None


def register(actor: Actor, subject: str, body: dict[str, Any]) -> Registration:
    """Register (or find) the body's schema under ``subject``: Confluent's POST /subjects/{s}/versions."""
    require(actor, Role.DEVELOPER, "register schemas")
    check_subject_name(subject)
    with transaction.atomic():
        registry = lock_registry(actor.tenant)
        valid = check_register(actor.tenant, subject, body)
        if valid.live_row is not None:
            return Registration(valid.live_row.schema.schema_id, valid.live_row.version, created=False)
        try:
            with transaction.atomic():
                registration = do_register(registry, valid)
        except IntegrityError:
            # The registry lock serialises registrations; a clash left is an imported id or version
            # that another row already holds.
            raise OperationNotPermitted(f"Subject '{subject}': the id or version to import is already taken.") from None
        summary = {"id": registration.schema_id, "version": registration.version, "schema_type": valid.candidate.schema_type}
        record_event(actor, "schema.register", subject, summary)
        return registration


def lock_registry(tenant: Tenant) -> Registry:
    """The tenant's registry row, created on first use, locked until the transaction ends."""
    registry, _ = Registry.objects.get_or_create(tenant=tenant)
    return Registry.objects.select_for_update().get(pk=registry.pk)


def check_register(tenant: Tenant, subject: str, body: dict[str, Any]) -> ValidRegistration:
    requested_id = _optional_positive(body, "id")
    requested_version = _optional_positive(body, "version")
    settings = effective_settings(tenant, subject)
    mode = settings.mode
    if mode == compatibility.READONLY:
        raise OperationNotPermitted(f"Subject '{subject}' is in read-only mode.")
    if requested_id is not None and mode != compatibility.IMPORT:
        raise OperationNotPermitted(f"Subject '{subject}' is not in import mode: a schema id may be given only in IMPORT mode.")
    if requested_id is None and mode == compatibility.IMPORT:
        raise OperationNotPermitted(f"Subject '{subject}' is in import mode: a registration must give the schema's id.")
    candidate = check_candidate(tenant, body)
    existing = Schema.objects.filter(tenant=tenant, fingerprint=candidate.fingerprint).first()
    if existing is not None and requested_id is not None and existing.schema_id != requested_id:
        raise IdDoesNotMatch(f"Schema already registered with id {existing.schema_id} instead of input id {requested_id}.")
    if existing is None and requested_id is not None and Schema.objects.filter(tenant=tenant, schema_id=requested_id).exists():
        raise OperationNotPermitted(f"Overwrite new schema with id {requested_id} is not permitted.")
    live_row = None
    if existing is not None:
        live_row = subject_versions(tenant, subject).filter(schema=existing).select_related("schema").first()
    if live_row is None:
        check_version_room(subject, subject_versions(tenant, subject, deleted=True).count())
        if mode != compatibility.IMPORT:
            reasons = incompatibilities(tenant, subject, candidate, settings.compatibility)
            if reasons:
                raise IncompatibleSchema(reasons)
    return ValidRegistration(subject, candidate, requested_id, requested_version, existing, live_row)


def do_register(registry: Registry, valid: ValidRegistration) -> Registration:
    """Write the schema (when new) and the subject's next version. Needs ``registry`` locked."""
    tenant_id = registry.tenant_id
    schema = valid.existing
    if schema is None:
        schema_id = valid.requested_id if valid.requested_id is not None else registry.next_schema_id
        registry.next_schema_id = max(registry.next_schema_id, schema_id + 1)
        registry.save(update_fields=["next_schema_id"])
        candidate = valid.candidate
        schema = Schema.objects.create(
            tenant_id=tenant_id, schema_id=schema_id, schema_type=candidate.schema_type, text=candidate.text, fingerprint=candidate.fingerprint
        )
        SchemaReference.objects.bulk_create(
            SchemaReference(schema=schema, position=position, name=ref.name, subject=ref.subject, version=ref.version)
            for position, ref in enumerate(candidate.references)
        )
    version = valid.requested_version
    if version is None:
        last = SubjectVersion.objects.filter(tenant_id=tenant_id, subject=valid.subject).order_by("-version").first()
        version = last.version + 1 if last is not None else 1
    SubjectVersion.objects.create(tenant_id=tenant_id, subject=valid.subject, version=version, schema=schema)
    return Registration(schema.schema_id, version, created=True)


def incompatibilities(tenant: Tenant, subject: str, candidate: Candidate, level: str, version: int | None = None) -> list[str]:
    """Why the candidate breaks ``level`` against the subject's live versions (or one ``version``)."""
    if level == compatibility.NONE:
        return []
    rows = [get_version(tenant, subject, version)] if version is not None else live_versions(tenant, subject)
    checked = rows if version is not None else compatibility.versions_to_check(level, rows)
    reasons = [
        f"version {row.version}: the schema type changed from {row.schema.schema_type} to {candidate.schema_type}"
        for row in checked
        if row.schema.schema_type != candidate.schema_type
    ]
    if reasons:
        return reasons
    earlier = [parsed_version(row) for row in checked]
    return compatibility.incompatibilities(schema_types.format_for(candidate.schema_type), level, candidate.parsed, earlier)


def _optional_positive(body: dict[str, Any], field: str) -> int | None:
    value = body.get(field)
    if value is None or value == -1:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 2**31 - 1:
        raise BadRequest(f"'{field}' must be a positive integer.")
    return value

"""Deleting subjects and versions with Confluent's two steps: a soft delete hides a version (its id
still resolves, so records written with it stay readable); a permanent delete (``permanent=true``)
removes a version that was soft-deleted first. A version another live schema references cannot
be deleted (42206). A schema no version points at any more is removed with its references."""

from __future__ import annotations

from django.db import transaction

from webapp.accounts.facade import Actor, Role, Tenant
from webapp.audit.facade import record_event
from webapp.schemas import compatibility
from webapp.schemas.errors import (
    OperationNotPermitted,
    ReferenceExists,
    SubjectNotFound,
    SubjectNotSoftDeleted,
    SubjectSoftDeleted,
    VersionNotSoftDeleted,
    VersionSoftDeleted,
)
from webapp.schemas.models import Schema, SubjectSetting, SubjectVersion
from webapp.schemas.permissions import require
from webapp.schemas.queries import effective_settings, get_version, subject_versions
from webapp.schemas.references import LATEST


def delete_subject(actor: Actor, subject: str, *, permanent: bool) -> list[int]:
    """The versions deleted. Soft: every live one (40404 when all were soft-deleted already).
    Permanent: every version, once none is live (40405 otherwise)."""
    require(actor, Role.DEVELOPER, "delete schemas")
    tenant = actor.tenant
    with transaction.atomic():
        check_writable(tenant, subject)
        rows = list(subject_versions(tenant, subject, deleted=True).select_for_update().order_by("version"))
        if not rows:
            raise SubjectNotFound(subject)
        live = [row for row in rows if not row.deleted]
        if permanent:
            if live:
                raise SubjectNotSoftDeleted(subject)
            do_hard_delete(tenant, rows)
            SubjectSetting.objects.filter(tenant=tenant, subject=subject).delete()
            record_event(actor, "schema.delete_subject", subject, {"versions": [row.version for row in rows], "permanent": True})
            return [row.version for row in rows]
        if not live:
            raise SubjectSoftDeleted(subject)
        check_not_referenced(tenant, live)
        SubjectVersion.objects.filter(pk__in=[row.pk for row in live]).update(deleted=True)
        record_event(actor, "schema.delete_subject", subject, {"versions": [row.version for row in live], "permanent": False})
        return [row.version for row in live]


def delete_version(actor: Actor, subject: str, version: int, *, permanent: bool) -> int:
    """The version deleted (``version`` may be LATEST: the highest live one)."""
    require(actor, Role.DEVELOPER, "delete schemas")
    tenant = actor.tenant
    with transaction.atomic():
        check_writable(tenant, subject)
        # "latest" in a soft delete is the highest live version; a number finds soft-deleted ones too,
        # so that deleting one twice answers 40406 rather than "not found".
        row = get_version(tenant, subject, version, deleted=permanent or version != LATEST)
        row = SubjectVersion.objects.select_for_update().get(pk=row.pk)
        if permanent:
            if not row.deleted:
                raise VersionNotSoftDeleted(subject, row.version)
            do_hard_delete(tenant, [row])
            record_event(actor, "schema.delete_version", subject, {"version": row.version, "permanent": True})
            return row.version
        if row.deleted:
            raise VersionSoftDeleted(subject, row.version)
        check_not_referenced(tenant, [row])
        SubjectVersion.objects.filter(pk=row.pk).update(deleted=True)
        record_event(actor, "schema.delete_version", subject, {"version": row.version, "permanent": False})
        return row.version


def check_writable(tenant: Tenant, subject: str) -> None:
    if effective_settings(tenant, subject).mode == compatibility.READONLY:
        raise OperationNotPermitted(f"Subject '{subject}' is in read-only mode.")


def check_not_referenced(tenant: Tenant, rows: list[SubjectVersion]) -> None:
    """ReferenceExists (42206) when a live version outside ``rows`` uses a schema that references one of them."""
    deleting = [row.pk for row in rows]
    for row in rows:
        referencing = SubjectVersion.objects.filter(
            tenant=tenant, deleted=False, schema__references__subject=row.subject, schema__references__version=row.version
        ).exclude(pk__in=deleting)
        if referencing.exists():
            raise ReferenceExists(f"One or more references exist to the schema {{subject={row.subject}, version={row.version}}}.")


def do_hard_delete(tenant: Tenant, rows: list[SubjectVersion]) -> None:
    """Remove soft-deleted versions, and the schemas no version points at any more."""
    schema_pks = {row.schema_id for row in rows}
    SubjectVersion.objects.filter(pk__in=[row.pk for row in rows]).delete()
    Schema.objects.filter(tenant=tenant, pk__in=schema_pks, versions__isnull=True).delete()

"""Reads of a tenant's registry. Every function takes the tenant first and sees only its rows:
another tenant's subject, version or id is "not found", never named."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import QuerySet

from webapp.accounts.facade import Tenant
from webapp.schemas.compatibility import DEFAULT_LEVEL, DEFAULT_MODE
from webapp.schemas.errors import (
    InvalidSchemaError,
    InvalidVersion,
    SchemaNotFound,
    SubjectCompatibilityNotConfigured,
    SubjectModeNotConfigured,
    SubjectNotFound,
    VersionNotFound,
)
from webapp.schemas.models import Registry, Schema, SchemaReference, SubjectSetting, SubjectVersion
from webapp.schemas.references import LATEST, Lookup, Reference, ReferencedText

MAX_VERSION = 2**31 - 1


def parse_version(text: str) -> int:
    """A version from a path: 1..2^31-1, or LATEST for "latest" and -1; InvalidVersion (42202) otherwise."""
    if text == "latest" or text == "-1":
        return LATEST
    if text.isascii() and text.isdigit() and 1 <= int(text) <= MAX_VERSION:
        return int(text)
    raise InvalidVersion(text)


def subject_versions(tenant: Tenant, subject: str, *, deleted: bool = False) -> QuerySet[SubjectVersion]:
    rows = SubjectVersion.objects.filter(tenant=tenant, subject=subject)
    return rows if deleted else rows.filter(deleted=False)


def list_subjects(tenant: Tenant, *, deleted: bool = False, prefix: str = "") -> list[str]:
    rows = SubjectVersion.objects.filter(tenant=tenant)
    if not deleted:
        rows = rows.filter(deleted=False)
    if prefix:
        rows = rows.filter(subject__startswith=prefix)
    return list(rows.order_by("subject").values_list("subject", flat=True).distinct())


def list_versions(tenant: Tenant, subject: str, *, deleted: bool = False) -> list[int]:
    versions = list(subject_versions(tenant, subject, deleted=deleted).order_by("version").values_list("version", flat=True))
    if not versions:
        raise SubjectNotFound(subject)
    return versions


def get_version(tenant: Tenant, subject: str, version: int, *, deleted: bool = False) -> SubjectVersion:
    """A subject's version (LATEST: the highest live one); 40401 / 40402 when there is none."""
    rows = subject_versions(tenant, subject, deleted=deleted).select_related("schema")
    if version == LATEST:
        row = rows.order_by("-version").first()
    else:
        row = rows.filter(version=version).first()
    if row is not None:
        return row
    # A subject whose versions are all soft-deleted does not exist unless deleted ones are asked for.
    if not rows.exists():
        raise SubjectNotFound(subject)
    raise VersionNotFound(subject, "latest" if version == LATEST else version)


def get_schema(tenant: Tenant, schema_id: int) -> Schema:
    schema = Schema.objects.filter(tenant=tenant, schema_id=schema_id).first()
    if schema is None:
        raise SchemaNotFound(f"Schema {schema_id} not found.")
    return schema


def references_of(schema: Schema) -> list[Reference]:
    return [Reference(row.name, row.subject, row.version) for row in schema.references.all()]


def schema_versions(tenant: Tenant, schema_id: int, *, deleted: bool = False, subject: str | None = None) -> list[tuple[str, int]]:
    """Every (subject, version) the id is registered as; 40403 for an id this tenant does not have."""
    schema = get_schema(tenant, schema_id)
    rows = schema.versions.all() if deleted else schema.versions.filter(deleted=False)
    if subject:
        rows = rows.filter(subject=subject)
    return list(rows.order_by("subject", "version").values_list("subject", "version"))


def referenced_by(tenant: Tenant, subject: str, version: int) -> list[int]:
    """Ids of the tenant's schemas that reference the subject's version, live in some subject."""
    row = get_version(tenant, subject, version)
    ids = SchemaReference.objects.filter(schema__tenant=tenant, subject=subject, version=row.version, schema__versions__deleted=False).values_list(
        "schema__schema_id", flat=True
    )
    return sorted(set(ids))


def reference_lookup(tenant: Tenant) -> Lookup:
    """The ``Lookup`` references resolve with: live versions of this tenant only."""

    def lookup(subject: str, version: int) -> ReferencedText:
        try:
            row = get_version(tenant, subject, version)
        except (SubjectNotFound, VersionNotFound):
            shown = "latest" if version == LATEST else version
            raise InvalidSchemaError(f"Invalid schema: the reference to subject '{subject}' version {shown} does not exist.") from None
        return ReferencedText(version=row.version, text=row.schema.text, references=references_of(row.schema))

    return lookup


@dataclass(frozen=True)
class Settings:
    compatibility: str
    mode: str


def registry_row(tenant: Tenant) -> Registry | None:
    return Registry.objects.filter(tenant=tenant).first()


def subject_setting(tenant: Tenant, subject: str) -> SubjectSetting | None:
    return SubjectSetting.objects.filter(tenant=tenant, subject=subject).first()


def effective_settings(tenant: Tenant, subject: str | None) -> Settings:
    """The level and mode that apply: the subject's own, else the registry's, else the defaults."""
    registry = registry_row(tenant)
    compatibility = (registry.compatibility if registry else None) or DEFAULT_LEVEL
    mode = (registry.mode if registry else None) or DEFAULT_MODE
    setting = subject_setting(tenant, subject) if subject else None
    if setting is not None:
        compatibility = setting.compatibility or compatibility
        mode = setting.mode or mode
    return Settings(compatibility=compatibility, mode=mode)


def subject_compatibility(tenant: Tenant, subject: str, *, default_to_global: bool) -> str:
    setting = subject_setting(tenant, subject)
    if setting is not None and setting.compatibility:
        return setting.compatibility
    if default_to_global:
        return effective_settings(tenant, None).compatibility
    raise SubjectCompatibilityNotConfigured(subject)


def subject_mode(tenant: Tenant, subject: str, *, default_to_global: bool) -> str:
    setting = subject_setting(tenant, subject)
    if setting is not None and setting.mode:
        return setting.mode
    if default_to_global:
        return effective_settings(tenant, None).mode
    raise SubjectModeNotConfigured(subject)

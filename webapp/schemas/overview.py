"""What the dashboard's Schemas page shows of a tenant's registry: each subject with its latest
version, type and compatibility level (soft-deleted subjects marked), a subject's versions, and a
version's schema in a canonical pretty form that two versions can be diffed by."""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass

from webapp.accounts.facade import Tenant
from webapp.schemas.errors import SubjectNotFound
from webapp.schemas.models import SubjectSetting, SubjectVersion
from webapp.schemas.queries import effective_settings, subject_versions


@dataclass(frozen=True)
class SubjectSummary:
    subject: str
    latest_version: int
    schema_type: str
    compatibility: str
    deleted: bool


@dataclass(frozen=True)
class VersionSummary:
    version: int
    schema_id: int
    schema_type: str
    deleted: bool


def subject_summaries(tenant: Tenant) -> list[SubjectSummary]:
    """Every subject with a version, live or soft-deleted; a subject whose versions are all soft-deleted is ``deleted``."""
    latest: dict[str, SubjectVersion] = {}
    live: set[str] = set()
    for row in SubjectVersion.objects.filter(tenant=tenant).select_related("schema").order_by("subject", "version"):
        if not row.deleted:
            live.add(row.subject)
            latest[row.subject] = row
        elif row.subject not in live:
            latest[row.subject] = row
    default = effective_settings(tenant, None).compatibility
    own = dict(SubjectSetting.objects.filter(tenant=tenant, compatibility__isnull=False).values_list("subject", "compatibility"))
    return [SubjectSummary(subject, row.version, row.schema.schema_type, own.get(subject) or default, subject not in live) for subject, row in latest.items()]


def live_versions(tenant: Tenant) -> list[tuple[str, VersionSummary]]:
    """Every live version of every subject, by subject then version (one query)."""
    rows = SubjectVersion.objects.filter(tenant=tenant, deleted=False).select_related("schema").order_by("subject", "version")
    return [(row.subject, VersionSummary(row.version, row.schema.schema_id, row.schema.schema_type, False)) for row in rows]


def version_summaries(tenant: Tenant, subject: str) -> list[VersionSummary]:
    rows = list(subject_versions(tenant, subject, deleted=True).select_related("schema").order_by("version"))
    if not rows:
        raise SubjectNotFound(subject)
    return [VersionSummary(row.version, row.schema.schema_id, row.schema.schema_type, row.deleted) for row in rows]


def pretty_schema(schema_type: str, text: str) -> str:
    """The schema's text pretty-printed: JSON (Avro, JSON Schema) indented with sorted keys, Protobuf as stored."""
    if schema_type == "PROTOBUF":
        return text.strip() + "\n"
    try:
        return json.dumps(json.loads(text), indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    except ValueError:
        return text


def schema_diff(old_name: str, old: str, new_name: str, new: str) -> list[str]:
    """A unified diff of two pretty forms, one line per entry (no trailing newlines)."""
    return [line.rstrip("\n") for line in difflib.unified_diff(old.splitlines(), new.splitlines(), old_name, new_name, lineterm="")]

"""The control-plane state -> a backup document, read in one consistent transaction.

On PostgreSQL the read runs at REPEATABLE READ (one snapshot for every query), read only, so
a backup taken while the control plane serves holds every change either whole or not at all:
a change and the snapshot version it bumped commit together (``webapp.provisioning.versions``),
so the versions in the backup cover exactly its rows. SQLite transactions read one state of
the file anyway. Called inside a transaction already, the read joins it and the caller's
isolation applies.

One query per section (two more per many-to-many list), whatever the number of rows.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from django.apps import apps
from django.db import connection, transaction
from django.db.migrations.recorder import MigrationRecorder
from django.utils import timezone

from webapp.backup.schema import (
    FORMAT_NAME,
    FORMAT_VERSION,
    MIGRATED_APPS,
    PERMISSION_LIST,
    REFERENCE,
    REFERENCE_LIST,
    SECTIONS,
    SECTIONS_BY_NAME,
    Field,
    Section,
)


@contextmanager
def consistent_read() -> Iterator[None]:
    """A transaction in which every query sees the same committed state (see the module docstring)."""
    outermost = not connection.in_atomic_block
    with transaction.atomic():
        if outermost and connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        yield


def dump_control_plane(now: datetime | None = None) -> dict[str, Any]:
    """The backup document of the database's current state (see ``webapp.backup.schema``)."""
    with consistent_read():
        sections = {section.name: _dump_section(section) for section in SECTIONS}
        migrations = applied_migrations()
    return {
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        "created_at": (now or timezone.now()).isoformat(),
        "database_vendor": connection.vendor,
        "migrations": migrations,
        "sections": sections,
    }


def applied_migrations() -> list[str]:
    """``app_label.migration_name`` of every applied migration of the backed-up apps, sorted."""
    applied = MigrationRecorder(connection).applied_migrations()
    return sorted(f"{app_label}.{name}" for app_label, name in applied if app_label in MIGRATED_APPS)


def _key_path(section_name: str) -> str:
    """The ORM path from a row to the natural key of ``section_name`` (a one-field key)."""
    return SECTIONS_BY_NAME[section_name].key[0]


def _key_paths(section_name: str) -> list[str]:
    """The ORM paths from a row of ``section_name`` to its key's values, references followed to
    their targets' keys: ``["tenant__public_id", "schema_id"]`` for a schema."""
    section = SECTIONS_BY_NAME[section_name]
    paths: list[str] = []
    for name in section.key:
        member = section.field_named(name)
        if member.kind == REFERENCE:
            paths.extend(f"{name}__{path}" for path in _key_paths(member.target))
        else:
            paths.append(name)
    return paths


def _natural_key(section_name: str, values: Iterator[Any]) -> Any:
    """The document's natural key of a ``section_name`` row from the values at its
    :func:`_key_paths`: the value for a one-field key, else the list of the key's values."""
    section = SECTIONS_BY_NAME[section_name]
    parts = []
    for name in section.key:
        member = section.field_named(name)
        parts.append(_natural_key(member.target, values) if member.kind == REFERENCE else _encode(next(values)))
    return parts[0] if len(parts) == 1 else parts


def _dump_section(section: Section) -> list[dict[str, Any]]:
    model = apps.get_model(section.model)
    columns: list[tuple[Field, list[str]]] = []  # (field, its ORM paths: several for a reference to a composite key)
    lists: list[str] = []
    for member in section.fields:
        if member.kind == REFERENCE:
            columns.append((member, [f"{member.name}__{path}" for path in _key_paths(member.target)]))
        elif member.kind in (REFERENCE_LIST, PERMISSION_LIST):
            lists.append(member.name)
        else:
            columns.append((member, [member.name]))
    paths = {member.name: member_paths for member, member_paths in columns}
    ordering = [path for name in section.key for path in paths[name]] or ["pk"]
    rows = []
    for values in model.objects.order_by(*ordering).values_list(*(path for _, member_paths in columns for path in member_paths)):
        flat = iter(values)
        row: dict[str, Any] = {}
        for member, member_paths in columns:
            if member.kind != REFERENCE:
                row[member.name] = _encode(next(flat))
                continue
            taken = [next(flat) for _ in member_paths]
            row[member.name] = None if taken[0] is None else _natural_key(member.target, iter(taken))
        rows.append(row)
    for name in lists:
        members = _many_to_many(section, name)
        for row in rows:
            row[name] = members.get(row[section.key[0]], [])
    return rows


def _many_to_many(section: Section, name: str) -> dict[Any, list[str]]:
    """Row key -> the sorted natural keys (or ``app_label.codename``) of many-to-many field ``name``."""
    model = apps.get_model(section.model)
    member = section.field_named(name)
    relation = model._meta.get_field(name)
    through = relation.remote_field.through
    source, target = relation.m2m_field_name(), relation.m2m_reverse_field_name()
    owner_path = f"{source}__{section.key[0]}"
    found: dict[Any, list[str]] = defaultdict(list)
    if member.kind == PERMISSION_LIST:
        for owner, app_label, codename in through.objects.values_list(owner_path, f"{target}__content_type__app_label", f"{target}__codename"):
            found[owner].append(f"{app_label}.{codename}")
    else:
        for owner, named in through.objects.values_list(owner_path, f"{target}__{_key_path(member.target)}"):
            found[owner].append(str(named))
    return {owner: sorted(names) for owner, names in found.items()}


def _encode(value: Any) -> Any:
    """A database value as JSON: datetimes in ISO 8601 with their offset, UUIDs as text."""
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, uuid.UUID):
        return str(value)
    return value

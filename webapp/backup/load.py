"""A checked backup -> an empty control-plane database, all or nothing.

The target must have every migration the backup was taken at (code at least as new as the
backup's) and, unless the caller asks to clear it, hold no row of any backed-up model: a
restore recreates a lost database, it never merges into a live one. Everything happens in one
transaction, so a failure (a permission the new database lacks, a constraint) leaves the
database as it was.

Rows are inserted section by section in the schema's order, in bulk; references are resolved
from natural keys (one value, or a tuple for a composite key) to the new primary keys. Timestamps the models fill in themselves
(``auto_now_add`` / ``auto_now``) are written back afterwards, so the restored rows keep the
backup's times. Precondition: nothing else writes to the database meanwhile (the controllers,
web, Celery worker and beat are stopped, see ``deploy/README.md``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.apps import apps
from django.contrib.auth.models import Permission
from django.contrib.sessions.models import Session
from django.db import IntegrityError, transaction

from webapp.backup.document import CheckedBackup
from webapp.backup.dump import applied_migrations
from webapp.backup.errors import BackupFormatError, RestoreRefusedError
from webapp.backup.schema import PERMISSION_LIST, REFERENCE, REFERENCE_LIST, SECTIONS, Section

INSERT_BATCH_SIZE = 1000  # rows per INSERT / UPDATE statement


@dataclass(frozen=True)
class RestoreReport:
    restored: dict[str, int]  # section -> rows written
    cleared: dict[str, int] = field(default_factory=dict)  # section -> rows deleted first (clear_existing)

    def summary(self) -> str:
        written = ", ".join(f"{count} {name}" for name, count in self.restored.items() if count) or "nothing"
        text = f"restored {written}"
        if self.cleared:
            text = "deleted " + ", ".join(f"{count} {name}" for name, count in self.cleared.items()) + "; " + text
        return text


def existing_rows() -> dict[str, int]:
    """Section -> rows the database already holds, for the sections that are not empty."""
    counts = {section.name: apps.get_model(section.model).objects.count() for section in SECTIONS}
    return {name: count for name, count in counts.items() if count}


def restore_control_plane(backup: CheckedBackup, *, clear_existing: bool = False) -> RestoreReport:
    """Write ``backup`` into the database (see the module docstring).

    RestoreRefusedError when migrations are missing or the database is not empty (and
    ``clear_existing`` is false); BackupFormatError when the backup names a permission this
    database does not have. ``clear_existing`` deletes the rows of every backed-up model (and
    what cascades from them) and every session, in the same transaction.
    """
    missing = sorted(set(backup.migrations) - set(applied_migrations()))
    if missing:
        raise RestoreRefusedError(
            f"the database lacks migrations the backup was taken with: {', '.join(missing)}. "
            "Restore with code at least as new as the backup's, after `manage.py migrate`."
        )
    with transaction.atomic():
        existing = existing_rows()
        if existing and not clear_existing:
            held = ", ".join(f"{count} {name}" for name, count in existing.items())
            raise RestoreRefusedError(
                f"the database is not empty (it holds {held}). Restore into a new database after `manage.py migrate`, "
                "with the controllers, web, Celery worker and beat stopped; or pass --clear-existing to delete all of it first."
            )
        cleared = _clear(existing) if existing else {}
        primary_keys: dict[str, dict[Any, int]] = {}
        permissions = _permission_ids()
        for section in SECTIONS:
            try:
                _load_section(section, backup.sections[section.name], primary_keys, permissions)
            except IntegrityError as error:
                raise RestoreRefusedError(f"the database refused sections.{section.name}: {error}") from error
    return RestoreReport(restored=backup.counts(), cleared=cleared)


def _clear(existing: dict[str, int]) -> dict[str, int]:
    """Delete every backed-up row, referencing sections first, and every session."""
    for section in reversed(SECTIONS):
        apps.get_model(section.model).objects.all().delete()
    Session.objects.all().delete()
    return existing


def _permission_ids() -> dict[str, int]:
    """``app_label.codename`` -> primary key of every permission of this database."""
    return {f"{app_label}.{codename}": pk for pk, app_label, codename in Permission.objects.values_list("pk", "content_type__app_label", "codename")}


def _load_section(section: Section, rows: list[dict[str, Any]], primary_keys: dict[str, dict[Any, int]], permissions: dict[str, int]) -> None:
    model = apps.get_model(section.model)
    lists = [member for member in section.fields if member.kind in (REFERENCE_LIST, PERMISSION_LIST)]
    objects = []
    for row in rows:
        values: dict[str, Any] = {}
        for member in section.fields:
            value = row[member.name]
            if member.kind == REFERENCE:
                values[f"{member.name}_id"] = None if value is None else primary_keys[member.target][value]
            elif member.kind not in (REFERENCE_LIST, PERMISSION_LIST):
                values[member.name] = value
        objects.append(model(**values))
    automatic = [
        candidate.name
        for candidate in model._meta.concrete_fields
        if (getattr(candidate, "auto_now", False) or getattr(candidate, "auto_now_add", False)) and candidate.name in section.field_names
    ]
    kept = [[getattr(instance, name) for name in automatic] for instance in objects]
    model.objects.bulk_create(objects, batch_size=INSERT_BATCH_SIZE)
    if automatic and objects:
        # bulk_create stamped them with the current time; put the backup's times back.
        for instance, values in zip(objects, kept):
            for name, value in zip(automatic, values):
                setattr(instance, name, value)
        model.objects.bulk_update(objects, automatic, batch_size=INSERT_BATCH_SIZE)
    if section.key:
        primary_keys[section.name] = {section.natural_key(row): instance.pk for row, instance in zip(rows, objects)}
    for member in lists:
        _load_many_to_many(section, member.name, member.kind, member.target, rows, objects, primary_keys, permissions)


def _load_many_to_many(
    section: Section,
    name: str,
    kind: str,
    target: str,
    rows: list[dict[str, Any]],
    objects: list[Any],
    primary_keys: dict[str, dict[Any, int]],
    permissions: dict[str, int],
) -> None:
    relation = apps.get_model(section.model)._meta.get_field(name)
    through = relation.remote_field.through
    source, destination = relation.m2m_field_name(), relation.m2m_reverse_field_name()
    links = []
    for index, (row, instance) in enumerate(zip(rows, objects)):
        for item in row[name]:
            if kind == PERMISSION_LIST:
                if item not in permissions:
                    raise BackupFormatError(f"sections.{section.name}[{index}].{name}", f"this database has no permission {item!r}")
                target_pk = permissions[item]
            else:
                target_pk = primary_keys[target][item]
            links.append(through(**{f"{source}_id": instance.pk, f"{destination}_id": target_pk}))
    through.objects.bulk_create(links, batch_size=INSERT_BATCH_SIZE)

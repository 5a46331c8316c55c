"""Compatibility levels and modes, global (``subject=None``) or per subject. Setting returns the
new value; deleting a subject's returns what it was (and the subject falls back to the global);
deleting the global resets it to the default (BACKWARD, READWRITE)."""

from __future__ import annotations

from django.db import transaction

from webapp.accounts.facade import Actor, Role
from webapp.audit.facade import record_event
from webapp.schemas import compatibility
from webapp.schemas.actions.register import lock_registry
from webapp.schemas.errors import OperationNotPermitted, SubjectNotFound
from webapp.schemas.limits import check_subject_name
from webapp.schemas.models import Schema, SubjectSetting
from webapp.schemas.permissions import require
from webapp.schemas.queries import effective_settings, subject_compatibility, subject_mode, subject_versions


def set_compatibility(actor: Actor, subject: str | None, level: object) -> str:
    require(actor, Role.DEVELOPER, "change compatibility levels")
    checked = compatibility.check_level(level)
    _store(actor, subject, "compatibility", checked)
    return checked


def delete_compatibility(actor: Actor, subject: str | None) -> str:
    require(actor, Role.DEVELOPER, "change compatibility levels")
    with transaction.atomic():
        if subject is None:
            previous = effective_settings(actor.tenant, None).compatibility
        else:
            _check_subject_exists(actor, subject)
            previous = subject_compatibility(actor.tenant, subject, default_to_global=False)
        _store(actor, subject, "compatibility", None)
    return previous


def set_mode(actor: Actor, subject: str | None, mode: object, *, force: bool) -> str:
    require(actor, Role.ADMIN, "change the registry's mode")
    checked = compatibility.check_mode(mode)
    with transaction.atomic():
        if checked == compatibility.IMPORT and not force and _has_schemas(actor, subject):
            where = f"subject '{subject}'" if subject else "the registry"
            raise OperationNotPermitted(f"Cannot import since {where} has schemas already; set force=true to import anyway.")
        _store(actor, subject, "mode", checked)
    return checked


def delete_mode(actor: Actor, subject: str) -> str:
    require(actor, Role.ADMIN, "change the registry's mode")
    with transaction.atomic():
        _check_subject_exists(actor, subject)
        previous = subject_mode(actor.tenant, subject, default_to_global=False)
        _store(actor, subject, "mode", None)
    return previous


def _store(actor: Actor, subject: str | None, field: str, value: str | None) -> None:
    """Set (or, with None, clear) the global or subject ``field``, recorded in the audit log."""
    with transaction.atomic():
        record_event(actor, f"schema.{'set' if value else 'delete'}_{field}", subject or "(global)", {field: value})
        if subject is None:
            registry = lock_registry(actor.tenant)
            setattr(registry, field, value)
            registry.save(update_fields=[field])
            return
        check_subject_name(subject)
        setting, _ = SubjectSetting.objects.get_or_create(tenant=actor.tenant, subject=subject)
        setattr(setting, field, value)
        if setting.compatibility is None and setting.mode is None:
            setting.delete()
        else:
            setting.save(update_fields=[field])


def _check_subject_exists(actor: Actor, subject: str) -> None:
    has_setting = SubjectSetting.objects.filter(tenant=actor.tenant, subject=subject).exists()
    if not has_setting and not subject_versions(actor.tenant, subject, deleted=True).exists():
        raise SubjectNotFound(subject)


def _has_schemas(actor: Actor, subject: str | None) -> bool:
    if subject is None:
        return Schema.objects.filter(tenant=actor.tenant).exists()
    return subject_versions(actor.tenant, subject, deleted=True).exists()

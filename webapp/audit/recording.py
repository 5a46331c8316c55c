"""Recording an audit event, from inside the action that makes the change.

Each ``do_*`` action of accounts and catalog (and the control plane's group and transaction
operations) calls :func:`record_event` once, in the transaction that writes the change; the
door and client address come from :mod:`webapp.audit.context`. Summaries hold the changed
fields only; keys that name secrets are dropped here whatever the caller passes, so a secret
can never reach the log.

Retention: rows older than ``settings.AUDIT_LOG_RETENTION_DAYS`` (default 365) are deleted
for the tenant whenever it records a new event (one indexed range delete), so a tenant's log
never holds more than that window.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from typing import Any, Protocol

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from webapp.audit.context import current_source
from webapp.audit.models import AuditEvent

DEFAULT_RETENTION_DAYS = 365
# A summary key containing one of these is dropped: secrets never reach the audit log.
SECRET_MARKERS = ("secret", "password", "token", "stored_key", "server_key", "salt")
MAX_SUMMARY_VALUE_CHARS = 500  # longer values are cut (a huge config value stays readable)


class AuditedActor(Protocol):
    """What recording reads of an actor (``webapp.accounts.facade.Actor``)."""

    @property
    def tenant(self) -> Any: ...
    @property
    def principal(self) -> str: ...
    @property
    def display_name(self) -> str: ...
    @property
    def api_key(self) -> Any: ...


Clock = Callable[[], datetime]


def retention() -> timedelta:
    return timedelta(days=int(getattr(settings, "AUDIT_LOG_RETENTION_DAYS", DEFAULT_RETENTION_DAYS)))


def clean_summary(summary: Mapping[str, Any]) -> dict[str, Any]:
    """The summary without secret-looking keys, values made JSON-safe and bounded."""
    cleaned: dict[str, Any] = {}
    for key, value in summary.items():
        if any(marker in key.lower() for marker in SECRET_MARKERS):
            continue
        if isinstance(value, Mapping):
            cleaned[key] = clean_summary(value)
        elif isinstance(value, (list, tuple)):
            cleaned[key] = [item if isinstance(item, (int, float, bool)) or item is None else str(item)[:MAX_SUMMARY_VALUE_CHARS] for item in value]
        elif value is None or isinstance(value, (int, float, bool)):
            cleaned[key] = value
        else:
            cleaned[key] = str(value)[:MAX_SUMMARY_VALUE_CHARS]
    return cleaned


def record_event(actor: AuditedActor, action: str, target: str, summary: Mapping[str, Any] | None = None, *, clock: Clock = timezone.now) -> AuditEvent:
    """Record that ``actor`` did ``action`` to ``target``. Precondition: inside the change's transaction."""
    key = actor.api_key
    return record_tenant_event(
        actor.tenant,
        action,
        target,
        summary,
        principal=actor.principal,
        name=actor.display_name,
        api_key_id=key.key_id if key is not None else "",
        clock=clock,
    )


def record_tenant_event(
    tenant: Any,
    action: str,
    target: str,
    summary: Mapping[str, Any] | None = None,
    *,
    principal: str = "",
    name: str = "",
    api_key_id: str = "",
    clock: Clock = timezone.now,
) -> AuditEvent:
    """Record a change of ``tenant`` whose actor is not an ``Actor`` (sign-up, an accepted invitation)."""
    source = current_source()
    now = clock()
    with transaction.atomic():
        prune_expired(tenant, now)
        return AuditEvent.objects.create(
            tenant=tenant,
            at=now,
            actor_principal=principal,
            actor_name=name[:150],
            api_key_id=api_key_id,
            door=source.door,
            client_ip=source.client_ip,
            action=action,
            target=target[:255],
            summary=clean_summary(summary or {}),
        )


def prune_expired(tenant: Any, now: datetime) -> int:
    """Delete ``tenant``'s events older than the retention; returns how many."""
    deleted, _ = AuditEvent.objects.filter(tenant=tenant, at__lt=now - retention()).delete()
    return deleted

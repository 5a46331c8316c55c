"""One row per change a tenant made (an :class:`AuditEvent`).

Rows are written by :func:`webapp.audit.recording.record_event`, inside the transaction of the
change they describe, so a change that rolls back leaves no row and a committed change always
has one. They are never updated; :func:`webapp.audit.recording.prune_expired` deletes the rows
older than the retention (``AUDIT_LOG_RETENTION_DAYS``). The tenant is referenced by string so
that this app imports no other (it sits below every app that records into it).
"""

from __future__ import annotations

from django.db import models

from webapp.public_ids import new_public_id


def new_audit_event_id() -> str:
    return new_public_id("ev", 12)


class Door(models.TextChoices):
    """How the change reached the control plane."""

    DASHBOARD = "dashboard", "Dashboard"
    REST = "rest", "REST API"
    SDK = "sdk", "SDK admin (gRPC, through a broker)"
    KAFKA = "kafka", "Kafka protocol admin (through a broker)"
    SYSTEM = "system", "Control plane (no user request)"


class AuditEvent(models.Model):
    public_id = models.CharField(max_length=20, unique=True, default=new_audit_event_id, editable=False)
    tenant = models.ForeignKey("accounts.Tenant", on_delete=models.CASCADE, related_name="audit_events")
    at = models.DateTimeField(db_index=True)
    # Who: the principal (User:sa-..., User:u-... or User:<SCRAM user name>, which is up to 128
    # characters), a readable name, and the API key it used (never its secret).
    actor_principal = models.CharField(max_length=140, blank=True)
    actor_name = models.CharField(max_length=150, blank=True)
    api_key_id = models.CharField(max_length=32, blank=True)
    door = models.CharField(max_length=12, choices=Door.choices)
    client_ip = models.GenericIPAddressField(null=True, blank=True)
    action = models.CharField(max_length=64)  # "acl.create", "api_key.revoke", ...
    target = models.CharField(max_length=255, blank=True)  # the public id or name of what changed
    summary = models.JSONField(default=dict)  # the change's fields; never a secret

    class Meta:
        ordering = ["-at", "-pk"]
        indexes = [models.Index(fields=["tenant", "-at"], name="audit_tenant_at")]

    def __str__(self) -> str:
        return f"{self.action} {self.target} by {self.actor_principal or self.door}"

"""The registry's rows: per tenant, schemas by id, subjects' versions, and settings.

Stored in the control-plane database rather than a compacted topic (as Confluent's registry does
with ``_schemas``): the control plane already holds every tenant's desired state there, a
transaction makes an id allocation, a version and its references one durable step, row locks and
unique constraints give concurrent registrations of one schema one id, and the API answers from
the database without a consumer that must catch up with a topic before it may serve reads.

- ``Registry``: one per tenant, created on first use; its row lock serialises the tenant's
  registrations, it allocates schema ids (monotonic per tenant, like a Confluent Cloud registry)
  and holds the global compatibility level and mode.
- ``Schema``: one per distinct (type, canonical text, references) of a tenant, with its id.
- ``SchemaReference``: a schema's references by name to another subject's version.
- ``SubjectVersion``: a subject's version pointing at a schema; ``deleted`` is a soft delete.
- ``SubjectSetting``: a subject's own compatibility level and mode, each optional.
"""

from __future__ import annotations

from django.db import models


class Registry(models.Model):
    tenant = models.OneToOneField("accounts.Tenant", on_delete=models.CASCADE, related_name="schema_registry")
    next_schema_id = models.PositiveIntegerField(default=1)
    compatibility = models.CharField(max_length=32, null=True, blank=True)
    mode = models.CharField(max_length=16, null=True, blank=True)


class Schema(models.Model):
    tenant = models.ForeignKey("accounts.Tenant", on_delete=models.CASCADE, related_name="+")
    schema_id = models.PositiveIntegerField()
    schema_type = models.CharField(max_length=16)
    text = models.TextField()
    # sha256 of the type, the canonical text and the references: what makes two registrations one id.
    fingerprint = models.CharField(max_length=64)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["tenant", "schema_id"], name="schemas_schema_unique_id"),
            models.UniqueConstraint(fields=["tenant", "fingerprint"], name="schemas_schema_unique_fingerprint"),
        ]


class SchemaReference(models.Model):
    schema = models.ForeignKey(Schema, on_delete=models.CASCADE, related_name="references")
    position = models.PositiveIntegerField()
    name = models.CharField(max_length=1024)
    subject = models.CharField(max_length=255)
    version = models.PositiveIntegerField()

    class Meta:
        ordering = ["position"]
        indexes = [models.Index(fields=["subject", "version"], name="schemas_reference_target")]


class SubjectVersion(models.Model):
    tenant = models.ForeignKey("accounts.Tenant", on_delete=models.CASCADE, related_name="+")
    subject = models.CharField(max_length=255)
    version = models.PositiveIntegerField()
    # RESTRICT: a schema a version points at is never deleted alone, yet a tenant's deletion takes both.
    schema = models.ForeignKey(Schema, on_delete=models.RESTRICT, related_name="versions")
    deleted = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["subject", "version"]
        constraints = [
            models.UniqueConstraint(fields=["tenant", "subject", "version"], name="schemas_version_unique"),
            # A schema is live at most once in a subject (registering it again answers that version).
            models.UniqueConstraint(fields=["tenant", "subject", "schema"], condition=models.Q(deleted=False), name="schemas_version_unique_live_schema"),
        ]


class SubjectSetting(models.Model):
    tenant = models.ForeignKey("accounts.Tenant", on_delete=models.CASCADE, related_name="+")
    subject = models.CharField(max_length=255)
    compatibility = models.CharField(max_length=32, null=True, blank=True)
    mode = models.CharField(max_length=16, null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["tenant", "subject"], name="schemas_setting_unique")]

"""Desired state of the data plane: topics, their partitions' placement, ACL bindings, quotas.

Rows here are what the tenant asked for; provisioning jobs push them to brokers and the
reconciler repairs drift. Mutations go through ``webapp.catalog.actions``.
"""

from __future__ import annotations

import uuid

from django.db import models
from django.db.models import Q

from log_formats.topic_names import INTERNAL_TOPIC_PREFIX
from webapp.public_ids import new_acl_id


class Topic(models.Model):
    """A tenant's topic, or an internal topic of the cluster (``__consumer_offsets``,
    ``__usage``: no tenant, a name starting with ``__``, managed by the controller through
    ``webapp.controller.internal_topics``). ``configs`` holds only overrides (Kafka names -> string
    values), validated against ``weir.topic_config.TOPIC_CONFIGS``.

    Every tenant-facing query filters on a tenant, which never matches an internal row.
    """

    tenant = models.ForeignKey("accounts.Tenant", on_delete=models.CASCADE, null=True, blank=True, related_name="topics")
    name = models.CharField(max_length=249)
    topic_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    partition_count = models.PositiveIntegerField()
    replication_factor = models.PositiveSmallIntegerField(default=1)
    configs = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["tenant", "name"], name="topic_name_unique_per_tenant"),
            # NULLs are distinct in the constraint above, so internal names need their own.
            models.UniqueConstraint(fields=["name"], condition=Q(tenant__isnull=True), name="internal_topic_name_unique"),
            models.CheckConstraint(
                condition=(Q(tenant__isnull=True) & Q(name__startswith=INTERNAL_TOPIC_PREFIX))
                | (Q(tenant__isnull=False) & ~Q(name__startswith=INTERNAL_TOPIC_PREFIX)),
                name="only_internal_topics_have_no_tenant",
            ),
        ]
        ordering = ["name"]

    def __str__(self) -> str:
        return f"{self.tenant.public_id}/{self.name}" if self.tenant is not None else self.name

    @property
    def is_internal(self) -> bool:
        return self.tenant_id is None


class Partition(models.Model):
    """Placement of one partition: replicas are broker node ids, the first is the preferred
    leader. ``leader_epoch`` increases on every leader change (replication issue)."""

    topic = models.ForeignKey(Topic, on_delete=models.CASCADE, related_name="partitions")
    index = models.PositiveIntegerField()
    replicas = models.JSONField(default=list)
    isr = models.JSONField(default=list)
    leader = models.IntegerField()  # broker node id, -1 when offline
    leader_epoch = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["topic", "index"], name="partition_index_unique_per_topic")]
        ordering = ["topic", "index"]


class ResourceType(models.TextChoices):
    TOPIC = "TOPIC"
    GROUP = "GROUP"
    CLUSTER = "CLUSTER"
    TRANSACTIONAL_ID = "TRANSACTIONAL_ID"


class PatternType(models.TextChoices):
    LITERAL = "LITERAL"
    PREFIXED = "PREFIXED"


class Operation(models.TextChoices):
    ALL = "ALL"
    READ = "READ"
    WRITE = "WRITE"
    CREATE = "CREATE"
    DELETE = "DELETE"
    ALTER = "ALTER"
    DESCRIBE = "DESCRIBE"
    DESCRIBE_CONFIGS = "DESCRIBE_CONFIGS"
    ALTER_CONFIGS = "ALTER_CONFIGS"
    IDEMPOTENT_WRITE = "IDEMPOTENT_WRITE"


class Permission(models.TextChoices):
    ALLOW = "ALLOW"
    DENY = "DENY"


CLUSTER_RESOURCE_NAME = "kafka-cluster"


class AclBinding(models.Model):
    """Kafka's ACL binding within one tenant: resource names are the tenant's plain names."""

    public_id = models.CharField(max_length=32, unique=True, default=new_acl_id, editable=False)
    tenant = models.ForeignKey("accounts.Tenant", on_delete=models.CASCADE, related_name="acl_bindings")
    principal = models.CharField(max_length=128)  # "User:sa-..." or "User:*"
    resource_type = models.CharField(max_length=16, choices=ResourceType.choices)
    resource_name = models.CharField(max_length=255)
    pattern_type = models.CharField(max_length=10, choices=PatternType.choices, default=PatternType.LITERAL)
    operation = models.CharField(max_length=20, choices=Operation.choices)
    permission = models.CharField(max_length=5, choices=Permission.choices, default=Permission.ALLOW)
    host = models.CharField(max_length=64, default="*")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "principal", "resource_type", "resource_name", "pattern_type", "operation", "permission", "host"],
                name="acl_binding_unique",
            )
        ]
        ordering = ["resource_type", "resource_name", "principal", "operation"]


class Quota(models.Model):
    """Per-tenant byte-rate quotas; null means the plan's default."""

    tenant = models.OneToOneField("accounts.Tenant", on_delete=models.CASCADE, related_name="quota")
    produce_bytes_per_second = models.BigIntegerField(null=True, blank=True)
    consume_bytes_per_second = models.BigIntegerField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    def effective_produce_bytes_per_second(self) -> int:
        if self.produce_bytes_per_second is not None:
            return self.produce_bytes_per_second
        return self.tenant.limits.produce_bytes_per_second

    def effective_consume_bytes_per_second(self) -> int:
        if self.consume_bytes_per_second is not None:
            return self.consume_bytes_per_second
        return self.tenant.limits.consume_bytes_per_second

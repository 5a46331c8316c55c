"""Full desired-state snapshots, built from the database for the brokers' Admin service.

* Partitions snapshot (``ApplyPartitionsRequest``): every registered broker, and every
  tenant's topics with tenant id, topic id, config overrides and partition placement; the
  internal topics (``__consumer_offsets``...) are there too, with an empty tenant id.
* Security snapshot (``ApplySecurityRequest``): every active cluster API key as a credential
  (tenant and principal, secret as its SHA-256, SCRAM credentials where the key has them), every tenant's SCRAM user (its
  credentials by mechanism), every ACL binding, and every tenant's
  effective byte-rate quotas.

Each snapshot is read in one transaction after locking its version row (see
``webapp.provisioning.versions``), so the version it carries covers exactly its content.
The number of queries is fixed, whatever the number of tenants, topics or keys.

The same transaction reads the newest job id (``last_job_id``). A change inserts its job
while holding the lock of its snapshot's version row, so every job of a kind that changes
only these snapshots, with an id at most ``last_job_id``, has its change in them: a push of
these snapshots also delivers those jobs' changes (``jobs`` settles them with it).
"""

from __future__ import annotations

import base64
import json
import uuid
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Max, TextField
from django.db.models.functions import Cast

from grpc_protos.weir.v1 import admin_pb2, broker_pb2
from webapp.accounts.facade import ApiKey, ApiKeyKind, ScramCredential, ScramUserCredential, Tenant, key_is_cluster_admin
from webapp.catalog.facade import AclBinding, Partition, Topic
from webapp.fleet.facade import BrokerNode
from webapp.provisioning.models import ProvisioningJob, SnapshotKind
from webapp.provisioning.versions import locked_versions

# Names the cluster in ApplyPartitions unless settings.WEIR_CLUSTER_ID says otherwise.
DEFAULT_CLUSTER_ID = "weir-local"

_RESOURCE_TYPES = {
    "TOPIC": admin_pb2.ACL_RESOURCE_TYPE_TOPIC,
    "GROUP": admin_pb2.ACL_RESOURCE_TYPE_GROUP,
    "CLUSTER": admin_pb2.ACL_RESOURCE_TYPE_CLUSTER,
    "TRANSACTIONAL_ID": admin_pb2.ACL_RESOURCE_TYPE_TRANSACTIONAL_ID,
}
_PATTERN_TYPES = {"LITERAL": admin_pb2.ACL_PATTERN_TYPE_LITERAL, "PREFIXED": admin_pb2.ACL_PATTERN_TYPE_PREFIXED}
_PERMISSIONS = {"ALLOW": admin_pb2.ACL_PERMISSION_ALLOW, "DENY": admin_pb2.ACL_PERMISSION_DENY}


def _operation(name: str) -> int:
    return admin_pb2.AclOperation.Value(f"ACL_OPERATION_{name}")


@dataclass(frozen=True)
class Snapshots:
    """The snapshots of one consistent read; a kind not asked for is ``None``."""

    partitions: admin_pb2.ApplyPartitionsRequest | None = None
    security: admin_pb2.ApplySecurityRequest | None = None
    # The newest job id when the snapshots were read (0: none); see the module docstring.
    last_job_id: int = 0


def build_snapshots(kinds: tuple[str, ...] | list[str], *, controller_epoch: int = 0) -> Snapshots:
    """Build the snapshots of ``kinds`` (``SnapshotKind`` values) with their current versions.

    ``controller_epoch`` stamps the partitions snapshot: the epoch of the controller that
    pushes it, 0 for pushes that do not come from a controller (provisioning jobs, the
    reconciler). Brokers refuse a map from an older controller epoch than they have seen.
    """
    with transaction.atomic():
        versions = locked_versions(kinds)
        partitions = _partitions_snapshot(versions[SnapshotKind.PARTITIONS], controller_epoch) if SnapshotKind.PARTITIONS in versions else None
        security = _security_snapshot(versions[SnapshotKind.SECURITY]) if SnapshotKind.SECURITY in versions else None
        last_job_id = ProvisioningJob.objects.aggregate(last=Max("pk"))["last"] or 0
    return Snapshots(partitions=partitions, security=security, last_job_id=last_job_id)


# The TopicAssignment of each topic of the last partitions snapshot this process built, by the
# database values it was built from (see _partitions_snapshot). Replaced whole at every build,
# so it holds one map's topics; concurrent builds each replace it with a complete map.
_built_topics: dict[tuple[Any, ...], admin_pb2.TopicAssignment] = {}


def _partitions_snapshot(version: int, controller_epoch: int) -> admin_pb2.ApplyPartitionsRequest:
    """The map from the database. Every change pushes the whole map again, and from one push to
    the next nearly every topic reads the same values: building a thousand topics' messages was
    most of a provisioning job's attempt, so a topic whose values (its row and its partitions'
    rows, JSON as text) are those of the previous build reuses that build's message."""
    global _built_topics
    brokers = [
        broker_pb2.BrokerNode(node_id=node.node_id, host=node.host, port=node.port, rack=node.rack, kafka_port=node.kafka_port)
        for node in BrokerNode.objects.order_by("node_id")
    ]
    rows_of_topic: dict[int, list[tuple[int, int, int, str, str]]] = defaultdict(list)
    for topic_pk, *row in Partition.objects.order_by("topic_id", "index").values_list(
        "topic_id", "index", "leader", "leader_epoch", Cast("replicas", TextField()), Cast("isr", TextField())
    ):
        rows_of_topic[topic_pk].append(tuple(row))  # type: ignore[arg-type]
    previous, built = _built_topics, {}
    # The JSON columns are read as text and each distinct text is decoded once: a map of a
    # thousand topics holds a handful of distinct replica lists and config overrides.
    decoded = _JsonTexts()
    topics = []
    for topic_pk, tenant_id, name, topic_id, configs in Topic.objects.order_by("tenant__public_id", "name").values_list(
        "pk", "tenant__public_id", "name", "topic_id", Cast("configs", TextField())
    ):
        # The primary key stands for the topic id (a topic's id never changes), which hashes slower.
        values = (topic_pk, tenant_id, name, configs, tuple(rows_of_topic.get(topic_pk, ())))
        message = previous.get(values)
        if message is None:
            message = _topic_assignment(topic_id, values, decoded)
        built[values] = message
        topics.append(message)
    _built_topics = built
    cluster_id = getattr(settings, "WEIR_CLUSTER_ID", DEFAULT_CLUSTER_ID)
    return admin_pb2.ApplyPartitionsRequest(version=version, cluster_id=cluster_id, brokers=brokers, topics=topics, controller_epoch=controller_epoch)


def _topic_assignment(topic_id: uuid.UUID, values: tuple[Any, ...], decoded: _JsonTexts) -> admin_pb2.TopicAssignment:
    """One topic's entry of the map from its id and values (see :func:`_partitions_snapshot`)."""
    _topic_pk, tenant_id, name, configs, partition_rows = values
    return admin_pb2.TopicAssignment(
        tenant_id=tenant_id or "",  # None: an internal topic, which brokers know by its plain name
        name=name,
        topic_id=str(topic_id),
        configs=[broker_pb2.TopicConfigEntry(name=key, value=str(value)) for key, value in sorted((decoded(configs or "{}") or {}).items())],
        partitions=[
            admin_pb2.PartitionAssignment(partition=index, leader_id=leader, leader_epoch=leader_epoch, replicas=decoded(replicas), isr=decoded(isr))
            for index, leader, leader_epoch, replicas, isr in partition_rows
        ],
    )


class _JsonTexts:
    """Decodes JSON texts, each distinct text once (the values are shared: do not change them)."""

    def __init__(self) -> None:
        self._values: dict[str, Any] = {}

    def __call__(self, text: str) -> Any:
        try:
            return self._values[text]
        except KeyError:
            value = self._values[text] = json.loads(text)
            return value


def _scram_credential(credential: ScramCredential | ScramUserCredential) -> admin_pb2.ScramCredential:
    return admin_pb2.ScramCredential(
        mechanism=credential.mechanism,
        salt=base64.b64decode(credential.salt),
        iterations=credential.iterations,
        stored_key=base64.b64decode(credential.stored_key),
        server_key=base64.b64decode(credential.server_key),
    )


def _security_snapshot(version: int) -> admin_pb2.ApplySecurityRequest:
    keys = (
        ApiKey.objects.filter(kind=ApiKeyKind.CLUSTER, revoked_at__isnull=True)
        .select_related("tenant", "owner_service_account", "owner_membership")
        .prefetch_related("scram_credentials")
        .order_by("key_id")
    )
    credentials = [
        admin_pb2.Credential(
            api_key=key.key_id,
            secret_sha256=key.secret_sha256,
            tenant_id=key.tenant.public_id,
            principal=key.principal,
            scram=[_scram_credential(scram) for scram in sorted(key.scram_credentials.all(), key=lambda scram: scram.mechanism)],
            # A member's key acts with the member's role; a service account's, by ACLs alone
            # (the same rule the REST API and the dashboard show: accounts.key_access).
            cluster_admin=key_is_cluster_admin(key),
        )
        for key in keys
    ]
    acls = [
        admin_pb2.AclBinding(
            tenant_id=tenant_id,
            principal=principal,
            resource_type=_RESOURCE_TYPES[resource_type],
            resource_name=resource_name,
            pattern_type=_PATTERN_TYPES[pattern_type],
            operation=_operation(operation),
            permission=_PERMISSIONS[permission],
            host=host,
        )
        for tenant_id, principal, resource_type, resource_name, pattern_type, operation, permission, host in AclBinding.objects.order_by(
            "tenant__public_id", "public_id"
        ).values_list("tenant__public_id", "principal", "resource_type", "resource_name", "pattern_type", "operation", "permission", "host")
    ]
    quotas = []
    for tenant in Tenant.objects.select_related("quota").order_by("public_id"):
        limits = tenant.limits
        quota = getattr(tenant, "quota", None)
        produce = quota.produce_bytes_per_second if quota is not None and quota.produce_bytes_per_second is not None else limits.produce_bytes_per_second
        consume = quota.consume_bytes_per_second if quota is not None and quota.consume_bytes_per_second is not None else limits.consume_bytes_per_second
        quotas.append(admin_pb2.TenantQuota(tenant_id=tenant.public_id, produce_bytes_per_second=produce, consume_bytes_per_second=consume))
    return admin_pb2.ApplySecurityRequest(version=version, credentials=credentials, acls=acls, quotas=quotas, scram_users=_scram_users())


def _scram_users() -> list[admin_pb2.ScramUser]:
    """Every tenant's SCRAM users (one query), each with its credentials by mechanism."""
    users: dict[tuple[str, str], admin_pb2.ScramUser] = {}
    rows = ScramUserCredential.objects.select_related("tenant").order_by("tenant__public_id", "user_name", "mechanism")
    for row in rows:
        key = (row.tenant.public_id, row.user_name)
        user = users.setdefault(key, admin_pb2.ScramUser(tenant_id=row.tenant.public_id, name=row.user_name))
        user.scram.append(_scram_credential(row))
    return list(users.values())

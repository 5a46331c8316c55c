"""Topic, partition and config shapes (Confluent REST v3: KafkaTopic, KafkaPartition,
KafkaTopicConfig) and the inputs that create and change them."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Protocol
from uuid import UUID

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from webapp.api.serializers.common import LinkTemplate, RelatedLinkSerializer, ResourceMetadataSerializer, Timestamps, link, link_template, resource_name
from webapp.api.serializers.strict import InputSerializer
from webapp.catalog.facade import (
    TENANT_TOPIC_NAME_MAX_LENGTH,
    HealthCounts,
    PartitionHealth,
    Topic,
    TopicConfigEntry,
    health_counts_by_topic,
    partition_health,
    topic_name_length_help,
)
from webapp.provisioning.facade import PartitionDescription

# The columns a page of topics reads (``values_list(*TOPIC_ROW_FIELDS, named=True)``): rows of them
# render as Topic instances do, and cost a fraction of building the instances.
TOPIC_ROW_FIELDS = ("pk", "name", "topic_id", "replication_factor", "partition_count", "configs", "created_at")


class TopicFields(Protocol):
    """What :class:`TopicSerializer` reads of a topic: a Topic, or a row of :data:`TOPIC_ROW_FIELDS`."""

    @property
    def pk(self) -> Any: ...
    @property
    def name(self) -> str: ...
    @property
    def topic_id(self) -> UUID: ...
    @property
    def replication_factor(self) -> int: ...
    @property
    def partition_count(self) -> int: ...
    @property
    def configs(self) -> dict[str, Any]: ...
    @property
    def created_at(self) -> datetime: ...


class TopicCreateSerializer(InputSerializer):
    topic_name = serializers.CharField(
        max_length=TENANT_TOPIC_NAME_MAX_LENGTH,
        allow_blank=True,
        trim_whitespace=False,
        help_text=f"ASCII letters, digits, '.', '_' and '-'. {topic_name_length_help()}",
        error_messages={"max_length": topic_name_length_help()},
    )
    partitions_count = serializers.IntegerField(default=1, min_value=-(2**31), max_value=2**31 - 1)
    # Omitted: the action takes the deployment's default (see check_create_topic).
    replication_factor = serializers.IntegerField(
        required=False,
        min_value=-(2**15),
        max_value=2**15 - 1,
        help_text="Replicas of each partition, at most the number of brokers. When omitted: min(3, the number of brokers), as managed Kafka services default.",
    )
    configs = serializers.ListField(child=serializers.DictField(child=serializers.CharField(allow_null=True)), default=list)

    def validate_configs(self, value: list[dict[str, Any]]) -> dict[str, Any]:
        """Confluent's ``[{"name": ..., "value": ...}]`` as a mapping."""
        configs: dict[str, Any] = {}
        for entry in value:
            if "name" not in entry or entry["name"] is None:
                raise serializers.ValidationError("Each config needs a 'name' and a 'value'.")
            configs[entry["name"]] = entry.get("value")
        return configs


class PartitionsGrowSerializer(InputSerializer):
    partitions_count = serializers.IntegerField(min_value=-(2**31), max_value=2**31 - 1)


class ConfigAlterEntrySerializer(InputSerializer):
    name = serializers.CharField(max_length=255)
    value = serializers.CharField(required=False, allow_null=True, allow_blank=True)
    operation = serializers.ChoiceField(choices=["SET", "DELETE"], default="SET")


class ConfigAlterSerializer(InputSerializer):
    data = ConfigAlterEntrySerializer(many=True, allow_empty=False, min_length=1)


class TopicSerializer(serializers.Serializer):
    """A topic and the health of its partitions (counted from the controller's records). For a
    page of topics, the context's ``health_counts`` (``health_counts_by_topic``: one query for the
    page) gives each topic's counts; without it, each topic's partitions are read on their own."""

    kind = serializers.SerializerMethodField()
    metadata = serializers.SerializerMethodField()
    cluster_id = serializers.SerializerMethodField()
    topic_name = serializers.CharField(source="name")
    topic_id = serializers.UUIDField()
    is_internal = serializers.SerializerMethodField()
    replication_factor = serializers.IntegerField()
    partitions_count = serializers.IntegerField(source="partition_count")
    partitions = serializers.SerializerMethodField()
    configs = serializers.SerializerMethodField()
    under_replicated_partitions_count = serializers.SerializerMethodField(help_text="Partitions whose ISR is smaller than their replica list.")
    under_min_isr_partitions_count = serializers.SerializerMethodField(
        help_text="Partitions without a leader or whose ISR is smaller than min.insync.replicas: acks=all produce fails there."
    )
    offline_partitions_count = serializers.SerializerMethodField(help_text="Partitions without a leader: no in-sync replica is alive.")
    created_at = serializers.DateTimeField()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # The three counts come from one pass over a topic's partitions.
        self._health_by_topic: dict[int, HealthCounts] = {}
        self._timestamps = Timestamps()
        self._links: tuple[LinkTemplate, LinkTemplate, LinkTemplate] | None = None

    def to_representation(self, topic: TopicFields) -> dict[str, Any]:
        """The declared fields, in their order, built directly: DRF's per-field machinery cost more
        than the rest of a page of topics. The declarations stay for the OpenAPI schema.

        ``topic`` is a Topic or a row of its fields (:data:`TOPIC_ROW_FIELDS`, what a list reads)."""
        health = self._health(topic)
        tenant_id = self.context["tenant_public_id"]
        own, partitions, configs = self._link_templates()
        return {
            "kind": "KafkaTopic",
            "metadata": {"self": own(topic.name), "resource_name": resource_name(tenant_id, f"topic={topic.name}")},
            # Each tenant is its own logical cluster, as in Confluent Cloud.
            "cluster_id": tenant_id,
            "topic_name": topic.name,
            "topic_id": str(topic.topic_id),
            "is_internal": False,
            "replication_factor": int(topic.replication_factor),
            "partitions_count": int(topic.partition_count),
            "partitions": {"related": partitions(topic.name)},
            "configs": {"related": configs(topic.name)},
            "under_replicated_partitions_count": health.under_replicated,
            "under_min_isr_partitions_count": health.under_min_isr,
            "offline_partitions_count": health.offline,
            "created_at": self._timestamps(topic.created_at),
        }

    def _link_templates(self) -> tuple[LinkTemplate, LinkTemplate, LinkTemplate]:
        """The topic's own link and its partitions' and configs' (this request's templates)."""
        if self._links is None:
            request = self.context["request"]
            self._links = (
                link_template(request, "api:topic-detail", "topic_name"),
                link_template(request, "api:topic-partitions", "topic_name"),
                link_template(request, "api:topic-configs", "topic_name"),
            )
        return self._links

    def get_kind(self, topic: TopicFields) -> str:
        return "KafkaTopic"

    @extend_schema_field(ResourceMetadataSerializer)
    def get_metadata(self, topic: TopicFields) -> dict[str, str]:
        return {"self": self._link_templates()[0](topic.name), "resource_name": resource_name(self.context["tenant_public_id"], f"topic={topic.name}")}

    def get_cluster_id(self, topic: TopicFields) -> str:
        return self.context["tenant_public_id"]

    def get_is_internal(self, topic: TopicFields) -> bool:
        return False

    @extend_schema_field(RelatedLinkSerializer)
    def get_partitions(self, topic: TopicFields) -> dict[str, str]:
        return {"related": self._link_templates()[1](topic.name)}

    @extend_schema_field(RelatedLinkSerializer)
    def get_configs(self, topic: TopicFields) -> dict[str, str]:
        return {"related": self._link_templates()[2](topic.name)}

    def get_under_replicated_partitions_count(self, topic: TopicFields) -> int:
        return self._health(topic).under_replicated

    def get_under_min_isr_partitions_count(self, topic: TopicFields) -> int:
        return self._health(topic).under_min_isr

    def get_offline_partitions_count(self, topic: TopicFields) -> int:
        return self._health(topic).offline

    def _health(self, topic: TopicFields) -> HealthCounts:
        """The topic's counts: from the context's ``health_counts`` (a page's), else from one query
        of its partitions' rows."""
        if topic.pk not in self._health_by_topic:
            counted = self.context.get("health_counts")
            self._health_by_topic[topic.pk] = counted[topic.pk] if counted is not None and topic.pk in counted else health_counts_by_topic([topic])[topic.pk]
        return self._health_by_topic[topic.pk]


class TopicWithJobSerializer(TopicSerializer):
    job = serializers.SerializerMethodField()

    def to_representation(self, topic: Topic) -> dict[str, Any]:
        return {**super().to_representation(topic), "job": self.get_job(topic)}

    @extend_schema_field(serializers.DictField())
    def get_job(self, topic: Topic) -> dict[str, Any] | None:
        return self.context.get("job")


class BrokerIdSerializer(serializers.Serializer):
    broker_id = serializers.IntegerField()


class PartitionSerializer(serializers.Serializer):
    """A partition's placement and health and, when its leader answered, its offsets and size.
    ``available`` false means the figures are missing because the leader did not answer.
    ``replicas`` lists the preferred leader first; the context gives the topic's
    ``min_insync_replicas``."""

    kind = serializers.SerializerMethodField()
    cluster_id = serializers.SerializerMethodField()
    topic_name = serializers.SerializerMethodField()
    partition_id = serializers.IntegerField(source="partition")
    leader = serializers.SerializerMethodField()
    leader_epoch = serializers.IntegerField()
    replicas = serializers.SerializerMethodField()
    isr = serializers.SerializerMethodField()
    is_under_replicated = serializers.SerializerMethodField(help_text="The ISR is smaller than the replica list.")
    is_under_min_isr = serializers.SerializerMethodField(help_text="No leader, or the ISR is smaller than the topic's min.insync.replicas.")
    is_offline = serializers.SerializerMethodField(help_text="No leader: no in-sync replica is alive.")
    available = serializers.BooleanField()
    log_start_offset = serializers.IntegerField(allow_null=True)
    log_end_offset = serializers.IntegerField(allow_null=True)
    high_watermark = serializers.IntegerField(allow_null=True)
    size_bytes = serializers.IntegerField(allow_null=True)

    def get_kind(self, partition: PartitionDescription) -> str:
        return "KafkaPartition"

    def get_cluster_id(self, partition: PartitionDescription) -> str:
        return self.context["tenant_public_id"]

    def get_topic_name(self, partition: PartitionDescription) -> str:
        return self.context["topic_name"]

    @extend_schema_field(BrokerIdSerializer(allow_null=True))
    def get_leader(self, partition: PartitionDescription) -> dict[str, int] | None:
        return {"broker_id": partition.leader} if partition.leader >= 0 else None

    @extend_schema_field(BrokerIdSerializer(many=True))
    def get_replicas(self, partition: PartitionDescription) -> list[dict[str, int]]:
        return [{"broker_id": broker} for broker in partition.replicas]

    @extend_schema_field(BrokerIdSerializer(many=True))
    def get_isr(self, partition: PartitionDescription) -> list[dict[str, int]]:
        return [{"broker_id": broker} for broker in partition.isr]

    def get_is_under_replicated(self, partition: PartitionDescription) -> bool:
        return self._health(partition).is_under_replicated

    def get_is_under_min_isr(self, partition: PartitionDescription) -> bool:
        return self._health(partition).is_under_min_isr

    def get_is_offline(self, partition: PartitionDescription) -> bool:
        return self._health(partition).is_offline

    def _health(self, partition: PartitionDescription) -> PartitionHealth:
        return partition_health(partition.leader, partition.replicas, partition.isr, self.context["min_insync_replicas"])


class ReplicaSerializer(serializers.Serializer):
    """Confluent's KafkaReplica: one broker's replica of a partition. The context gives
    ``tenant_public_id``, ``topic_name`` and ``partition_id``."""

    kind = serializers.SerializerMethodField()
    metadata = serializers.SerializerMethodField()
    cluster_id = serializers.SerializerMethodField()
    topic_name = serializers.SerializerMethodField()
    partition_id = serializers.SerializerMethodField()
    broker_id = serializers.IntegerField()
    is_leader = serializers.BooleanField()
    is_in_sync = serializers.BooleanField()
    broker = serializers.SerializerMethodField()

    def get_kind(self, replica: dict[str, Any]) -> str:
        return "KafkaReplica"

    @extend_schema_field(ResourceMetadataSerializer)
    def get_metadata(self, replica: dict[str, Any]) -> dict[str, str]:
        topic_name, partition_id = self.context["topic_name"], self.context["partition_id"]
        return {
            "self": link(
                self.context["request"], "api:topic-partition-replica", topic_name=topic_name, partition_id=partition_id, broker_id=replica["broker_id"]
            ),
            "resource_name": resource_name(
                self.context["tenant_public_id"], f"topic={topic_name}", f"partition={partition_id}", f"replica={replica['broker_id']}"
            ),
        }

    def get_cluster_id(self, replica: dict[str, Any]) -> str:
        return self.context["tenant_public_id"]

    def get_topic_name(self, replica: dict[str, Any]) -> str:
        return self.context["topic_name"]

    def get_partition_id(self, replica: dict[str, Any]) -> int:
        return self.context["partition_id"]

    @extend_schema_field(RelatedLinkSerializer)
    def get_broker(self, replica: dict[str, Any]) -> dict[str, str]:
        return {"related": link(self.context["request"], "api:broker-detail", broker_id=replica["broker_id"])}


class TopicConfigSerializer(serializers.Serializer):
    kind = serializers.SerializerMethodField()
    cluster_id = serializers.SerializerMethodField()
    topic_name = serializers.SerializerMethodField()
    name = serializers.CharField()
    value = serializers.CharField()
    is_default = serializers.BooleanField()
    is_read_only = serializers.SerializerMethodField()
    is_sensitive = serializers.SerializerMethodField()
    source = serializers.CharField()
    type = serializers.CharField()
    documentation = serializers.CharField()

    def get_kind(self, entry: TopicConfigEntry) -> str:
        return "KafkaTopicConfig"

    def get_cluster_id(self, entry: TopicConfigEntry) -> str:
        return self.context["tenant_public_id"]

    def get_topic_name(self, entry: TopicConfigEntry) -> str:
        return self.context["topic_name"]

    def get_is_read_only(self, entry: TopicConfigEntry) -> bool:
        return False

    def get_is_sensitive(self, entry: TopicConfigEntry) -> bool:
        return False

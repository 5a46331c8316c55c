"""Topic, partition and config shapes (Confluent REST v3: KafkaTopic, KafkaPartition,
KafkaTopicConfig) and the inputs that create and change them."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from webapp.api.serializers.common import RelatedLinkSerializer, ResourceMetadataSerializer, link, resource_name
from webapp.catalog.models import Topic
from webapp.catalog.topic_configs import TopicConfigEntry
from webapp.provisioning.facade import PartitionDescription


class TopicCreateSerializer(serializers.Serializer):
    topic_name = serializers.CharField(max_length=300, allow_blank=True, trim_whitespace=False)
    partitions_count = serializers.IntegerField(default=1, min_value=-(2**31), max_value=2**31 - 1)
    replication_factor = serializers.IntegerField(default=1, min_value=-(2**15), max_value=2**15 - 1)
    configs = serializers.ListField(child=serializers.DictField(child=serializers.CharField(allow_null=True)), default=list)

    def validate_configs(self, value: list[dict[str, Any]]) -> dict[str, Any]:
        """Confluent's ``[{"name": ..., "value": ...}]`` as a mapping."""
        configs: dict[str, Any] = {}
        for entry in value:
            if "name" not in entry or entry["name"] is None:
                raise serializers.ValidationError("Each config needs a 'name' and a 'value'.")
            configs[entry["name"]] = entry.get("value")
        return configs


class PartitionsGrowSerializer(serializers.Serializer):
    partitions_count = serializers.IntegerField(min_value=-(2**31), max_value=2**31 - 1)


class ConfigAlterEntrySerializer(serializers.Serializer):
    name = serializers.CharField(max_length=255)
    value = serializers.CharField(required=False, allow_null=True, allow_blank=True)
    operation = serializers.ChoiceField(choices=["SET", "DELETE"], default="SET")


class ConfigAlterSerializer(serializers.Serializer):
    data = ConfigAlterEntrySerializer(many=True, allow_empty=False)


class TopicSerializer(serializers.Serializer):
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
    created_at = serializers.DateTimeField()

    def get_kind(self, topic: Topic) -> str:
        return "KafkaTopic"

    @extend_schema_field(ResourceMetadataSerializer)
    def get_metadata(self, topic: Topic) -> dict[str, str]:
        tenant_id = self.context["tenant_public_id"]
        return {
            "self": link(self.context["request"], "api:topic-detail", topic_name=topic.name),
            "resource_name": resource_name(tenant_id, f"topic={topic.name}"),
        }

    def get_cluster_id(self, topic: Topic) -> str:
        # Each tenant is its own logical cluster, as in Confluent Cloud.
        return self.context["tenant_public_id"]

    def get_is_internal(self, topic: Topic) -> bool:
        return False

    @extend_schema_field(RelatedLinkSerializer)
    def get_partitions(self, topic: Topic) -> dict[str, str]:
        return {"related": link(self.context["request"], "api:topic-partitions", topic_name=topic.name)}

    @extend_schema_field(RelatedLinkSerializer)
    def get_configs(self, topic: Topic) -> dict[str, str]:
        return {"related": link(self.context["request"], "api:topic-configs", topic_name=topic.name)}


class TopicWithJobSerializer(TopicSerializer):
    job = serializers.SerializerMethodField()

    @extend_schema_field(serializers.DictField())
    def get_job(self, topic: Topic) -> dict[str, Any] | None:
        return self.context.get("job")


class BrokerIdSerializer(serializers.Serializer):
    broker_id = serializers.IntegerField()


class PartitionSerializer(serializers.Serializer):
    """A partition's placement and, when its leader answered, its offsets and size.
    ``available`` false means the figures are missing because the leader did not answer."""

    kind = serializers.SerializerMethodField()
    cluster_id = serializers.SerializerMethodField()
    topic_name = serializers.SerializerMethodField()
    partition_id = serializers.IntegerField(source="partition")
    leader = serializers.SerializerMethodField()
    leader_epoch = serializers.IntegerField()
    replicas = serializers.SerializerMethodField()
    isr = serializers.SerializerMethodField()
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

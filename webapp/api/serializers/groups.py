"""Consumer group shapes (Confluent REST v3: KafkaConsumerGroup, KafkaConsumer,
KafkaConsumerLag, KafkaConsumerGroupLagSummary) and the input of an offset reset.

Every output serializer reads the dataclasses of ``webapp.consumer_groups``; the context
gives ``request`` and ``tenant_public_id`` (the tenant is the cluster), and for members and
lags the ``consumer_group_id``.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from webapp.api.serializers.common import RelatedLinkSerializer, ResourceMetadataSerializer, link, resource_name
from webapp.api.serializers.strict import InputSerializer
from webapp.consumer_groups import RESET_TARGETS, Group, GroupLag, Member, PartitionLag, ResetRequest
from weir import ConsumerGroupState, ConsumerGroupType

STATE_NAMES = [state.name for state in ConsumerGroupState]
TYPE_NAMES = [group_type.name for group_type in ConsumerGroupType if group_type is not ConsumerGroupType.UNKNOWN]  # the types one can list by


def _group_resource(context: dict[str, Any], group_id: str, *parts: str) -> str:
    return resource_name(context["tenant_public_id"], f"consumer-group={group_id}", *parts)


class TopicPartitionSerializer(serializers.Serializer):
    topic_name = serializers.CharField()
    partition_id = serializers.IntegerField()

    def to_representation(self, pair: tuple[str, int]) -> dict[str, Any]:
        return {"topic_name": pair[0], "partition_id": pair[1]}


class CoordinatorSerializer(serializers.Serializer):
    broker_id = serializers.IntegerField()
    host = serializers.CharField()
    port = serializers.IntegerField()
    related = serializers.SerializerMethodField()

    def get_related(self, coordinator: Any) -> str:
        return link(self.context["request"], "api:broker-detail", broker_id=coordinator.broker_id)


class ConsumerGroupSerializer(serializers.Serializer):
    """A group: its state (a ``weir.ConsumerGroupState`` name), type (``weir.ConsumerGroupType``),
    assignor, coordinator and member count, with links to its members and lag."""

    kind = serializers.SerializerMethodField()
    metadata = serializers.SerializerMethodField()
    cluster_id = serializers.SerializerMethodField()
    consumer_group_id = serializers.CharField(source="group_id")
    is_simple = serializers.BooleanField(help_text="The group only has offsets committed by consumers that assign partitions themselves.")
    partition_assignor = serializers.CharField(source="assignor")
    state = serializers.ChoiceField(choices=STATE_NAMES)
    type = serializers.ChoiceField(
        source="group_type",
        choices=[group_type.name for group_type in ConsumerGroupType],
        help_text="CONSUMER: Kafka's consumer protocol (KIP-848: the weir SDK, group.protocol=consumer); "
        "CLASSIC: JoinGroup/SyncGroup (stock Kafka clients by default), or a group with committed offsets only. "
        "A classic group's partition_assignor is the client-side assignor its members chose.",
    )
    members_count = serializers.SerializerMethodField()
    coordinator = CoordinatorSerializer(allow_null=True)
    consumers = serializers.SerializerMethodField()
    lags = serializers.SerializerMethodField()
    lag_summary = serializers.SerializerMethodField()

    def get_kind(self, group: Group) -> str:
        return "KafkaConsumerGroup"

    @extend_schema_field(ResourceMetadataSerializer)
    def get_metadata(self, group: Group) -> dict[str, str]:
        return {
            "self": link(self.context["request"], "api:consumer-group-detail", consumer_group_id=group.group_id),
            "resource_name": _group_resource(self.context, group.group_id),
        }

    def get_cluster_id(self, group: Group) -> str:
        return self.context["tenant_public_id"]

    def get_members_count(self, group: Group) -> int:
        return len(group.members)

    @extend_schema_field(RelatedLinkSerializer)
    def get_consumers(self, group: Group) -> dict[str, str]:
        return {"related": link(self.context["request"], "api:consumer-group-consumers", consumer_group_id=group.group_id)}

    @extend_schema_field(RelatedLinkSerializer)
    def get_lags(self, group: Group) -> dict[str, str]:
        return {"related": link(self.context["request"], "api:consumer-group-lags", consumer_group_id=group.group_id)}

    @extend_schema_field(RelatedLinkSerializer)
    def get_lag_summary(self, group: Group) -> dict[str, str]:
        return {"related": link(self.context["request"], "api:consumer-group-lag-summary", consumer_group_id=group.group_id)}


class ConsumerSerializer(serializers.Serializer):
    """A member of a group: the partitions it owns now (``assignments``) and those the
    coordinator is moving it to (``target_assignments``; equal once the group is stable)."""

    kind = serializers.SerializerMethodField()
    metadata = serializers.SerializerMethodField()
    cluster_id = serializers.SerializerMethodField()
    consumer_group_id = serializers.SerializerMethodField()
    consumer_id = serializers.CharField(source="member_id")
    instance_id = serializers.CharField(allow_null=True, help_text="group.instance.id of a static member; null for a dynamic one.")
    client_id = serializers.CharField()
    host = serializers.CharField()
    assignments = TopicPartitionSerializer(source="assignment", many=True)
    target_assignments = TopicPartitionSerializer(source="target_assignment", many=True)

    def get_kind(self, member: Member) -> str:
        return "KafkaConsumer"

    @extend_schema_field(ResourceMetadataSerializer)
    def get_metadata(self, member: Member) -> dict[str, str]:
        group_id = self.context["consumer_group_id"]
        return {
            "self": link(self.context["request"], "api:consumer-group-consumer", consumer_group_id=group_id, consumer_id=member.member_id),
            "resource_name": _group_resource(self.context, group_id, f"consumer={member.member_id}"),
        }

    def get_cluster_id(self, member: Member) -> str:
        return self.context["tenant_public_id"]

    def get_consumer_group_id(self, member: Member) -> str:
        return self.context["consumer_group_id"]


class ConsumerLagSerializer(serializers.Serializer):
    """One partition of a group: ``current_offset`` (committed; null when nothing is), the
    partition's ``log_end_offset`` (null when its leader did not answer), their difference
    ``lag``, and the member owning the partition now."""

    kind = serializers.SerializerMethodField()
    cluster_id = serializers.SerializerMethodField()
    consumer_group_id = serializers.SerializerMethodField()
    topic_name = serializers.CharField(source="topic")
    partition_id = serializers.IntegerField(source="partition")
    current_offset = serializers.IntegerField(source="committed_offset", allow_null=True)
    log_end_offset = serializers.IntegerField(source="end_offset", allow_null=True)
    lag = serializers.IntegerField(allow_null=True)
    consumer_id = serializers.SerializerMethodField()
    instance_id = serializers.SerializerMethodField()
    client_id = serializers.SerializerMethodField()

    def get_kind(self, row: PartitionLag) -> str:
        return "KafkaConsumerLag"

    def get_cluster_id(self, row: PartitionLag) -> str:
        return self.context["tenant_public_id"]

    def get_consumer_group_id(self, row: PartitionLag) -> str:
        return self.context["consumer_group_id"]

    @extend_schema_field(serializers.CharField(allow_null=True))
    def get_consumer_id(self, row: PartitionLag) -> str | None:
        return row.owner.member_id if row.owner else None

    @extend_schema_field(serializers.CharField(allow_null=True))
    def get_instance_id(self, row: PartitionLag) -> str | None:
        return row.owner.instance_id if row.owner else None

    @extend_schema_field(serializers.CharField(allow_null=True))
    def get_client_id(self, row: PartitionLag) -> str | None:
        return row.owner.client_id if row.owner else None


class LagSummarySerializer(serializers.Serializer):
    """The group's total lag and its most lagging partition (the ``max_lag_*`` fields are
    null when no partition has a committed offset)."""

    kind = serializers.SerializerMethodField()
    metadata = serializers.SerializerMethodField()
    cluster_id = serializers.SerializerMethodField()
    consumer_group_id = serializers.SerializerMethodField()
    max_lag_consumer_id = serializers.SerializerMethodField()
    max_lag_instance_id = serializers.SerializerMethodField()
    max_lag_client_id = serializers.SerializerMethodField()
    max_lag_topic_name = serializers.SerializerMethodField()
    max_lag_partition_id = serializers.SerializerMethodField()
    max_lag = serializers.SerializerMethodField()
    total_lag = serializers.IntegerField()
    partitions_count = serializers.SerializerMethodField()

    def get_kind(self, lag: GroupLag) -> str:
        return "KafkaConsumerGroupLagSummary"

    @extend_schema_field(ResourceMetadataSerializer)
    def get_metadata(self, lag: GroupLag) -> dict[str, str]:
        group_id = self.context["consumer_group_id"]
        return {
            "self": link(self.context["request"], "api:consumer-group-lag-summary", consumer_group_id=group_id),
            "resource_name": _group_resource(self.context, group_id, "lag-summary"),
        }

    def get_cluster_id(self, lag: GroupLag) -> str:
        return self.context["tenant_public_id"]

    def get_consumer_group_id(self, lag: GroupLag) -> str:
        return self.context["consumer_group_id"]

    @extend_schema_field(serializers.CharField(allow_null=True))
    def get_max_lag_consumer_id(self, lag: GroupLag) -> str | None:
        row = lag.max_lag_partition
        return row.owner.member_id if row and row.owner else None

    @extend_schema_field(serializers.CharField(allow_null=True))
    def get_max_lag_instance_id(self, lag: GroupLag) -> str | None:
        row = lag.max_lag_partition
        return row.owner.instance_id if row and row.owner else None

    @extend_schema_field(serializers.CharField(allow_null=True))
    def get_max_lag_client_id(self, lag: GroupLag) -> str | None:
        row = lag.max_lag_partition
        return row.owner.client_id if row and row.owner else None

    @extend_schema_field(serializers.CharField(allow_null=True))
    def get_max_lag_topic_name(self, lag: GroupLag) -> str | None:
        row = lag.max_lag_partition
        return row.topic if row else None

    @extend_schema_field(serializers.IntegerField(allow_null=True))
    def get_max_lag_partition_id(self, lag: GroupLag) -> int | None:
        row = lag.max_lag_partition
        return row.partition if row else None

    @extend_schema_field(serializers.IntegerField(allow_null=True))
    def get_max_lag(self, lag: GroupLag) -> int | None:
        row = lag.max_lag_partition
        return row.lag if row else None

    def get_partitions_count(self, lag: GroupLag) -> int:
        return len(lag.partitions)


class PartitionOffsetSerializer(InputSerializer):
    topic_name = serializers.CharField(max_length=249)
    partition_id = serializers.IntegerField(min_value=0, max_value=2**31 - 1)
    offset = serializers.IntegerField(min_value=0, max_value=2**63 - 1)


class OffsetResetSerializer(InputSerializer):
    """Where to move a group's committed offsets; a dry run (the default) only answers the plan.

    ``to``: ``earliest``, ``latest``, ``timestamp`` (the first offset at or after
    ``timestamp``) or ``offset`` (``offset`` everywhere) over every partition of ``topics``;
    or ``offsets``: exactly the partitions and offsets listed in ``offsets``.
    """

    to = serializers.ChoiceField(choices=list(RESET_TARGETS))
    topics = serializers.ListField(child=serializers.CharField(max_length=249), required=False, default=list, max_length=1000)
    timestamp = serializers.DateTimeField(required=False, help_text="With to=timestamp: an ISO 8601 time.")
    offset = serializers.IntegerField(required=False, min_value=0, max_value=2**63 - 1, help_text="With to=offset.")
    offsets = PartitionOffsetSerializer(many=True, required=False, max_length=10_000, help_text="With to=offsets.")
    dry_run = serializers.BooleanField(default=True, help_text="true (default): answer the plan and change nothing.")

    def validate(self, data: dict[str, Any]) -> dict[str, Any]:
        to = data["to"]
        if to == "offsets":
            if not data.get("offsets"):
                raise serializers.ValidationError({"offsets": ["Name at least one partition and its new offset."]})
            if data.get("topics"):
                raise serializers.ValidationError({"topics": ["With to=offsets the offsets name their own topics."]})
        elif not data.get("topics"):
            raise serializers.ValidationError({"topics": ["Name at least one topic whose offsets to reset."]})
        if to == "timestamp" and "timestamp" not in data:
            raise serializers.ValidationError({"timestamp": ["A time is needed with to=timestamp."]})
        if "timestamp" in data and data["timestamp"].timestamp() < 0:
            raise serializers.ValidationError({"timestamp": ["Record times start at 1970-01-01T00:00:00Z."]})
        if to == "offset" and "offset" not in data:
            raise serializers.ValidationError({"offset": ["An offset is needed with to=offset."]})
        return data

    def reset_request(self) -> ResetRequest:
        data = self.validated_data
        timestamp = data.get("timestamp")
        return ResetRequest(
            to=data["to"],
            topics=list(dict.fromkeys(data.get("topics") or [])),
            timestamp_ms=int(timestamp.timestamp() * 1000) if timestamp is not None else None,
            offset=data.get("offset"),
            offsets={(entry["topic_name"], entry["partition_id"]): entry["offset"] for entry in data.get("offsets") or []},
        )


class PlannedChangeSerializer(serializers.Serializer):
    topic_name = serializers.CharField(source="topic")
    partition_id = serializers.IntegerField(source="partition")
    current_offset = serializers.IntegerField(allow_null=True, help_text="The committed offset now; null when nothing is committed.")
    new_offset = serializers.IntegerField()


class OffsetResetResultSerializer(serializers.Serializer):
    kind = serializers.CharField()
    cluster_id = serializers.CharField()
    consumer_group_id = serializers.CharField()
    dry_run = serializers.BooleanField()
    applied = serializers.BooleanField()
    active_members_count = serializers.IntegerField(help_text="Members the group had; offsets can only be applied while it has none.")
    data = PlannedChangeSerializer(many=True)

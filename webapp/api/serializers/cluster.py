"""The tenant's logical cluster and its brokers (Confluent REST v3: KafkaCluster, KafkaBroker),
with the health of the tenant's partitions."""

from __future__ import annotations

from rest_framework import serializers

from webapp.api.serializers.common import RelatedLinkSerializer, ResourceMetadataSerializer
from webapp.catalog.facade import BrokerPartitionCounts
from webapp.fleet.facade import BrokerNode


class ClusterSerializer(serializers.Serializer):
    """A tenant is one logical cluster (``cluster_id`` is its public id); the counts are over
    its own partitions only, as the controller last recorded them."""

    kind = serializers.CharField()
    metadata = ResourceMetadataSerializer()
    cluster_id = serializers.CharField()
    topics = RelatedLinkSerializer()
    brokers = RelatedLinkSerializer()
    topics_count = serializers.IntegerField()
    partitions_count = serializers.IntegerField()
    under_replicated_partitions_count = serializers.IntegerField(help_text="Partitions whose ISR is smaller than their replica list.")
    under_min_isr_partitions_count = serializers.IntegerField(help_text="Partitions without a leader or whose ISR is smaller than min.insync.replicas.")
    offline_partitions_count = serializers.IntegerField(help_text="Partitions without a leader.")
    brokers_count = serializers.IntegerField()
    broker_states = serializers.DictField(child=serializers.IntegerField(), help_text="How many brokers are in each state (ONLINE, OFFLINE, ...).")


class BrokerSerializer(serializers.ModelSerializer):
    """A broker and how many of the counted partitions it leads and hosts. The context's
    ``partition_counts`` maps node ids to :class:`BrokerPartitionCounts`."""

    kind = serializers.SerializerMethodField()
    broker_id = serializers.IntegerField(source="node_id")
    leader_partitions_count = serializers.SerializerMethodField(
        help_text="Partitions of the caller's tenant this broker leads (every tenant's for an operator outside any tenant)."
    )
    replica_partitions_count = serializers.SerializerMethodField(
        help_text="Partitions of the caller's tenant this broker holds a replica of, leader or follower."
    )

    class Meta:
        model = BrokerNode
        fields = ["kind", "broker_id", "host", "port", "rack", "state", "last_seen_at", "registered_at", "leader_partitions_count", "replica_partitions_count"]

    def get_kind(self, broker: BrokerNode) -> str:
        return "KafkaBroker"

    def get_leader_partitions_count(self, broker: BrokerNode) -> int:
        return self._counts(broker).leader

    def get_replica_partitions_count(self, broker: BrokerNode) -> int:
        return self._counts(broker).replicas

    def _counts(self, broker: BrokerNode) -> BrokerPartitionCounts:
        counts: dict[int, BrokerPartitionCounts] = self.context["partition_counts"]
        return counts.get(broker.node_id, BrokerPartitionCounts())

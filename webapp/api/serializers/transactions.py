"""Transaction shapes: a transactional id's state (KafkaTransaction, after Kafka's DescribeTransactions)
and a hanging transaction (KafkaHangingTransaction, after ``kafka-transactions.sh find-hanging``).

The output serializers read ``webapp.transactions.Transaction`` and ``weir.admin.HangingTransaction``;
the context gives ``request`` and ``tenant_public_id`` (the tenant is the cluster).
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from webapp.api.serializers.common import ResourceMetadataSerializer, link, resource_name
from webapp.api.serializers.groups import TopicPartitionSerializer
from webapp.transactions import STATE_NAMES, Transaction


class TransactionSerializer(serializers.Serializer):
    """A transactional id: its state, producer, timeout, open transaction's start and partitions, and whether it hangs."""

    kind = serializers.SerializerMethodField()
    metadata = serializers.SerializerMethodField()
    cluster_id = serializers.SerializerMethodField()
    transactional_id = serializers.CharField()
    state = serializers.ChoiceField(choices=STATE_NAMES, help_text="Kafka's transaction state.")
    producer_id = serializers.IntegerField()
    producer_epoch = serializers.IntegerField()
    transaction_timeout_ms = serializers.IntegerField(source="timeout_ms")
    coordinator_id = serializers.IntegerField(help_text="The broker coordinating the transactional id (-1 when unknown).")
    transaction_start_time_ms = serializers.IntegerField(source="start_time_ms", allow_null=True, help_text="Null when no transaction is open.")
    open_for_ms = serializers.IntegerField(allow_null=True, help_text="How long the ongoing transaction has been open; null when none is.")
    hanging = serializers.BooleanField(help_text="Open longer than its timeout: it holds back the last stable offset of its partitions.")
    partitions = TopicPartitionSerializer(many=True, help_text="The partitions in the open transaction.")

    def get_kind(self, transaction: Transaction) -> str:
        return "KafkaTransaction"

    @extend_schema_field(ResourceMetadataSerializer)
    def get_metadata(self, transaction: Transaction) -> dict[str, str]:
        return {
            "self": link(self.context["request"], "api:transaction-detail", transactional_id=transaction.transactional_id),
            "resource_name": resource_name(self.context["tenant_public_id"], f"transactional-id={transaction.transactional_id}"),
        }

    def get_cluster_id(self, transaction: Transaction) -> str:
        return str(self.context["tenant_public_id"])


class HangingTransactionSerializer(serializers.Serializer):
    """A producer's transaction left open in a partition that no coordinator will end."""

    kind = serializers.SerializerMethodField()
    topic_name = serializers.CharField(source="topic")
    partition_id = serializers.IntegerField(source="partition")
    producer_id = serializers.IntegerField()
    producer_epoch = serializers.IntegerField()
    coordinator_epoch = serializers.IntegerField(help_text="Of the producer's last marker in the partition; -1 when none.")
    start_offset = serializers.IntegerField(help_text="The open transaction's first offset: the partition's last stable offset is held there.")
    last_timestamp_ms = serializers.IntegerField(help_text="Of the producer's last batch in the partition.")
    open_for_ms = serializers.IntegerField()

    def get_kind(self, hanging: Any) -> str:
        return "KafkaHangingTransaction"

"""AddPartitionsToTxn (key 24, v0-v3): partitions join the producer's transaction, via ``requests.transactions``.

v4+ (KIP-890's batched and verify-only form, sent by brokers) is not served.
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from broker_nodes.kafka_protocol import api
from broker_nodes.kafka_protocol.handlers.admin_common import build, response_module
from broker_nodes.kafka_protocol.handlers.data_common import throttle_time
from broker_nodes.requests import transactions

ADD_PARTITIONS_TO_TXN_KEY = 24


@api.handles(ADD_PARTITIONS_TO_TXN_KEY, 0, 3)
def handle_add_partitions_to_txn(context: api.KafkaRequestContext, request: Any) -> Any:
    topics: dict[str, list[int]] = {}
    for topic in request.v3_and_below_topics:
        topics.setdefault(topic.name, []).extend(int(partition) for partition in topic.partitions)
    outcomes = transactions.add_partitions_to_txn(
        context.broker,
        context.call,
        transactional_id=request.v3_and_below_transactional_id,
        producer_id=request.v3_and_below_producer_id,
        producer_epoch=request.v3_and_below_producer_epoch,
        topics=topics,
    )
    schema = response_module(context)
    results = tuple(
        build(
            schema.AddPartitionsToTxnTopicResult,
            name=topic,
            results_by_partition=tuple(
                build(schema.AddPartitionsToTxnPartitionResult, partition_index=partition, partition_error_code=ErrorCode(code))
                for partition, (code, _) in partitions.items()
            ),
        )
        for topic, partitions in outcomes.items()
    )
    return build(schema.AddPartitionsToTxnResponse, throttle_time=throttle_time(0), results_by_topic_v3_and_below=results)

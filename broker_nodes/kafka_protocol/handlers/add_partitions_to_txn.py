"""AddPartitionsToTxn (key 24, v0-v5): partitions join the producer's transaction, via ``requests.transactions``.

v0-v3 carry one client's transaction. v4-v5 (KIP-890) carry several, each added or, with
``VerifyOnly``, only checked against the producer's ongoing transaction; Kafka's brokers send
them, and Weir serves them to callers with ALTER on their cluster (``add_partitions_to_txns``).
v5 only allows the answer TRANSACTION_ABORTABLE, which Weir's coordinator never gives here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kio.schema.errors import ErrorCode

from broker_nodes.kafka_protocol import api
from broker_nodes.kafka_protocol.handlers.admin_common import build, response_module
from broker_nodes.kafka_protocol.handlers.data_common import throttle_time
from broker_nodes.requests import transactions

ADD_PARTITIONS_TO_TXN_KEY = 24
FIRST_BATCHED_VERSION = 4


@api.handles(ADD_PARTITIONS_TO_TXN_KEY, 0, 5)
def handle_add_partitions_to_txn(context: api.KafkaRequestContext, request: Any) -> Any:
    schema = response_module(context)
    if context.api_version >= FIRST_BATCHED_VERSION:
        return _batched(context, schema, request)
    outcomes = transactions.add_partitions_to_txn(
        context.broker,
        context.call,
        transactional_id=request.v3_and_below_transactional_id,
        producer_id=request.v3_and_below_producer_id,
        producer_epoch=request.v3_and_below_producer_epoch,
        topics=_topics(request.v3_and_below_topics),
    )
    return build(schema.AddPartitionsToTxnResponse, throttle_time=throttle_time(0), results_by_topic_v3_and_below=_topic_results(schema, outcomes))


def _batched(context: api.KafkaRequestContext, schema: Any, request: Any) -> Any:
    outcome = transactions.add_partitions_to_txns(
        context.broker,
        context.call,
        [
            transactions.TransactionPartitions(
                transactional_id=transaction.transactional_id,
                producer_id=int(transaction.producer_id),
                producer_epoch=int(transaction.producer_epoch),
                topics=_topics(transaction.topics),
                verify_only=bool(transaction.verify_only),
            )
            for transaction in request.transactions
        ],
    )
    results = tuple(
        build(schema.AddPartitionsToTxnResult, transactional_id=transactional_id, topic_results=_topic_results(schema, outcomes))
        for transactional_id, outcomes in outcome.results.items()
    )
    return build(schema.AddPartitionsToTxnResponse, throttle_time=throttle_time(0), error_code=ErrorCode(outcome.error_code), results_by_transaction=results)


def _topics(topics: Any) -> dict[str, list[int]]:
    wanted: dict[str, list[int]] = {}
    for topic in topics:
        wanted.setdefault(topic.name, []).extend(int(partition) for partition in topic.partitions)
    return wanted


def _topic_results(schema: Any, outcomes: Mapping[str, Mapping[int, tuple[int, str]]]) -> tuple[Any, ...]:
    return tuple(
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

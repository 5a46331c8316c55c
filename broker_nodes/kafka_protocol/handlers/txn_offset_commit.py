"""TxnOffsetCommit (key 28, v0-v4): a consumer's offsets join a producer's transaction, via ``requests.transactions``.

Sent by a transactional producer to the group's coordinator after AddOffsetsToTxn
(``send_offsets_to_transaction``); the offsets become the group's committed offsets when the
transaction commits. v2 adds each partition's committed leader epoch; v3 adds the consumer's
generation, member id and group instance id, which fence a zombie consumer's producer
(KIP-447); v4 is v3 from a client that handles KIP-890's errors. v5 (transaction version 2,
where the coordinator adds the offsets partition itself) is not offered: Weir still expects
AddOffsetsToTxn. Like OffsetCommit, the answer has no error code for the whole request: a
refusal of the request is every partition's code.
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from broker_nodes.kafka_protocol import api
from broker_nodes.kafka_protocol.handlers.admin_common import build, response_module
from broker_nodes.kafka_protocol.handlers.data_common import throttle_time
from broker_nodes.kafka_protocol.handlers.offset_commit import commit_entries
from broker_nodes.requests import transactions
from broker_nodes.server.errors import InvalidRequestError, error_code_and_message

TXN_OFFSET_COMMIT_KEY = 28
NO_GENERATION = -1  # before v3: the producer names no consumer


@api.handles(TXN_OFFSET_COMMIT_KEY, 0, 4)
def handle_txn_offset_commit(context: api.KafkaRequestContext, request: Any) -> Any:
    schema = response_module(context)
    offsets = commit_entries(request)
    try:
        outcomes = transactions.txn_offset_commit(
            context.broker,
            context.call,
            transactional_id=request.transactional_id,
            group_id=request.group_id,
            producer_id=request.producer_id,
            producer_epoch=request.producer_epoch,
            generation_id=getattr(request, "generation_id", NO_GENERATION),
            member_id=getattr(request, "member_id", ""),
            group_instance_id=getattr(request, "group_instance_id", None) or "",
            offsets=offsets,
        )
    except InvalidRequestError as error:  # the request as a whole (a partition named twice): Kafka's answer is per partition
        outcome = error_code_and_message(error)
        outcomes = {}
        for entry in offsets:
            outcomes.setdefault(entry.topic, {})[entry.partition] = outcome
    return build(
        schema.TxnOffsetCommitResponse,
        throttle_time=throttle_time(0),
        topics=tuple(
            schema.TxnOffsetCommitResponseTopic(
                name=topic,
                partitions=tuple(
                    schema.TxnOffsetCommitResponsePartition(partition_index=partition, error_code=ErrorCode(code))
                    for partition, (code, _) in partitions.items()
                ),
            )
            for topic, partitions in outcomes.items()
        ),
    )

"""AddOffsetsToTxn (key 25, v0-v3): the group's offsets partition joins the producer's transaction, via ``requests.transactions``."""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from broker_nodes.kafka_protocol import api
from broker_nodes.kafka_protocol.handlers.admin_common import build, response_module
from broker_nodes.kafka_protocol.handlers.data_common import throttle_time
from broker_nodes.requests import transactions

ADD_OFFSETS_TO_TXN_KEY = 25


@api.handles(ADD_OFFSETS_TO_TXN_KEY, 0, 3)
def handle_add_offsets_to_txn(context: api.KafkaRequestContext, request: Any) -> Any:
    outcome = transactions.add_offsets_to_txn(
        context.broker,
        context.call,
        transactional_id=request.transactional_id,
        producer_id=request.producer_id,
        producer_epoch=request.producer_epoch,
        group_id=request.group_id,
    )
    return build(response_module(context).AddOffsetsToTxnResponse, throttle_time=throttle_time(0), error_code=ErrorCode(outcome.error_code))

"""EndTxn (key 26, v0-v5): commit or abort the producer's transaction, via ``requests.transactions``.

From v5 (KIP-890's transactions version 2) the producer epoch is bumped at every commit and
abort and the answer carries the id and epoch to use next; older clients cannot learn a new
epoch from the answer, so their epoch stays as Kafka keeps it for them.
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from broker_nodes.kafka_protocol import api
from broker_nodes.kafka_protocol.handlers.admin_common import build, response_module
from broker_nodes.kafka_protocol.handlers.data_common import throttle_time
from broker_nodes.requests import transactions

END_TXN_KEY = 26
EPOCH_BUMP_VERSION = 5  # transactions version 2: the answer carries the bumped epoch


@api.handles(END_TXN_KEY, 0, 5)
def handle_end_txn(context: api.KafkaRequestContext, request: Any) -> Any:
    outcome = transactions.end_txn(
        context.broker,
        context.call,
        transactional_id=request.transactional_id,
        producer_id=request.producer_id,
        producer_epoch=request.producer_epoch,
        commit=bool(request.committed),
        bump_epoch=context.api_version >= EPOCH_BUMP_VERSION,
    )
    return build(
        response_module(context).EndTxnResponse,
        throttle_time=throttle_time(0),
        error_code=ErrorCode(outcome.error_code),
        producer_id=outcome.producer_id,
        producer_epoch=outcome.producer_epoch,
    )

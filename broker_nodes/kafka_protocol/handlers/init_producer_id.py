"""InitProducerId (key 22, v0-v4): a producer id and epoch for an idempotent producer (``requests.producer_ids``),
or, with a transactional id, from the id's transaction coordinator (``requests.transactions``), which fences
older producers of the id.
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from broker_nodes.kafka_protocol import api
from broker_nodes.kafka_protocol.handlers.admin_common import build, response_module
from broker_nodes.kafka_protocol.handlers.data_common import throttle_time
from broker_nodes.requests import producer_ids, transactions

INIT_PRODUCER_ID_KEY = 22


@api.handles(INIT_PRODUCER_ID_KEY, 0, 4)
def handle_init_producer_id(context: api.KafkaRequestContext, request: Any) -> Any:
    producer_id = getattr(request, "producer_id", -1)
    producer_epoch = getattr(request, "producer_epoch", -1)
    if request.transactional_id:
        outcome = transactions.init_transactional_producer(
            context.broker,
            context.call,
            transactional_id=request.transactional_id,
            timeout_ms=int(request.transaction_timeout.total_seconds() * 1000),
            producer_id=producer_id,
            producer_epoch=producer_epoch,
        )
    else:
        outcome = producer_ids.init_producer_id(context.broker, context.call, transactional_id="", producer_id=producer_id, producer_epoch=producer_epoch)
    return build(
        response_module(context).InitProducerIdResponse,
        throttle_time=throttle_time(0),
        error_code=ErrorCode(outcome.error_code),
        producer_id=outcome.producer_id,
        producer_epoch=outcome.producer_epoch,
    )

"""ListTransactions (key 66, v0-v1): the caller's transactional ids this broker coordinates, via ``requests.transactions``.

Filters by Kafka state name and producer id; v1 adds ``duration_filter`` (transactions open at
least that long: the "hanging transactions" view of ``kafka-transactions.sh find-hanging``).
State names Kafka does not know are answered in ``unknown_state_filters``.
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from broker_nodes.coordinator.transactions.state import TransactionState
from broker_nodes.kafka_protocol import api
from broker_nodes.kafka_protocol.handlers.admin_common import build, response_module
from broker_nodes.kafka_protocol.handlers.data_common import throttle_time
from broker_nodes.requests import transactions

LIST_TRANSACTIONS_KEY = 66
KNOWN_STATES = frozenset(state.kafka_name for state in TransactionState)


@api.handles(LIST_TRANSACTIONS_KEY, 0, 1)
def handle_list_transactions(context: api.KafkaRequestContext, request: Any) -> Any:
    schema = response_module(context)
    state_filters = list(request.state_filters)
    listed = transactions.list_transactions(
        context.broker,
        context.call,
        states=state_filters,
        producer_ids=[int(producer_id) for producer_id in request.producer_id_filters],
        min_duration_ms=int(getattr(request, "duration_filter", -1)),
    )
    return build(
        schema.ListTransactionsResponse,
        throttle_time=throttle_time(0),
        error_code=ErrorCode.none,
        unknown_state_filters=tuple(state for state in state_filters if state not in KNOWN_STATES),
        transaction_states=tuple(
            build(schema.TransactionState, transactional_id=item.transactional_id, producer_id=item.producer_id, transaction_state=item.state)
            for item in listed
        ),
    )

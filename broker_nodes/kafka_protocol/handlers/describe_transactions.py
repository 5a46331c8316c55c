"""DescribeTransactions (key 65, v0): each transactional id's state from its coordinator, via ``requests.transactions``.

A broker answers for the ids it coordinates (NOT_COORDINATOR for the others, as Kafka does:
the admin client asks each id's coordinator). A transaction not begun has no start time
(Kafka's -1): kio encodes only non-negative timestamps, so it is sent as 0, the epoch.
"""

from __future__ import annotations

import datetime
from typing import Any

from kio.schema.errors import ErrorCode

from broker_nodes.kafka_protocol import api
from broker_nodes.kafka_protocol.handlers.admin_common import build, response_module
from broker_nodes.kafka_protocol.handlers.data_common import throttle_time
from broker_nodes.requests import transactions

DESCRIBE_TRANSACTIONS_KEY = 65


@api.handles(DESCRIBE_TRANSACTIONS_KEY, 0, 0)
def handle_describe_transactions(context: api.KafkaRequestContext, request: Any) -> Any:
    schema = response_module(context)
    described = transactions.describe_transactions(context.broker, context.call, list(request.transactional_ids))
    states = tuple(
        build(
            schema.TransactionState,
            error_code=ErrorCode(item.error_code),
            transactional_id=item.transactional_id,
            transaction_state=item.state,
            transaction_timeout=datetime.timedelta(milliseconds=item.timeout_ms),
            transaction_start_time=datetime.datetime.fromtimestamp(max(item.start_timestamp_ms, 0) / 1000, tz=datetime.UTC),
            producer_id=item.producer_id,
            producer_epoch=item.producer_epoch,
            topics=tuple(build(schema.TopicData, topic=topic, partitions=partitions) for topic, partitions in item.partitions.items()),
        )
        for item in described
    )
    return build(schema.DescribeTransactionsResponse, throttle_time=throttle_time(0), transaction_states=states)

"""DescribeProducers: the idempotent producers a partition's leader remembers (KIP-664).

Kafka requires READ on the topic; a partition led elsewhere is NOT_LEADER_OR_FOLLOWER. Without
transactions there is no coordinator epoch and no open transaction (-1 for both).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from broker_nodes.requests.outcomes import NO_ERROR, plain_error
from broker_nodes.security.access import CallContext
from broker_nodes.security.authorizer import Operation, ResourceType
from broker_nodes.security.errors import TopicAuthorizationError
from broker_nodes.server.broker import Broker
from broker_nodes.storage.producer_state import ActiveProducer


@dataclass(frozen=True, slots=True)
class ProducersOutcome:
    topic: str  # the caller's plain name
    partition: int
    error_code: int = NO_ERROR
    error_message: str = ""
    producers: tuple[ActiveProducer, ...] = field(default_factory=tuple)


def describe_producers(broker: Broker, call: CallContext, partitions: Sequence[tuple[str, int]]) -> list[ProducersOutcome]:
    """One outcome per (plain topic, partition), in order."""
    outcomes = []
    for topic, partition in partitions:
        try:
            if not call.may(Operation.READ, ResourceType.TOPIC, topic):
                raise TopicAuthorizationError(topic, "describe the producers of")
            qualified = call.qualify(topic)
            broker.replica_manager.leader_epoch(qualified, partition)  # NotLeaderOrFollowerError when led elsewhere
            producers = tuple(broker.replica_manager.partition_log(qualified, partition).active_producers())
        except Exception as error:  # this partition's answer
            code, message = plain_error(error, call, topic)
            outcomes.append(ProducersOutcome(topic, partition, code, message))
            continue
        outcomes.append(ProducersOutcome(topic, partition, producers=producers))
    return outcomes

"""OffsetForLeaderEpoch as consumers ask it (KIP-320): where an epoch ended in the leader's log.

A consumer that saw records of leader epoch E asks, after a leader change, where E ended on
the new leader; if that is below its position, its log view diverged and it truncates
(librdkafka, the Java client). The answer comes from the partition's leader-epoch cache, the
one replication uses. DESCRIBE on the topic is required, as in Kafka.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from broker_nodes.requests.outcomes import NO_ERROR, plain_error
from broker_nodes.security.access import CallContext
from broker_nodes.security.authorizer import Operation, ResourceType
from broker_nodes.security.errors import TopicAuthorizationError
from broker_nodes.server.broker import Broker


@dataclass(frozen=True, slots=True)
class EpochQuery:
    topic: str  # the caller's plain name
    partition: int
    current_leader_epoch: int  # -1: not checked
    leader_epoch: int


@dataclass(frozen=True, slots=True)
class EpochEndOutcome:
    topic: str
    partition: int
    error_code: int = NO_ERROR
    error_message: str = ""
    leader_epoch: int = -1
    end_offset: int = -1


def end_offsets(broker: Broker, call: CallContext, queries: Sequence[EpochQuery]) -> list[EpochEndOutcome]:
    """One outcome per query, in order: the largest epoch <= the one asked and the offset where it ended."""
    outcomes = []
    for query in queries:
        try:
            if not call.may(Operation.DESCRIBE, ResourceType.TOPIC, query.topic):
                raise TopicAuthorizationError(query.topic, "describe")
            epoch, end_offset = broker.replica_manager.offset_for_leader_epoch(
                call.qualify(query.topic), query.partition, query.current_leader_epoch, query.leader_epoch
            )
        except Exception as error:  # this partition's answer
            code, message = plain_error(error, call, query.topic)
            outcomes.append(EpochEndOutcome(query.topic, query.partition, code, message))
            continue
        outcomes.append(EpochEndOutcome(query.topic, query.partition, leader_epoch=epoch, end_offset=end_offset))
    return outcomes

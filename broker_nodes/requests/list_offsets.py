"""ListOffsets for both front doors: earliest (-2), latest (-1), max timestamp (-3) or by time.

Latest is the high watermark, or the last stable offset for a read_committed caller (Kafka's
isolation level of ListOffsets v2+).

DESCRIBE on the topic is required, as in Kafka; a denied partition answers
TOPIC_AUTHORIZATION_FAILED whether or not it exists.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from broker_nodes.replica_manager import READ_UNCOMMITTED
from broker_nodes.requests.outcomes import NO_ERROR, plain_error
from broker_nodes.security.access import CallContext
from broker_nodes.security.authorizer import Operation, ResourceType
from broker_nodes.security.errors import TopicAuthorizationError
from broker_nodes.server.broker import Broker


@dataclass(frozen=True, slots=True)
class ListOffsetsPartition:
    topic: str  # the caller's plain name
    partition: int
    timestamp: int  # -2 earliest, -1 latest, -3 max timestamp, else a time in ms
    current_leader_epoch: int = -1  # -1: not checked
    isolation_level: int = READ_UNCOMMITTED  # replica_manager.READ_COMMITTED: latest is the last stable offset


@dataclass(frozen=True, slots=True)
class ListOffsetsOutcome:
    topic: str
    partition: int
    error_code: int = NO_ERROR
    error_message: str = ""
    timestamp: int = -1
    offset: int = -1
    leader_epoch: int = -1


def list_offsets(broker: Broker, call: CallContext, partitions: Sequence[ListOffsetsPartition]) -> list[ListOffsetsOutcome]:
    """One outcome per partition, in request order."""
    outcomes = []
    for item in partitions:
        try:
            if not call.may(Operation.DESCRIBE, ResourceType.TOPIC, item.topic):
                raise TopicAuthorizationError(item.topic, "describe")
            found = broker.replica_manager.list_offset(
                call.qualify(item.topic), item.partition, item.timestamp, item.current_leader_epoch, item.isolation_level
            )
        except Exception as error:  # this partition's answer
            code, message = plain_error(error, call, item.topic)
            outcomes.append(ListOffsetsOutcome(item.topic, item.partition, code, message))
            continue
        outcomes.append(ListOffsetsOutcome(item.topic, item.partition, timestamp=found.timestamp, offset=found.offset, leader_epoch=found.leader_epoch))
    return outcomes

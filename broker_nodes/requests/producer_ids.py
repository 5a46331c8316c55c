"""InitProducerId for both front doors: a producer id and epoch for an idempotent producer.

Kafka's rule: IDEMPOTENT_WRITE on the cluster, or WRITE on any topic. A transactional id is
refused by the producer-id manager until transactions exist (UNSUPPORTED_VERSION with a
message saying so).
"""

from __future__ import annotations

from dataclasses import dataclass

from broker_nodes.requests.outcomes import NO_ERROR
from broker_nodes.security.access import CallContext
from broker_nodes.security.authorizer import CLUSTER_RESOURCE_NAME, Operation, ResourceType
from broker_nodes.security.errors import ClusterAuthorizationError
from broker_nodes.server.broker import Broker
from broker_nodes.server.errors import error_code_and_message


@dataclass(frozen=True, slots=True)
class InitProducerIdOutcome:
    error_code: int = NO_ERROR
    error_message: str = ""
    producer_id: int = -1
    producer_epoch: int = -1


def init_producer_id(broker: Broker, call: CallContext, *, transactional_id: str, producer_id: int, producer_epoch: int) -> InitProducerIdOutcome:
    """A new producer id (epoch 0), or the next epoch of ``producer_id`` when the client asks to bump it."""
    try:
        if not (call.may(Operation.IDEMPOTENT_WRITE, ResourceType.CLUSTER, CLUSTER_RESOURCE_NAME) or call.may_on_any(Operation.WRITE, ResourceType.TOPIC)):
            raise ClusterAuthorizationError("initialise an idempotent producer")
        allocated = broker.producer_ids.init_producer_id(transactional_id=transactional_id, producer_id=producer_id, producer_epoch=producer_epoch)
    except Exception as error:
        code, message = error_code_and_message(error)
        return InitProducerIdOutcome(code, message)
    return InitProducerIdOutcome(producer_id=allocated.producer_id, producer_epoch=allocated.epoch)

"""confluent-kafka's ``cimpl``: the names its C extension offers, so ``from confluent_kafka.cimpl import ...`` ports.

The clients and types are weir's own; the integer constants (``ACL_OPERATION_READ``,
``RESOURCE_TOPIC``, ``OFFSET_SPEC_LATEST``...) are the values of weir's enums, which are
confluent-kafka's. Share groups (``ShareConsumer``, ``SHARE_ACKNOWLEDGE_*``) and ``Uuid`` are not
offered, as at weir's top level.
"""

from __future__ import annotations

import enum

from weir.admin import (
    AclOperation,
    AclPermissionType,
    AlterConfigOpType,
    ConfigSource,
    ElectionType,
    IsolationLevel,
    NewPartitions,
    NewTopic,
    OffsetSpec,
    ResourcePatternType,
    ResourceType,
    ScramMechanism,
)
from weir.consumer import Consumer
from weir.consumer_groups import ConsumerGroupState, ConsumerGroupType
from weir.errors import KafkaError, KafkaException
from weir.message import (
    OFFSET_BEGINNING,
    OFFSET_END,
    OFFSET_INVALID,
    OFFSET_STORED,
    TIMESTAMP_CREATE_TIME,
    TIMESTAMP_LOG_APPEND_TIME,
    TIMESTAMP_NOT_AVAILABLE,
    Message,
    TopicPartition,
)
from weir.partition_functions import consistent, fnv1a, libversion, murmur2, version
from weir.producer import Producer


def _constants(prefix: str, members: type[enum.Enum], *, only: tuple[str, ...] = ()) -> dict[str, int]:
    return {f"{prefix}{member.name}": int(member.value) for member in members if not only or member.name in only}


# librdkafka's C enums, as cimpl's module constants: PREFIX_NAME = the weir enum member's value.
_CONSTANTS: dict[str, int] = {
    **_constants("ACL_OPERATION_", AclOperation),
    **_constants("ACL_PERMISSION_TYPE_", AclPermissionType),
    **_constants("ALTER_CONFIG_OP_TYPE_", AlterConfigOpType),
    **_constants("CONFIG_SOURCE_", ConfigSource),
    # cimpl has the classic group states only (KIP-848's ASSIGNING / RECONCILING are Python-side).
    **_constants("CONSUMER_GROUP_STATE_", ConsumerGroupState, only=("UNKNOWN", "PREPARING_REBALANCE", "COMPLETING_REBALANCE", "STABLE", "DEAD", "EMPTY")),
    **_constants("CONSUMER_GROUP_TYPE_", ConsumerGroupType),
    **_constants("ELECTION_TYPE_", ElectionType),
    **_constants("ISOLATION_LEVEL_", IsolationLevel),
    **_constants("RESOURCE_PATTERN_", ResourcePatternType),
    **_constants("RESOURCE_", ResourceType),
    # cimpl spells ScramMechanism.SCRAM_SHA_256 as SCRAM_MECHANISM_SHA_256.
    **{f"SCRAM_MECHANISM_{member.name.removeprefix('SCRAM_')}": int(member.value) for member in ScramMechanism},
    "OFFSET_SPEC_EARLIEST": OffsetSpec.EARLIEST,
    "OFFSET_SPEC_LATEST": OffsetSpec.LATEST,
    "OFFSET_SPEC_MAX_TIMESTAMP": OffsetSpec.MAX_TIMESTAMP,
}
globals().update(_CONSTANTS)

__all__ = [
    "Consumer",
    "KafkaError",
    "KafkaException",
    "Message",
    "NewPartitions",
    "NewTopic",
    "OFFSET_BEGINNING",
    "OFFSET_END",
    "OFFSET_INVALID",
    "OFFSET_STORED",
    "Producer",
    "TIMESTAMP_CREATE_TIME",
    "TIMESTAMP_LOG_APPEND_TIME",
    "TIMESTAMP_NOT_AVAILABLE",
    "TopicPartition",
    "consistent",
    "fnv1a",
    "libversion",
    "murmur2",
    "version",
    *_CONSTANTS,
]

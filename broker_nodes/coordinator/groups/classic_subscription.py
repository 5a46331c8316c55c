"""The topics a classic consumer-group member subscribes to, read from its JoinGroup metadata (ConsumerProtocolSubscription).

The broker reads members' metadata only where Kafka does: OffsetDelete must refuse the offsets of
topics the group still consumes. The metadata is a version (int16) and the subscription of that
version; a version newer than kio knows is read as the newest one it knows (newer versions only
add fields at the end, as Kafka's consumer protocol promises).
"""

from __future__ import annotations

import struct

from kio.schema.consumer_protocol_subscription.v0 import ConsumerProtocolSubscription as SubscriptionV0
from kio.schema.consumer_protocol_subscription.v1 import ConsumerProtocolSubscription as SubscriptionV1
from kio.schema.consumer_protocol_subscription.v2 import ConsumerProtocolSubscription as SubscriptionV2
from kio.schema.consumer_protocol_subscription.v3 import ConsumerProtocolSubscription as SubscriptionV3
from kio.serial import entity_reader

CONSUMER_PROTOCOL_TYPE = "consumer"  # the protocol type whose metadata is a ConsumerProtocolSubscription
_SCHEMAS = (SubscriptionV0, SubscriptionV1, SubscriptionV2, SubscriptionV3)
_VERSION = struct.Struct(">h")


def subscribed_topics(metadata: bytes) -> tuple[str, ...] | None:
    """The plain topic names of a consumer member's subscription; None when the bytes are not one (the caller assumes every topic)."""
    if len(metadata) < _VERSION.size:
        return None
    (version,) = _VERSION.unpack_from(metadata)
    if version < 0:
        return None
    schema = _SCHEMAS[min(version, len(_SCHEMAS) - 1)]
    try:
        subscription, _ = entity_reader(schema)(memoryview(metadata), _VERSION.size)
    except Exception:  # kio raises several types for malformed bytes; any of them means "not a subscription we can read"
        return None
    topics: tuple[str, ...] = getattr(subscription, "topics", ())  # every version has it; kio types the reader's result loosely
    return tuple(topics)

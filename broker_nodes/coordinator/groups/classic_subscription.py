"""The topics a classic consumer-group member subscribes to, read from its JoinGroup metadata (ConsumerProtocolSubscription).

The broker reads members' metadata only where Kafka does: OffsetDelete must refuse the offsets of
topics the group still consumes. The metadata's layout: ``consumer_protocol``.
"""

from __future__ import annotations

from broker_nodes.coordinator.groups.consumer_protocol import decode

CONSUMER_PROTOCOL_TYPE = "consumer"  # the protocol type whose metadata is a ConsumerProtocolSubscription


def subscribed_topics(metadata: bytes) -> tuple[str, ...] | None:
    """The plain topic names of a consumer member's subscription; None when the bytes are not one (the caller assumes every topic)."""
    subscription = decode("subscription", metadata)
    if subscription is None:
        return None
    topics: tuple[str, ...] = getattr(subscription, "topics", ())  # every version has it; kio types the reader's result loosely
    return tuple(topics)

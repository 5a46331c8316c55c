"""Helpers shared by the SDK's end-to-end tests: topics, draining a consumer, bounded waits."""

from __future__ import annotations

import time
from collections.abc import Callable

from weir import Consumer, Message, TopicPartition
from weir.admin import AdminClient, NewTopic
from weir.consumer import consume_available


def create_topic(address: str, name: str, partitions: int = 1, config: dict[str, str] | None = None) -> None:
    admin = AdminClient({"bootstrap.servers": address})
    try:
        admin.create_topics([NewTopic(name, partitions, 1, config=config or {})])[name].result(timeout=20)
    finally:
        admin.close()


def consume_all(consumer: Consumer, expected: int, timeout: float = 20.0) -> list[Message]:
    """Consume until ``expected`` records arrived or ``timeout`` passed; error events are kept out."""
    messages: list[Message] = []
    deadline = time.monotonic() + timeout
    while len(messages) < expected and time.monotonic() < deadline:
        messages += [message for message in consume_available(consumer, 1000, 0.5) if message.error() is None]
    return messages


def wait_for(condition: Callable[[], bool], timeout: float = 20.0, interval: float = 0.05) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(interval)
    return condition()


def assigned(consumer: Consumer, topic: str, partitions: int, offset: int) -> Consumer:
    consumer.assign([TopicPartition(topic, partition, offset) for partition in range(partitions)])
    return consumer

"""One member of a classic consumer group, run as a child process by the group tests (so a test can kill it with -9).

``python -m tests.kafka_protocol.group_member <client> <bootstrap> <group> <topic> [session_ms]`` joins ``group``
with a stock client (``confluent``, ``kafka-python`` or ``aiokafka``), subscribes to ``topic`` and prints its
assignment as one JSON line (sorted partition numbers) every time it changes. It stops when its stdin closes
(the test ended) or after ``LIFETIME_SECONDS`` at the latest, so no member outlives a test.
"""

from __future__ import annotations

import asyncio
import json
import sys
import threading
import time

LIFETIME_SECONDS = 180.0
POLL_SECONDS = 0.2


def report(partitions: set[int]) -> None:
    print(json.dumps(sorted(partitions)), flush=True)


def stdin_closed() -> threading.Event:
    closed = threading.Event()

    def watch() -> None:
        sys.stdin.read()
        closed.set()

    threading.Thread(target=watch, daemon=True).start()
    return closed


def run_confluent(bootstrap: str, group: str, topic: str, session_ms: int, stop: threading.Event) -> None:
    from confluent_kafka import Consumer

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "session.timeout.ms": session_ms,
            "heartbeat.interval.ms": 300,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe(
        [topic],
        on_assign=lambda _consumer, partitions: report({item.partition for item in partitions}),
        on_revoke=lambda _consumer, partitions: report(set()),
    )
    deadline = time.monotonic() + LIFETIME_SECONDS
    try:
        while not stop.is_set() and time.monotonic() < deadline:
            consumer.poll(POLL_SECONDS)
    finally:
        consumer.close()


def run_kafka_python(bootstrap: str, group: str, topic: str, session_ms: int, stop: threading.Event) -> None:
    from kafka import KafkaConsumer

    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id=group,
        session_timeout_ms=session_ms,
        heartbeat_interval_ms=300,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        api_version_auto_timeout_ms=30_000,  # its 2 s default probe gives up on a loaded machine
    )
    consumer.subscribe([topic])
    last: set[int] | None = None
    deadline = time.monotonic() + LIFETIME_SECONDS
    try:
        while not stop.is_set() and time.monotonic() < deadline:
            consumer.poll(timeout_ms=int(POLL_SECONDS * 1000))
            current = {item.partition for item in consumer.assignment()}
            if current != last:
                report(current)
                last = current
    finally:
        consumer.close()


async def run_aiokafka(bootstrap: str, group: str, topic: str, session_ms: int, stop: threading.Event) -> None:
    from aiokafka import AIOKafkaConsumer

    consumer = AIOKafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=group,
        session_timeout_ms=session_ms,
        heartbeat_interval_ms=300,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    )
    await consumer.start()
    last: set[int] | None = None
    deadline = time.monotonic() + LIFETIME_SECONDS
    try:
        while not stop.is_set() and time.monotonic() < deadline:
            await consumer.getmany(timeout_ms=int(POLL_SECONDS * 1000))
            current = {item.partition for item in consumer.assignment()}
            if current != last:
                report(current)
                last = current
    finally:
        await consumer.stop()


def main() -> None:
    client, bootstrap, group, topic = sys.argv[1:5]
    session_ms = int(sys.argv[5]) if len(sys.argv) > 5 else 6000
    stop = stdin_closed()
    if client == "confluent":
        run_confluent(bootstrap, group, topic, session_ms, stop)
    elif client == "kafka-python":
        run_kafka_python(bootstrap, group, topic, session_ms, stop)
    elif client == "aiokafka":
        asyncio.run(run_aiokafka(bootstrap, group, topic, session_ms, stop))
    else:
        raise SystemExit(f"unknown client {client!r}: use confluent, kafka-python or aiokafka")


if __name__ == "__main__":
    main()

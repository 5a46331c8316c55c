"""Producer behaviour when the broker goes away: back-pressure, and exactly-once delivery across a restart."""

from __future__ import annotations

import threading

import pytest

from tests.weir.sdk_support import assigned, consume_all, create_topic
from weir import OFFSET_BEGINNING, Consumer, KafkaError, Producer


def test_produce_raises_buffer_error_when_buffer_memory_stays_full(broker) -> None:
    create_topic(broker.address, "pressure")
    producer = Producer(
        {
            "bootstrap.servers": broker.address,
            "buffer.memory": 64 * 1024,
            "max.block.ms": 300,
            "linger.ms": 0,
            "delivery.timeout.ms": 60000,
            "retry.backoff.ms": 50,
        }
    )
    producer.produce("pressure", b"warm-up")
    assert producer.flush(10) == 0
    broker.stop()
    with pytest.raises(BufferError):
        for _ in range(10_000):
            producer.produce("pressure", b"x" * 1000)
    producer.purge()
    producer.close(timeout=0)


def test_stopped_broker_fails_records_after_delivery_timeout(broker) -> None:
    create_topic(broker.address, "expiring")
    reports = []
    producer = Producer(
        {"bootstrap.servers": broker.address, "delivery.timeout.ms": 800, "retry.backoff.ms": 50, "on_delivery": lambda error, message: reports.append(error)}
    )
    producer.produce("expiring", b"warm-up")
    producer.flush(10)
    broker.stop()
    producer.produce("expiring", b"lost")
    producer.flush(10)
    producer.close(timeout=0)
    assert reports[0] is None
    assert reports[1].code() == KafkaError._MSG_TIMED_OUT


def test_idempotent_producer_delivers_every_record_exactly_once_across_a_restart(broker) -> None:
    create_topic(broker.address, "exactly-once")
    reports = []
    lock = threading.Lock()

    def delivered(error, message) -> None:
        with lock:
            reports.append((error, message.value()))

    producer = Producer(
        {
            "bootstrap.servers": broker.address,
            "linger.ms": 1,
            "batch.num.messages": 50,
            "retry.backoff.ms": 50,
            "retry.backoff.max.ms": 200,
            "delivery.timeout.ms": 60000,
            "enable.idempotence": True,
            "on_delivery": delivered,
        }
    )
    total = 3000
    for index in range(total // 2):
        producer.produce("exactly-once", b"%d" % index)
        if index % 200 == 0:
            producer.poll(0)
    # Kill the broker (no graceful shutdown) while batches are queued and in flight, keep
    # producing, then bring it back: retries resend the same bytes and the broker drops any
    # duplicate.
    broker.kill()
    for index in range(total // 2, total):
        producer.produce("exactly-once", b"%d" % index)
    broker.start()
    assert producer.flush(60) == 0
    producer.close()
    assert [error for error, _ in reports if error is not None] == []
    assert len(reports) == total

    consumer = assigned(Consumer({"bootstrap.servers": broker.address}), "exactly-once", 1, OFFSET_BEGINNING)
    received = consume_all(consumer, total)
    assert consumer.consume(100, 0.5) == []  # no duplicates beyond the expected count
    consumer.close()
    assert [message.value() for message in received] == [b"%d" % index for index in range(total)]

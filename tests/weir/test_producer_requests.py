"""The sender's ProduceRequest: every batch it is given, grouped by topic in the order given, each
payload unchanged, with the producer's acks, request timeout and transactional id."""

from __future__ import annotations

from weir import Producer
from weir.producer_accumulator import ProducerBatch
from weir.records import RecordBatchBuilder


def _batch(topic: str, partition: int, payload: bytes) -> ProducerBatch:
    batch = ProducerBatch(topic, partition, RecordBatchBuilder(), 0.0)
    batch.payload = payload
    return batch


def test_a_produce_request_groups_the_batches_by_topic_in_the_order_given() -> None:
    producer = Producer({"bootstrap.servers": "127.0.0.1:9", "acks": "all", "request.timeout.ms": 7000})
    try:
        batches = [_batch("b", 3, b"b3"), _batch("a", 0, b"a0" * 1000), _batch("b", 1, b""), _batch("a", 2, b"a2")]
        request = producer._sender._produce_request(batches)
    finally:
        producer.close(0)
    assert (request.acks, request.timeout_ms, request.transactional_id) == (-1, 7000, "")
    assert [(topic.topic, [(part.partition, part.records) for part in topic.partitions]) for topic in request.topics] == [
        ("b", [(3, b"b3"), (1, b"")]),
        ("a", [(0, b"a0" * 1000), (2, b"a2")]),
    ]

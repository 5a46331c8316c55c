"""Idempotent bookkeeping: sequence numbers, retry ordering, and stamping producer state."""

from __future__ import annotations

from weir.producer_accumulator import ProducerBatch
from weir.producer_idempotence import SEQUENCE_MODULUS, PartitionQueue, stamp_producer_state
from weir.records import RecordBatchBuilder, read_batch_header, validate_batch


def batch(records: int) -> ProducerBatch:
    builder = RecordBatchBuilder()
    for index in range(records):
        builder.append(1_700_000_000_000 + index, None, b"value")
    made = ProducerBatch("t", 0, builder, 0.0)
    made.payload = builder.build()
    made.deadline = 1e9
    return made


def test_sequences_count_records_per_partition() -> None:
    queue = PartitionQueue()
    first, second, third = batch(3), batch(2), batch(1)
    for item in (first, second, third):
        queue.add(item, assign_sequence=True)
    assert [item.base_sequence for item in (first, second, third)] == [0, 3, 5]
    assert queue.next_sequence == 6


def test_sequences_wrap_at_two_to_the_thirty_one() -> None:
    queue = PartitionQueue()
    queue.next_sequence = SEQUENCE_MODULUS - 2
    queue.add(batch(3), assign_sequence=True)
    assert queue.next_sequence == 1


def test_without_idempotence_no_sequence_is_assigned() -> None:
    queue = PartitionQueue()
    item = batch(2)
    queue.add(item, assign_sequence=False)
    assert item.base_sequence == -1


def test_one_batch_per_partition_is_in_flight_at_a_time() -> None:
    queue = PartitionQueue()
    first, second = batch(1), batch(1)
    queue.add(first, True)
    queue.add(second, True)
    assert queue.next_sendable(0.0) is first
    queue.mark_sent(first)
    assert queue.next_sendable(0.0) is None
    queue.answered(first)
    queue.finish(first)
    assert queue.next_sendable(0.0) is second


def test_retried_batch_goes_before_newer_ones_after_its_backoff() -> None:
    queue = PartitionQueue()
    first, second = batch(1), batch(1)
    queue.add(first, True)
    queue.add(second, True)
    queue.mark_sent(first)
    queue.answered(first)
    queue.retry(first, at=1.0)
    assert queue.has_earlier_unacknowledged(second)
    assert queue.next_sendable(0.5) is None  # backoff not over, and second must wait behind first
    assert queue.next_sendable(2.0) is first
    queue.mark_sent(first)
    assert queue.next_sendable(2.0) is None
    queue.answered(first)
    queue.finish(first)
    assert not queue.has_earlier_unacknowledged(second)
    assert queue.next_sendable(2.0) is second


def test_oldest_unacknowledged_batch_has_nothing_earlier() -> None:
    queue = PartitionQueue()
    first, second = batch(1), batch(1)
    queue.add(first, True)
    queue.add(second, True)
    assert not queue.has_earlier_unacknowledged(first)
    queue.finish(first)
    assert not queue.has_earlier_unacknowledged(second)


def test_expire_removes_only_batches_past_their_deadline() -> None:
    queue = PartitionQueue()
    old, young = batch(1), batch(1)
    old.deadline, young.deadline = 5.0, 50.0
    queue.add(old, True)
    queue.add(young, True)
    assert queue.expire(10.0) == [old]
    assert queue.next_sendable(10.0) is young


def test_stamped_batch_keeps_a_valid_crc_and_carries_the_producer_state() -> None:
    payload = batch(4).payload
    stamped = stamp_producer_state(payload, 1234, 7, 99)
    header = validate_batch(stamped)
    assert (header.producer_id, header.producer_epoch, header.base_sequence, header.records_count) == (1234, 7, 99, 4)
    assert read_batch_header(payload).producer_id == -1

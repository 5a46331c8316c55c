"""The record accumulator: batch readiness (size, count, linger, flush), buffer memory, sticky moves."""

from __future__ import annotations

import threading

import pytest

from broker_nodes.clock import ManualClock
from weir.partitioner import StickyPartitions
from weir.producer_accumulator import RecordAccumulator
from weir.records import iter_records

VALUE = b"v" * 100


def make(clock: ManualClock, **overrides: int) -> RecordAccumulator:
    options = dict(batch_size=1_000_000, batch_max_records=10_000, linger_ms=5, buffer_memory=32 * 1024 * 1024, codec=0)
    options.update(overrides)
    return RecordAccumulator(**options, sticky=StickyPartitions(choose=lambda count: 0), monotonic=clock.monotonic)


def append(accumulator: RecordAccumulator, partition: int = 0, value: bytes = VALUE, count: int = 1, partitions: int = 1) -> None:
    for _ in range(count):
        accumulator.append("t", partition, partitions, 1_700_000_000_000, None, value, None, None, len(value), 0.0)


def test_new_batch_is_not_ready_before_linger() -> None:
    clock = ManualClock()
    accumulator = make(clock)
    append(accumulator)
    ready, next_ready = accumulator.drain()
    assert ready == []
    assert next_ready == pytest.approx(clock.monotonic() + 0.005)


def test_batch_is_ready_once_linger_has_passed() -> None:
    clock = ManualClock()
    accumulator = make(clock, linger_ms=50)
    append(accumulator, count=3)
    clock.advance(49)
    assert accumulator.drain()[0] == []
    clock.advance(1)
    ready, next_ready = accumulator.drain()
    assert [batch.record_count for batch in ready] == [3]
    assert next_ready is None


def test_batch_is_ready_when_batch_size_is_reached() -> None:
    clock = ManualClock()
    accumulator = make(clock, batch_size=1000, linger_ms=60_000)
    append(accumulator, count=12)
    ready, _ = accumulator.drain()
    assert ready and all(batch.size <= 1000 for batch in ready)
    assert sum(batch.record_count for batch in ready) < 12


def test_batch_never_exceeds_batch_size_by_appending() -> None:
    clock = ManualClock()
    accumulator = make(clock, batch_size=500, linger_ms=0)
    append(accumulator, count=20)
    ready, _ = accumulator.drain()
    assert sum(batch.record_count for batch in ready) == 20
    assert all(batch.size <= 500 for batch in ready)


def test_batch_is_ready_when_record_count_is_reached() -> None:
    clock = ManualClock()
    accumulator = make(clock, batch_max_records=4, linger_ms=60_000)
    append(accumulator, count=9)
    ready, _ = accumulator.drain()
    assert [batch.record_count for batch in ready] == [4, 4]


def test_flush_makes_every_batch_ready() -> None:
    clock = ManualClock()
    accumulator = make(clock, linger_ms=60_000)
    append(accumulator, partition=0, partitions=2)
    append(accumulator, partition=1, partitions=2)
    accumulator.begin_flush()
    ready, _ = accumulator.drain()
    accumulator.end_flush()
    assert sorted(batch.partition for batch in ready) == [0, 1]


def test_batches_of_one_partition_leave_in_order() -> None:
    clock = ManualClock()
    accumulator = make(clock, batch_max_records=2, linger_ms=0)
    for index in range(6):
        append(accumulator, value=b"%d" % index)
    ready, _ = accumulator.drain()
    values = [record.value for batch in ready for record in iter_records(batch.builder.build())]
    assert values == [b"%d" % index for index in range(6)]


def test_full_buffer_raises_buffer_error_after_max_block() -> None:
    clock = ManualClock()
    accumulator = make(clock, buffer_memory=1024, linger_ms=60_000)
    append(accumulator, count=7)
    with pytest.raises(BufferError, match="buffer.memory"):
        append(accumulator, count=5)


def test_release_gives_memory_back() -> None:
    clock = ManualClock()
    accumulator = make(clock, buffer_memory=1024, linger_ms=0)
    append(accumulator, count=7)
    ready, _ = accumulator.drain()
    for batch in ready:
        accumulator.release(batch)
    assert accumulator.buffered_bytes == 0
    append(accumulator, count=7)


def test_keyless_records_move_to_another_partition_when_the_batch_closes() -> None:
    clock = ManualClock()
    choices = iter([0, 1, 0])
    accumulator = RecordAccumulator(
        batch_size=1_000_000,
        batch_max_records=3,
        linger_ms=60_000,
        buffer_memory=1 << 20,
        codec=0,
        sticky=StickyPartitions(choose=lambda count: next(choices)),
        monotonic=clock.monotonic,
    )
    append(accumulator, partition=-1, count=6, partitions=3)
    ready, _ = accumulator.drain()
    # Three records on the first sticky partition (0); then choose(2)=1 -> partition 2 (skips 0).
    assert [(batch.partition, batch.record_count) for batch in ready] == [(0, 3), (2, 3)]


def test_outstanding_counts_records_until_done() -> None:
    clock = ManualClock()
    accumulator = make(clock)
    append(accumulator, count=3)
    assert accumulator.outstanding == 3
    accumulator.records_done(3)
    assert accumulator.outstanding == 0


def test_abort_unsent_returns_open_batches_and_frees_memory() -> None:
    clock = ManualClock()
    accumulator = make(clock, linger_ms=60_000)
    append(accumulator, count=2)
    aborted = accumulator.abort_unsent()
    assert [batch.record_count for batch in aborted] == [2]
    assert accumulator.buffered_bytes == 0
    assert not accumulator.has_open_batches


def test_open_batch_of_a_muted_partition_stays_open_past_linger() -> None:
    clock = ManualClock()
    accumulator = make(clock, linger_ms=0)
    append(accumulator, count=2)
    clock.advance(10)
    ready, next_ready = accumulator.drain(muted={("t", 0)})
    assert ready == [] and next_ready is None
    append(accumulator, count=3)
    ready, _ = accumulator.drain()
    assert [batch.record_count for batch in ready] == [5]


def test_flush_takes_the_open_batch_of_a_muted_partition() -> None:
    clock = ManualClock()
    accumulator = make(clock, linger_ms=60_000)
    append(accumulator, count=2)
    accumulator.begin_flush()
    ready, _ = accumulator.drain(muted={("t", 0)})
    accumulator.end_flush()
    assert [batch.record_count for batch in ready] == [2]


def _wait_returns(accumulator: RecordAccumulator) -> bool:
    """Whether the sender's wait returns on its own; a wait still blocked after 10 s is ended by close()."""
    waiter = threading.Thread(target=accumulator.wait_for_work, args=(60.0, lambda: False), daemon=True)
    waiter.start()
    waiter.join(10.0)
    returned = not waiter.is_alive()
    accumulator.close()
    waiter.join(10.0)
    return returned


def test_a_batch_opened_between_drain_and_wait_ends_the_senders_wait() -> None:
    # The sender drained (no batch open, so no linger.ms to wake for) and a produce() opened a
    # batch before the sender began to wait: its notification found no waiter. The wait must
    # still end at once, or the record sits until the wait times out (0.5 s in the sender).
    clock = ManualClock()
    accumulator = make(clock)
    assert accumulator.drain() == ([], None)
    append(accumulator)
    assert _wait_returns(accumulator)


def test_the_senders_wait_lasts_when_nothing_changed_since_its_drain() -> None:
    clock = ManualClock()
    accumulator = make(clock)
    append(accumulator)
    accumulator.drain()  # the batch's linger.ms is known to the sender: nothing new
    waiter = threading.Thread(target=accumulator.wait_for_work, args=(60.0, lambda: False), daemon=True)
    waiter.start()
    waiter.join(0.2)
    assert waiter.is_alive()
    accumulator.close()
    waiter.join(10.0)
    assert not waiter.is_alive()

"""The producer's native fast path for records with an explicit partition or a key: the C key
hashes against weir.partitioner's, and the batches the appender fills across many partitions
against the Python accumulator's (the reference), record for record."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from broker_nodes.clock import ManualClock
from weir import records
from weir.partitioner import Partitioner, StickyPartitions, consistent_partition, fnv1a_partition, murmur2, murmur2_partition
from weir.producer_accumulator import ProducerBatch, RecordAccumulator

native = pytest.importorskip("weir._records_native", reason="the native record codec was not built (no C compiler at install)")

# The appender writes the batches' delivery records into native DeliveryLogs, which the accumulator
# gives its batches only while the native codec is in use (not under WEIR_PURE_PYTHON=1).
needs_native_accumulator = pytest.mark.skipif(records._native is None, reason="WEIR_PURE_PYTHON=1: the producer has no native fast path to compare")
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
TIMESTAMP = 1_700_000_000_000
TOPIC = "t"
PARTITIONER_NAMES = Partitioner.NAMES


def choose(count: int) -> int:
    """The sticky partitions' deterministic choice: the same in both accumulators."""
    return count // 2


def accumulator(clock: ManualClock, batch_size: int) -> RecordAccumulator:
    return RecordAccumulator(
        batch_size=batch_size,
        batch_max_records=10_000,
        linger_ms=5,
        buffer_memory=32 * 1024 * 1024,
        codec=0,
        sticky=StickyPartitions(choose=choose),
        monotonic=clock.monotonic,
    )


class FakeCluster:
    """What the appender reads of weir.cluster.Cluster: ``topics``, name -> immutable TopicInfo."""

    def __init__(self) -> None:
        self.topics: dict[str, object] = {TOPIC: object()}


class Reference:
    """Producer.produce's partition choice and append, in Python only."""

    def __init__(self, clock: ManualClock, batch_size: int, partitioner: str, partition_count: int) -> None:
        self.accumulator = accumulator(clock, batch_size)
        self.partitioner = Partitioner(partitioner)
        self.partition_count = partition_count

    def produce(
        self, topic: str, value: Any = None, key: Any = None, partition: int = -1, on_delivery: Any = None, timestamp: int = 0, arm: Any = None
    ) -> None:
        if partition < 0:
            partition = self.partitioner.keyed_partition(key, self.partition_count)
        size = len(value or b"") + len(key or b"")
        self.accumulator.append(topic, partition, self.partition_count, timestamp, key, value, None, on_delivery, size, 0.0, arm)


class Fast(Reference):
    """The same, behind a StickyAppender configured with the partitioner's hash (as Producer installs it)."""

    def __init__(self, clock: ManualClock, batch_size: int, partitioner: str, partition_count: int) -> None:
        super().__init__(clock, batch_size, partitioner, partition_count)
        self.cluster = FakeCluster()
        self.declined = 0
        self.appender = native.StickyAppender(
            self.python_produce,
            self.cluster,
            self.accumulator.lock,
            self.accumulator._close_armed,
            None,
            1_000_000,
            batch_size,
            10_000,
            32 * 1024 * 1024,
            *self.partitioner.native_hash,
        )
        self.accumulator.attach_appender(self.appender)

    def python_produce(self, topic: str, value: Any = None, key: Any = None, partition: int = -1, on_delivery: Any = None, timestamp: int = 0) -> None:
        self.declined += 1
        self.produce(topic, value, key, partition, on_delivery, timestamp, arm=self.cluster.topics[topic])


def batches(ready: list[ProducerBatch]) -> list[tuple[Any, ...]]:
    """What a drained batch holds; a delivery record without its produce() time."""
    return [(b.topic, b.partition, b.record_count, b.size, b.builder.build(), [d[:6] for d in b.deliveries]) for b in ready]


def on_delivery(error: Any, message: Any) -> None:
    """A delivery callback (never called here)."""


# ------------------------------------------------------------------ key hashes


@SETTINGS
@given(key=st.binary(max_size=300))
def test_native_murmur2_is_kafkas(key: bytes) -> None:
    assert native.murmur2(key) == murmur2(key)


@SETTINGS
@given(key=st.binary(max_size=300), partition_count=st.integers(min_value=1, max_value=100_000))
def test_native_key_partitions_are_the_partitioners(key: bytes, partition_count: int) -> None:
    expected = [consistent_partition(key, partition_count), murmur2_partition(key, partition_count), fnv1a_partition(key, partition_count)]
    assert [native.key_partition(kind, key, partition_count) for kind in (1, 2, 3)] == expected


def test_known_murmur2_values_of_kafka() -> None:
    # Kafka's UtilsTest.testMurmur2 vectors.
    cases = {b"21": -973932308, b"foobar": -790332482, b"a-little-bit-long-string": -985981536, b"a-little-bit-longer-string": -1486304829}
    assert {key: native.murmur2(key) for key in cases} == cases


# ------------------------------------------------------------------ batches across partitions

record_strategy = st.tuples(
    st.one_of(st.none(), st.binary(max_size=12)),  # key
    st.one_of(st.just(-1), st.integers(min_value=0, max_value=7)),  # explicit partition
    st.one_of(st.none(), st.binary(max_size=60)),  # value
    st.booleans(),  # a delivery callback
    st.integers(min_value=0, max_value=3),  # timestamp step
)


@needs_native_accumulator
@SETTINGS
@given(
    partitioner=st.sampled_from(PARTITIONER_NAMES),
    batch_size=st.sampled_from([200, 700, 1_000_000]),
    produced=st.lists(record_strategy, min_size=1, max_size=120),
    drain_every=st.integers(min_value=5, max_value=200),
)
def test_keyed_and_explicit_records_fill_the_batches_python_fills(
    partitioner: str, batch_size: int, produced: list[tuple[bytes | None, int, bytes | None, bool, int]], drain_every: int
) -> None:
    clock = ManualClock()
    reference = Reference(clock, batch_size, partitioner, 8)
    fast = Fast(clock, batch_size, partitioner, 8)
    expected: list[tuple[Any, ...]] = []
    actual: list[tuple[Any, ...]] = []
    timestamp = TIMESTAMP
    for index, (key, partition, value, callback, step) in enumerate(produced, 1):
        timestamp += step
        delivery = on_delivery if callback else None
        reference.produce(TOPIC, value, key, partition, delivery, timestamp)
        fast.appender.produce(TOPIC, value, key, partition=partition, on_delivery=delivery, timestamp=timestamp)
        if index % drain_every == 0:
            clock.advance(10)
            expected += batches(reference.accumulator.drain()[0])
            actual += batches(fast.accumulator.drain()[0])
            assert actual == expected
    assert (fast.accumulator.outstanding, fast.accumulator.buffered_bytes) == (reference.accumulator.outstanding, reference.accumulator.buffered_bytes)
    clock.advance(10)
    expected += batches(reference.accumulator.drain()[0])
    actual += batches(fast.accumulator.drain()[0])
    assert actual == expected
    assert sum(batch[2] for batch in expected) == len(produced)
    assert not fast.appender.armed


@needs_native_accumulator
def test_records_to_random_partitions_run_in_c_after_each_batchs_first() -> None:
    clock = ManualClock()
    fast = Fast(clock, 1_000_000, "murmur2_random", 100)
    for index in range(2_000):
        fast.appender.produce(TOPIC, b"v" * 100, partition=index * 37 % 100)
    for index in range(1_000):
        fast.appender.produce(TOPIC, b"v" * 100, b"key-%d" % index)
    assert fast.declined == 100  # one Python append opened (and armed) each partition's batch
    assert fast.appender.armed_partitions == list(range(100))
    clock.advance(10)
    ready, _ = fast.accumulator.drain()
    assert sum(batch.record_count for batch in ready) == 3_000
    keyed = [record.key for batch in ready for record in records.iter_records(batch.builder.build()) if record.key is not None]
    assert sorted(keyed) == sorted(b"key-%d" % index for index in range(1_000))
    for batch in ready:
        assert all(murmur2_partition(record.key, 100) == batch.partition for record in records.iter_records(batch.builder.build()) if record.key is not None)


@needs_native_accumulator
def test_closing_one_partitions_batch_leaves_the_others_armed() -> None:
    fast = Fast(ManualClock(), 300, "consistent_random", 4)
    for partition in (0, 1, 2):
        fast.appender.produce(TOPIC, b"x" * 10, partition=partition)
    for _ in range(20):
        fast.appender.produce(TOPIC, b"y" * 50, partition=1)  # partition 1's batches fill up and close
    ready, _ = fast.accumulator.drain()  # before linger.ms: only the full batches leave
    assert {batch.partition for batch in ready} == {1} and len(ready) >= 3
    assert fast.declined == 3 + len(ready)  # each batch of partition 1 opened in Python, nothing else
    assert fast.appender.armed_partitions == [0, 1, 2]
    for partition in (0, 2):
        fast.appender.produce(TOPIC, b"z", partition=partition)
    assert fast.declined == 3 + len(ready)


@needs_native_accumulator
def test_a_partition_beyond_the_count_or_a_new_metadata_goes_to_python() -> None:
    fast = Fast(ManualClock(), 1_000_000, "murmur2_random", 4)
    fast.appender.produce(TOPIC, b"first", partition=3)
    fast.appender.produce(TOPIC, b"second", partition=3)
    assert fast.declined == 1
    with pytest.raises(IndexError):  # the reference's own failure: Producer.produce raises _UNKNOWN_PARTITION before it
        fast.appender.produce(TOPIC, b"beyond", partition=4)
    assert fast.declined == 2
    fast.cluster.topics[TOPIC] = object()  # a metadata refresh: the partition count may have changed
    fast.appender.produce(TOPIC, b"third", partition=3)
    assert fast.declined == 3 and fast.appender.armed_partitions == [3]
    assert fast.accumulator.outstanding == 3

"""The producer's native fast path (weir._records_native.StickyAppender) against the Python
accumulator, its reference: the same batches, bytes, counters and delivery records, and every
record it cannot take handed to the Python produce()."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from broker_nodes.clock import ManualClock
from weir import records
from weir.partitioner import StickyPartitions
from weir.producer_accumulator import ProducerBatch, RecordAccumulator

native = pytest.importorskip("weir._records_native", reason="the native record codec was not built (no C compiler at install)")
pytestmark = pytest.mark.skipif(records._native is None, reason="WEIR_PURE_PYTHON=1: the producer has no native fast path to compare")

TIMESTAMP = 1_700_000_000_000
PARTITIONS = 2


class FakeCluster:
    """What the appender reads of weir.cluster.Cluster: ``topics``, name -> immutable TopicInfo."""

    def __init__(self) -> None:
        self.topics: dict[str, object] = {"t": object()}


def make(clock: ManualClock, batch_size: int, **overrides: int) -> RecordAccumulator:
    options = dict(batch_size=batch_size, batch_max_records=10_000, linger_ms=5, buffer_memory=32 * 1024 * 1024, codec=0)
    options.update(overrides)
    return RecordAccumulator(**options, sticky=StickyPartitions(choose=lambda count: 0), monotonic=clock.monotonic)


class FastProducer:
    """A RecordAccumulator with an appender whose Python path appends as Producer.produce does."""

    def __init__(self, clock: ManualClock, batch_size: int, **overrides: Any) -> None:
        self.accumulator = make(clock, batch_size, **overrides)
        self.cluster = FakeCluster()
        self.declined: list[tuple[Any, ...]] = []
        self.record_only = False  # the Python path only notes the record (tests of what is declined)
        self.appender = native.StickyAppender(
            self.python_produce,
            self.cluster,
            self.accumulator.lock,
            self.accumulator._close_armed,
            None,
            1_000_000,
            batch_size,
            overrides.get("batch_max_records", 10_000),
            overrides.get("buffer_memory", 32 * 1024 * 1024),
        )
        self.accumulator.attach_appender(self.appender)

    def python_produce(
        self, topic: str, value: Any = None, key: Any = None, partition: int = -1, on_delivery: Any = None, timestamp: int = 0, **others: Any
    ) -> None:
        self.declined.append((topic, value, key, partition))
        if self.record_only:
            return
        size = len(value or b"") + len(key or b"")
        self.accumulator.append(topic, partition, PARTITIONS, timestamp, key, value, None, on_delivery, size, 0.0, self.cluster.topics[topic])


def python_append(accumulator: RecordAccumulator, value: bytes, timestamp: int, delivery: Any = None) -> None:
    accumulator.append("t", -1, PARTITIONS, timestamp, None, value, None, delivery, len(value), 0.0)


def batches(ready: list[ProducerBatch]) -> list[tuple[Any, ...]]:
    """What a drained batch holds; a delivery record without its produce() time."""
    return [(b.topic, b.partition, b.record_count, b.size, b.builder.build(), [d[:6] for d in b.deliveries]) for b in ready]


def on_delivery(error: Any, message: Any) -> None:
    """A delivery callback (never called here)."""


@pytest.mark.parametrize("batch_size", [400, 1000, 1_000_000])
def test_fast_path_builds_the_batches_of_the_python_accumulator(batch_size: int) -> None:
    clock = ManualClock()
    reference = make(clock, batch_size)
    fast = FastProducer(clock, batch_size)
    for index in range(40):
        value = bytes([index]) * (index % 7 * 10)
        delivery = on_delivery if index % 3 == 0 else None
        python_append(reference, value, TIMESTAMP + index // 5, delivery)
        fast.appender.produce("t", value, timestamp=TIMESTAMP + index // 5, on_delivery=delivery)
    assert (fast.accumulator.outstanding, fast.accumulator.buffered_bytes) == (reference.outstanding, reference.buffered_bytes)
    clock.advance(10)
    expected = batches(reference.drain()[0])
    assert batches(fast.accumulator.drain()[0]) == expected
    assert len(fast.declined) == len(expected)  # one Python append opens each batch, the rest ran in C
    assert sum(batch[2] for batch in expected) == 40


def test_records_after_a_drain_go_to_the_next_batch() -> None:
    clock = ManualClock()
    fast = FastProducer(clock, 1_000_000)
    for _ in range(3):
        fast.appender.produce("t", b"x" * 10)
    clock.advance(10)
    first, _ = fast.accumulator.drain()
    assert not fast.appender.armed
    fast.appender.produce("t", b"y" * 10)
    clock.advance(10)
    second, _ = fast.accumulator.drain()
    assert [batch.record_count for batch in first + second] == [3, 1]
    assert [record.value for record in records.iter_records(second[0].builder.build())] == [b"y" * 10]


def test_a_full_batch_closes_at_once_as_in_python() -> None:
    clock = ManualClock()
    fast = FastProducer(clock, 1_000_000, batch_max_records=4)
    for _ in range(4):
        fast.appender.produce("t", b"z")
    ready, _ = fast.accumulator.drain()  # before linger.ms: only a closed batch leaves
    assert [batch.record_count for batch in ready] == [4]
    assert not fast.appender.armed


@pytest.mark.parametrize(
    ("args", "kwargs"),
    [
        (("t", b"v", b"key"), {}),
        (("t", b"v"), {"headers": [("h", b"1")]}),
        (("t", b"v"), {"partition": 1}),
        (("t", "text"), {}),
        (("other", b"v"), {}),
        (("t",), {"value": b"v", "unknown": 1}),
    ],
)
def test_records_the_fast_path_cannot_take_go_to_python(args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    fast = FastProducer(ManualClock(), 1_000_000)
    fast.appender.produce("t", b"first")  # arms the appender with the sticky batch
    fast.record_only = True
    fast.appender.produce(*args, **kwargs)
    assert len(fast.declined) == 2
    assert fast.accumulator.outstanding == 1


def test_new_metadata_or_a_held_lock_sends_the_record_to_python() -> None:
    fast = FastProducer(ManualClock(), 1_000_000)
    fast.appender.produce("t", b"first")
    fast.appender.produce("t", b"second")
    assert len(fast.declined) == 1
    fast.cluster.topics["t"] = object()  # a metadata refresh: the partition count may have changed
    fast.appender.produce("t", b"third")
    assert len(fast.declined) == 2 and fast.appender.armed
    fast.record_only = True
    with fast.accumulator.lock:  # as the sender thread holds it while draining
        fast.appender.produce("t", b"fourth")
    assert len(fast.declined) == 3
    assert fast.accumulator.outstanding == 3


def test_producer_takes_the_fast_path_only_where_it_applies() -> None:
    from weir.producer import Producer
    from weir.serializing_producer import SerializingProducer

    plain = Producer({"bootstrap.servers": "127.0.0.1:9"})
    transactional = Producer({"bootstrap.servers": "127.0.0.1:9", "transactional.id": "x"})
    per_record = Producer({"bootstrap.servers": "127.0.0.1:9", "sticky.partitioning.linger.ms": 0})
    limited = Producer({"bootstrap.servers": "127.0.0.1:9", "queue.buffering.max.messages": 10})
    serializing = SerializingProducer({"bootstrap.servers": "127.0.0.1:9"})
    try:
        assert "produce" in vars(plain)
        assert [("produce" in vars(producer)) for producer in (transactional, per_record, limited, serializing)] == [False] * 4
    finally:
        for producer in (plain, transactional, per_record, limited, serializing):
            producer.close(0)


# ------------------------------------------------------------------ delivery reports


def delivery_records(kind: str, entries: list[Any]) -> Any:
    """The delivery records ``entries`` in a list or in a native DeliveryLog (what a batch holds)."""
    if kind == "list":
        return list(entries)
    log = native.DeliveryLog()
    for entry in entries:
        log.append(entry)
    return log


def served(
    serve: Any, deliveries: list[Any], error: Any, base_offset: int, log_append_time: int, only_errors: bool, kind: str = "list"
) -> list[tuple[Any, ...]]:
    """What each delivery callback received, the latency as whether it is a float of at least 0."""
    seen: list[tuple[Any, ...]] = []

    def record(error: Any, message: Any) -> None:
        latency = message.latency()
        seen.append(
            (
                error,
                message.topic(),
                message.partition(),
                message.offset(),
                message.timestamp(),
                message.key(),
                message.value(),
                message.headers(),
                message.error(),
                type(latency) is float and latency >= 0,
                message.leader_epoch(),
            )
        )

    from weir.message import TIMESTAMP_CREATE_TIME, TIMESTAMP_LOG_APPEND_TIME

    timestamp_type = TIMESTAMP_LOG_APPEND_TIME if log_append_time >= 0 else TIMESTAMP_CREATE_TIME
    ours = delivery_records(kind, [(record, *delivery[1:]) for delivery in deliveries])
    serve(ours, "orders", 2, error, base_offset, log_append_time, timestamp_type, only_errors)
    return seen


@pytest.mark.parametrize("error_code", [None, 7])
@pytest.mark.parametrize(("base_offset", "log_append_time"), [(100, -1), (-1, -1), (100, 1_700_000_000_999)])
@pytest.mark.parametrize("only_errors", [False, True])
@pytest.mark.parametrize("kind", ["list", "log"])
def test_native_delivery_reports_match_the_python_ones(error_code: int | None, base_offset: int, log_append_time: int, only_errors: bool, kind: str) -> None:
    import time
    from types import SimpleNamespace

    from weir.errors import KafkaError
    from weir.producer import Producer

    error = None if error_code is None else KafkaError(error_code)
    produced = time.monotonic()
    deliveries = [
        (None, 0, None, b"v0", None, TIMESTAMP, produced),
        (None, 1, b"k", None, [("h", b"1"), ("n", None)], TIMESTAMP + 1, produced),
        (None, 5, b"", b"", [], TIMESTAMP + 2, produced),
    ]
    producer = SimpleNamespace(_only_errors=only_errors)

    def python(deliveries: Any, topic: str, partition: int, *rest: Any) -> None:
        Producer._serve_python(producer, topic, partition, deliveries, *rest[:-1])  # type: ignore[arg-type]

    def in_c(*args: Any) -> None:
        native.serve_deliveries(*args, time.monotonic())

    expected = served(python, deliveries, error, base_offset, log_append_time, only_errors)
    assert served(in_c, deliveries, error, base_offset, log_append_time, only_errors, kind) == expected
    assert len(expected) == (0 if only_errors and error is None else 3)


@pytest.mark.parametrize("kind", ["list", "log"])
def test_a_raising_delivery_callback_stops_the_report_in_c_as_in_python(kind: str) -> None:
    calls: list[int] = []

    def failing(error: Any, message: Any) -> None:
        calls.append(message.offset())
        raise ValueError("application bug")

    deliveries = delivery_records(kind, [(failing, index, None, b"v", None, TIMESTAMP, 0.0) for index in range(3)])
    with pytest.raises(ValueError, match="application bug"):
        native.serve_deliveries(deliveries, "t", 0, None, 10, -1, 1, False, 1.0)
    assert calls == [10]


@pytest.mark.parametrize("kind", ["list", "log"])
def test_served_delivery_records_are_released_as_their_callbacks_return(kind: str) -> None:
    # Freed at once, not with the whole batch later; and never reported twice.
    offsets: list[int] = []

    def second_fails(error: Any, message: Any) -> None:
        offsets.append(message.offset())
        if message.offset() == 11 and offsets.count(11) == 1:
            raise ValueError("application bug")

    deliveries = delivery_records(kind, [(second_fails, index, None, b"v", None, TIMESTAMP, 0.0) for index in range(3)])
    with pytest.raises(ValueError, match="application bug"):
        native.serve_deliveries(deliveries, "t", 0, None, 10, -1, 1, False, 1.0)
    assert [entry if entry is None else entry[1] for entry in deliveries] == [None, 1, 2]
    native.serve_deliveries(deliveries, "t", 0, None, 10, -1, 1, False, 1.0)  # the rest, from the record that raised
    assert offsets == [10, 11, 11, 12]
    assert list(deliveries) == [None, None, None]


def test_a_delivery_log_reads_back_as_the_list_of_delivery_records() -> None:
    headers = [("h", b"1")]
    entries = [(on_delivery, 0, None, b"v0", None, TIMESTAMP, 1.5), (print, 7, b"k", None, headers, -(2**62), -0.25)]
    log = native.DeliveryLog()
    assert (len(log), bool(log), list(log)) == (0, False, [])
    for entry in entries:
        log.append(entry)
    assert (len(log), bool(log)) == (2, True)
    assert list(log) == entries and log[1][4] is headers
    assert [entry[:6] for entry in log] == [entry[:6] for entry in entries]
    with pytest.raises(IndexError):
        log[2]


@pytest.mark.parametrize(
    "bad",
    [
        (on_delivery, 0, None, b"v", None, TIMESTAMP),  # six fields
        [on_delivery, 0, None, b"v", None, TIMESTAMP, 0.0],  # not a tuple
        (on_delivery, "0", None, b"v", None, TIMESTAMP, 0.0),  # the index
        (on_delivery, 0, None, b"v", None, 2**63, 0.0),  # a timestamp beyond int64
        (on_delivery, 0, None, b"v", None, TIMESTAMP, "now"),  # the produce time
    ],
)
def test_a_delivery_log_refuses_what_is_not_a_delivery_record(bad: Any) -> None:
    log = native.DeliveryLog()
    with pytest.raises((TypeError, OverflowError)):
        log.append(bad)
    assert len(log) == 0


def test_a_cycle_through_a_delivery_log_is_collected() -> None:
    # A callback may hold the producer that holds the batch: the collector must see through the log.
    import gc
    import weakref

    class Holder:
        def callback(self, error: Any, message: Any) -> None:
            """Holds ``self`` and through it the log."""

    holder = Holder()
    log = native.DeliveryLog()
    log.append((holder.callback, 0, None, b"v", None, TIMESTAMP, 0.0))
    holder.log = log  # type: ignore[attr-defined]
    gone = weakref.ref(holder)
    del holder, log
    gc.collect()
    assert gone() is None


def test_batches_keep_their_delivery_records_in_a_list_without_the_native_codec(monkeypatch: pytest.MonkeyPatch) -> None:
    from weir import producer_accumulator

    assert type(producer_accumulator.new_deliveries()) is native.DeliveryLog
    monkeypatch.setattr(records, "_native", None)
    assert producer_accumulator.new_deliveries() == []


def test_threads_producing_while_the_sender_drains_lose_and_double_nothing() -> None:
    clock = ManualClock()
    fast = FastProducer(clock, 4000, linger_ms=0)
    threads_count, per_thread = 4, 3000
    drained: list[ProducerBatch] = []
    producing = threading.Event()
    producing.set()

    def produce(thread: int) -> None:
        for index in range(per_thread):
            fast.appender.produce("t", b"%d:%d" % (thread, index))

    def drain() -> None:
        while producing.is_set():
            drained.extend(fast.accumulator.drain()[0])

    drainer = threading.Thread(target=drain)
    producers = [threading.Thread(target=produce, args=(thread,)) for thread in range(threads_count)]
    drainer.start()
    for thread in producers:
        thread.start()
    for thread in producers:
        thread.join(60)
    producing.clear()
    drainer.join(60)
    drained.extend(fast.accumulator.drain()[0])
    values = []
    for batch in drained:
        decoded = list(records.iter_records(batch.builder.build()))
        assert [record.offset for record in decoded] == list(range(batch.record_count))
        assert batch.size == len(batch.builder.build())
        values += [record.value for record in decoded]
    assert sorted(values) == sorted(b"%d:%d" % (thread, index) for thread in range(threads_count) for index in range(per_thread))
    for thread in range(threads_count):  # each thread's records keep their order
        mine = [value for value in values if value.startswith(b"%d:" % thread)]
        assert mine == [b"%d:%d" % (thread, index) for index in range(per_thread)]
    assert fast.accumulator.outstanding == threads_count * per_thread
    assert fast.accumulator.buffered_bytes == sum(batch.size for batch in drained)

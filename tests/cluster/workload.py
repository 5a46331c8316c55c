"""Clients that keep a ledger of what the cluster acknowledged, and the checks made of it.

A :class:`ProducerWorkload` runs one ``weir.Producer`` (acks=all, idempotent) in a thread.
Record ``seq`` of producer ``name`` carries the value ``name:seq`` (zero-padded) and goes to
partition ``seq % partitions``, so every partition gets an increasing run of sequence numbers
from each producer. Delivery reports fill a :class:`ProducerLedger`: acknowledged records with
their offsets, failed ones with their errors. A :class:`GroupConsumerWorkload` is a subscribed
group member (SDK or librdkafka) that commits after each batch and logs its reads, assignments
and commits in order (:class:`GroupConsumerLog`), for checks of what a consumer saw across faults.

The checks are Jepsen's for a log: every acknowledged record is read back at the offset it
was acknowledged at; no value is stored twice; each producer's records appear in their
partition in the order it sent them; replicas never disagree about the record at an offset.
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tests.support.real_cluster import ReplicaLog
from weir import OFFSET_BEGINNING, Consumer, KafkaError, Producer, TopicPartition
from weir.consumer import consume_available

PRODUCE_INTERVAL_SECONDS = 0.01  # between two produce() calls: a steady hundred records a second (enough for every fault to
# land among records in flight; a faster pace only costs the suite CPU, which the 2-core machine shares)
FLUSH_SECONDS = 60.0  # longest a stopping producer waits for its last delivery reports
CONSUME_SECONDS = 60.0  # longest read_everything waits to reach the end offsets


def record_value(producer: str, sequence: int) -> bytes:
    return f"{producer}:{sequence:09d}".encode()


def parse_value(value: bytes) -> tuple[str, int]:
    """(producer name, sequence number) of a value written by :func:`record_value`."""
    producer, _, sequence = value.decode().rpartition(":")
    return producer, int(sequence)


@dataclass(frozen=True)
class Delivery:
    partition: int
    offset: int


@dataclass
class ProducerLedger:
    """What one producer sent and what the cluster answered. Thread-safe (one lock)."""

    name: str
    sent: dict[bytes, int] = field(default_factory=dict)  # value -> partition
    acknowledged: dict[bytes, Delivery] = field(default_factory=dict)
    failed: dict[bytes, KafkaError] = field(default_factory=dict)
    produce_errors: list[str] = field(default_factory=list)  # produce() raised (not BufferError)
    client_errors: list[KafkaError] = field(default_factory=list)  # error_cb
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def on_delivery(self, error: KafkaError | None, message: object) -> None:
        value = message.value()  # type: ignore[attr-defined]
        with self.lock:
            if error is None:
                self.acknowledged[value] = Delivery(message.partition(), message.offset())  # type: ignore[attr-defined]
            else:
                self.failed[value] = error

    def on_client_error(self, error: KafkaError) -> None:
        with self.lock:
            self.client_errors.append(error)

    def non_retriable_failures(self) -> dict[bytes, KafkaError]:
        with self.lock:
            return {value: error for value, error in self.failed.items() if not error.retriable()}

    def summary(self) -> str:
        with self.lock:
            codes: dict[str, int] = defaultdict(int)
            for error in self.failed.values():
                codes[error.name()] += 1
            return (
                f"producer {self.name}: {len(self.sent)} sent, {len(self.acknowledged)} acknowledged, "
                f"{len(self.failed)} failed {dict(codes)}, {len(self.produce_errors)} produce() errors, "
                f"{len(self.client_errors)} client errors {[error.name() for error in self.client_errors[:5]]}"
            )


class ProducerWorkload:
    """One idempotent acks=all producer producing in its own thread until :meth:`stop`."""

    def __init__(
        self,
        config: Mapping[str, object],
        topic: str,
        partitions: int,
        name: str,
        *,
        interval_seconds: float = PRODUCE_INTERVAL_SECONDS,
        producer_class: Callable[[dict[str, object]], Any] = Producer,
    ) -> None:
        """``producer_class`` is the weir SDK's Producer, or confluent-kafka's (librdkafka over the
        brokers' Kafka listeners): both have confluent-kafka's API."""
        self.topic = topic
        self.partitions = partitions
        self.ledger = ProducerLedger(name)
        self.interval_seconds = interval_seconds
        self.producer = producer_class(
            {
                "acks": "all",
                "enable.idempotence": True,
                "linger.ms": 5,
                # Long enough to outlast every failover a test causes: a record is given up only
                # when the cluster stayed unable to take it for this long.
                "delivery.timeout.ms": 120000,
                "retry.backoff.ms": 50,
                "retry.backoff.max.ms": 500,
                "error_cb": self.ledger.on_client_error,
                **config,
            }
        )
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"producer-{name}", daemon=True)

    def start(self) -> ProducerWorkload:
        self._thread.start()
        return self

    def _run(self) -> None:
        sequence = 0
        while not self._stopping.is_set():
            value = record_value(self.ledger.name, sequence)
            partition = sequence % self.partitions
            try:
                self.producer.produce(self.topic, value=value, partition=partition, on_delivery=self.ledger.on_delivery)
            except BufferError:
                self.producer.poll(0.1)
                continue
            except Exception as error:  # noqa: BLE001 - every failure is evidence for the test
                with self.ledger.lock:
                    self.ledger.produce_errors.append(repr(error))
                self.producer.poll(0.1)
                continue
            with self.ledger.lock:
                self.ledger.sent[value] = partition
            sequence += 1
            self.producer.poll(0)
            time.sleep(self.interval_seconds)

    def acknowledged_count(self) -> int:
        with self.ledger.lock:
            return len(self.ledger.acknowledged)

    def stop(self, flush_seconds: float = FLUSH_SECONDS) -> ProducerLedger:
        """Stop producing, wait (bounded) for the outstanding delivery reports, close. Idempotent."""
        if not self._stopping.is_set():
            self._stopping.set()
            self._thread.join(timeout=30)
            self.producer.flush(flush_seconds)
            self.producer.close(5)
        return self.ledger

    def __enter__(self) -> ProducerWorkload:
        return self

    def __exit__(self, *exc_info: object) -> None:
        # A test that failed midway does not wait for the cluster it may have broken.
        self.stop(flush_seconds=0)


@dataclass
class ConsumedLog:
    """partition -> [(offset, value)] in the order a consumer read them, and its errors."""

    records: dict[int, list[tuple[int, bytes]]] = field(default_factory=lambda: defaultdict(list))
    errors: list[KafkaError] = field(default_factory=list)


def read_everything(config: Mapping[str, object], topic: str, end_offsets: Mapping[int, int], *, timeout: float = CONSUME_SECONDS) -> ConsumedLog:
    """Read every partition of ``topic`` from its beginning up to ``end_offsets`` (exclusive)
    with a ``weir.Consumer`` (assign, no group). AssertionError when the ends are not reached in time."""
    consumed = ConsumedLog()
    consumer = Consumer({"enable.auto.commit": False, "enable.partition.eof": False, **config})
    try:
        consumer.assign([TopicPartition(topic, partition, OFFSET_BEGINNING) for partition in end_offsets])
        positions = {partition: 0 for partition in end_offsets}
        deadline = time.monotonic() + timeout
        while any(positions[partition] < end for partition, end in end_offsets.items()):
            if time.monotonic() >= deadline:
                raise AssertionError(
                    f"consumer did not reach the end offsets {dict(end_offsets)} in {timeout:.0f} s: at {positions}; errors {consumed.errors[:5]}"
                )
            for message in consume_available(consumer, 500, 0.5):
                error = message.error()
                if error is not None:
                    consumed.errors.append(error)
                    continue
                consumed.records[message.partition()].append((message.offset(), message.value()))
                positions[message.partition()] = message.offset() + 1
    finally:
        consumer.close()
    return consumed


def check_acknowledged_records_read_back(ledgers: Iterable[ProducerLedger], consumed: ConsumedLog) -> list[str]:
    """Every acknowledged record read back in its partition at the offset it was acknowledged at
    (an offset of -1, "already appended" answered to a retry, only needs the record present)."""
    problems = []
    by_value = {value: (partition, offset) for partition, records in consumed.records.items() for offset, value in records}
    for ledger in ledgers:
        with ledger.lock:
            acknowledged = dict(ledger.acknowledged)
        for value, delivery in sorted(acknowledged.items()):
            found = by_value.get(value)
            if found is None:
                problems.append(f"acknowledged {value!r} (partition {delivery.partition} offset {delivery.offset}) is lost")
            elif found[0] != delivery.partition or (delivery.offset >= 0 and found[1] != delivery.offset):
                problems.append(
                    f"acknowledged {value!r} at partition {delivery.partition} offset {delivery.offset} is at partition {found[0]} offset {found[1]}"
                )
    return problems


def check_no_duplicates(consumed: ConsumedLog) -> list[str]:
    """No value stored twice; no offset read twice or out of order in a partition."""
    problems = []
    seen: dict[bytes, tuple[int, int]] = {}
    for partition, records in sorted(consumed.records.items()):
        offsets = [offset for offset, _ in records]
        if offsets != sorted(set(offsets)):
            problems.append(f"partition {partition}: offsets read out of order or twice")
        for offset, value in records:
            if value in seen:
                problems.append(f"{value!r} stored twice: partition {seen[value][0]} offset {seen[value][1]} and partition {partition} offset {offset}")
            seen[value] = (partition, offset)
    return problems


def check_producer_order(consumed: ConsumedLog) -> list[str]:
    """Each producer's records appear in each partition in increasing sequence order."""
    problems = []
    for partition, records in sorted(consumed.records.items()):
        last: dict[str, tuple[int, int]] = {}
        for offset, value in records:
            producer, sequence = parse_value(value)
            if producer in last and sequence <= last[producer][0]:
                problems.append(
                    f"partition {partition}: {producer} sequence {sequence} at offset {offset} after sequence {last[producer][0]} at offset {last[producer][1]}"
                )
            last[producer] = (sequence, offset)
    return problems


def check_replicas_agree(partition: int, replicas: list[ReplicaLog]) -> list[str]:
    """No offset holds two different records on two replicas, and every replica ends at the same offset."""
    problems = []
    ends = {replica.node_id: replica.end_offset for replica in replicas}
    if len(set(ends.values())) != 1:
        problems.append(f"partition {partition}: replicas end at different offsets {ends}")
    offsets = set().union(*(replica.values for replica in replicas)) if replicas else set()
    for offset in sorted(offsets):
        values = {replica.node_id: replica.values[offset] for replica in replicas if offset in replica.values}
        if len(set(values.values())) > 1:
            problems.append(f"partition {partition} offset {offset}: replicas disagree {values}")
    return problems


def check_consumed_matches_replicas(partition: int, consumed: ConsumedLog, replicas: list[ReplicaLog]) -> list[str]:
    """What the consumer read is what each replica stored, offset for offset."""
    read = dict(consumed.records.get(partition, []))
    problems = []
    for replica in replicas:
        if replica.values != read:
            differing = sorted(offset for offset in set(read) | set(replica.values) if read.get(offset) != replica.values.get(offset))
            problems.append(
                f"partition {partition}: broker {replica.node_id} differs from what the consumer read at {len(differing)} offsets, first {differing[:5]}"
            )
    return problems


def deliver(producer: Producer, topic: str, partition: int, values: Iterable[bytes], *, timeout: float = 30.0) -> list[tuple[KafkaError | None, int]]:
    """Produce ``values`` to one partition and wait (bounded) for every delivery report;
    (error or None, offset) per value, in order."""
    reports: dict[bytes, tuple[KafkaError | None, int]] = {}

    def delivered(error: KafkaError | None, message: object) -> None:
        reports[message.value()] = (error, message.offset())  # type: ignore[attr-defined]

    values = list(values)
    for value in values:
        producer.produce(topic, value=value, partition=partition, on_delivery=delivered)
    remaining = producer.flush(timeout)
    assert remaining == 0 and len(reports) == len(values), f"{remaining} of {len(values)} records without a delivery report after {timeout:.0f} s"
    return [reports[value] for value in values]


def produce_and_wait(
    config: Mapping[str, object], topic: str, partition: int, values: Iterable[bytes], *, timeout: float = 30.0
) -> list[tuple[KafkaError | None, int]]:
    """:func:`deliver` with a producer of its own, configured by ``config`` (acks,
    idempotence, retries... as the caller says), closed afterwards."""
    producer = Producer({"linger.ms": 0, **config})
    try:
        return deliver(producer, topic, partition, values, timeout=timeout)
    finally:
        producer.close(5)


class ConsumerWorkload:
    """A ``weir.Consumer`` reading every partition of a topic from its beginning in its own
    thread until :meth:`stop`; what it read and every error it saw go into a :class:`ConsumedLog`."""

    def __init__(self, config: Mapping[str, object], topic: str, partitions: int) -> None:
        self.consumed = ConsumedLog()
        self.client_errors: list[KafkaError] = []
        self._lock = threading.Lock()
        self._consumer = Consumer({"enable.auto.commit": False, "error_cb": self._client_error, **config})
        self._consumer.assign([TopicPartition(topic, partition, OFFSET_BEGINNING) for partition in range(partitions)])
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"consumer-{topic}", daemon=True)

    def _client_error(self, error: KafkaError) -> None:
        with self._lock:
            self.client_errors.append(error)

    def start(self) -> ConsumerWorkload:
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stopping.is_set():
            for message in consume_available(self._consumer, 500, 0.2):
                with self._lock:
                    if message.error() is not None:
                        self.consumed.errors.append(message.error())
                    else:
                        self.consumed.records[message.partition()].append((message.offset(), message.value()))

    def positions(self) -> dict[int, int]:
        """Partition -> the offset after the last record read."""
        with self._lock:
            return {partition: records[-1][0] + 1 for partition, records in self.consumed.records.items() if records}

    def stop(self) -> ConsumedLog:
        """Stop reading and close the consumer. Idempotent."""
        if not self._stopping.is_set():
            self._stopping.set()
            self._thread.join(timeout=30)
            self._consumer.close()
        return self.consumed

    def __enter__(self) -> ConsumerWorkload:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


@dataclass
class GroupConsumerLog:
    """What a group consumer did, in order: records read, assignments, commits and errors."""

    records: dict[int, list[tuple[int, bytes]]] = field(default_factory=lambda: defaultdict(list))
    # One row per event, in order: ("assign", {partition: -1}), ("read", {partition: offset}),
    # ("commit", {partition: offset}) for an acknowledged commit, ("commit-failed", {}).
    events: list[tuple[str, dict[int, int]]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def positions(self) -> dict[int, int]:
        """Partition -> the offset after the last record read."""
        return {partition: records[-1][0] + 1 for partition, records in self.records.items() if records}

    def last_commit(self) -> dict[int, int]:
        """The offsets of the last commit the coordinator acknowledged (empty if none was)."""
        return next((offsets for kind, offsets in reversed(self.events) if kind == "commit"), {})

    def read_before_last_commit(self) -> dict[int, int]:
        """Partition -> the offset after the last record read before the last acknowledged commit was sent."""
        commits = [index for index, (kind, _) in enumerate(self.events) if kind == "commit"]
        read: dict[int, int] = {}
        for kind, offsets in self.events[: commits[-1] if commits else 0]:
            if kind == "read":
                for partition, offset in offsets.items():
                    read[partition] = offset + 1
        return read


class GroupConsumerWorkload:
    """A subscribed consumer in a group (classic protocol) reading in its own thread until
    :meth:`stop`, committing synchronously after each batch the offsets after what it read.

    ``consumer_class`` is confluent-kafka's Consumer (librdkafka over the Kafka listeners) or the
    weir SDK's. The log keeps each batch's reads before its commit, so a check can compare what
    was committed with what had been read when the commit was sent."""

    def __init__(
        self,
        config: Mapping[str, object],
        topic: str,
        group: str,
        *,
        consumer_class: Callable[[dict[str, object]], Any] = Consumer,
        topic_partition_class: Callable[..., Any] = TopicPartition,
    ) -> None:
        """``topic_partition_class`` is the TopicPartition of ``consumer_class``'s library (its commit takes no other)."""
        self.topic = topic
        self._topic_partition = topic_partition_class
        self.log = GroupConsumerLog()
        self._lock = threading.Lock()
        self._consumer = consumer_class(
            {
                "group.id": group,
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
                "error_cb": self._client_error,
                **config,
            }
        )
        # partition -> (offset after the last record read, that record's leader epoch), not yet committed
        self._uncommitted: dict[int, tuple[int, int | None]] = {}
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"group-consumer-{group}", daemon=True)

    def _client_error(self, error: KafkaError) -> None:
        with self._lock:
            self.log.errors.append(f"error_cb {error.name()}: {error.str()}")

    def _on_assign(self, consumer: Any, partitions: list[TopicPartition]) -> None:
        # Runs inside consume(), on the reading thread. A new assignment resumes at the group's
        # committed offsets: what was read but not committed before it is read again, and
        # committing it now would move an offset past records this assignment has not read.
        self._uncommitted.clear()
        with self._lock:
            self.log.events.append(("assign", {partition.partition: partition.offset for partition in partitions}))

    def start(self) -> GroupConsumerWorkload:
        self._consumer.subscribe([self.topic], on_assign=self._on_assign)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stopping.is_set():
            self._read(consume_available(self._consumer, 500, 0.2))
            self._commit()

    def _read(self, messages: list[Any]) -> None:
        with self._lock:
            for message in messages:
                if message.error() is not None:
                    self.log.errors.append(f"message {message.error().name()}: {message.error().str()}")
                    continue
                self.log.records[message.partition()].append((message.offset(), message.value()))
                self.log.events.append(("read", {message.partition(): message.offset()}))
                self._uncommitted[message.partition()] = (message.offset() + 1, message.leader_epoch())

    def _commit(self) -> None:
        if not self._uncommitted:
            return
        # With the leader epoch of the last record read (KIP-320), as Kafka's clients commit: the
        # next member validates it against the partition's epochs before fetching from it.
        offsets = [
            self._topic_partition(self.topic, partition, offset, **({} if epoch is None else {"leader_epoch": epoch}))
            for partition, (offset, epoch) in sorted(self._uncommitted.items())
        ]
        try:
            answered = self._consumer.commit(offsets=offsets, asynchronous=False)
        except Exception as error:  # noqa: BLE001 - a failed commit is retried after the next batch, and kept as evidence
            with self._lock:
                self.log.events.append(("commit-failed", {}))
                self.log.errors.append(f"commit {error!r}")
            return
        committed = {answer.partition: answer.offset for answer in answered or [] if answer.error is None}
        with self._lock:
            self.log.events.append(("commit", committed))
        for partition, offset in committed.items():
            if self._uncommitted.get(partition, (None, None))[0] == offset:
                del self._uncommitted[partition]

    def positions(self) -> dict[int, int]:
        with self._lock:
            return self.log.positions()

    def stop(self) -> GroupConsumerLog:
        """Stop reading (after a last commit) and close the consumer (leaving the group). Idempotent."""
        if not self._stopping.is_set():
            self._stopping.set()
            self._thread.join(timeout=30)
            self._commit()
            self._consumer.close()
        return self.log

    def __enter__(self) -> GroupConsumerWorkload:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

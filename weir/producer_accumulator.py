"""The producer's record accumulator: one open RecordBatch per partition, filled by produce().

produce() encodes each record straight into the open ``RecordBatchBuilder`` of its partition
(no per-record object unless a delivery callback needs one). A batch is *ready* when it is
full (``batch.size`` bytes or ``batch.num.messages`` records), when ``linger.ms`` has passed
since its first record, or when a flush or a blocked produce() asks for everything. The
sender thread takes ready batches with :meth:`RecordAccumulator.drain` and gives their bytes
back with :meth:`RecordAccumulator.release` once they are answered.

Back-pressure: the encoded bytes of every batch not yet released count against
``buffer.memory``; produce() waits up to ``max.block.ms`` for room, then raises
``BufferError`` (confluent-kafka's type for a full queue).

Thread-safety: every method takes the accumulator's single lock; produce() threads and the
sender thread share it. The lock is held only for in-memory work, never for I/O.

Native fast path: with the native codec, the producer's common records (no headers, a bytes value
and a bytes key or none) never reach :meth:`RecordAccumulator.append` once their partition's open
batch is armed. ``append`` *arms* a ``weir._records_native.StickyAppender`` with the open batch it
just appended to (any number of partitions of one topic at a time; the batch of the topic's sticky
partition also takes keyless records); the appender's ``produce`` then takes this lock (without
blocking), chooses the record's partition as Producer.produce does (explicit, else the key's hash,
else sticky), encodes the record straight into that partition's armed batch and counts it itself,
and hands every other record to the Python ``Producer.produce``. Every method that reads a batch's
or the buffer's counters first folds what the appender counted into them
(:meth:`RecordAccumulator._fold`), and every one that changes an armed batch (a Python append to
it, closing, draining, purging) disarms that batch first, so the Python objects stay the single
truth whenever the lock is free.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any, Protocol

from weir import records as record_codec
from weir.partitioner import StickyPartitions
from weir.records import HEADER_SIZE, RecordBatchBuilder

# Upper bound of a record's encoding beyond its key and value (varints and attributes);
# the same bound RecordBatchBuilder.estimate_size uses.
RECORD_OVERHEAD = 21

# A delivery callback's record, kept only when a callback wants it: (callback, index of the
# record in its batch, key, value, headers, timestamp, monotonic time of produce()). The index
# gives the record's offset (base offset + index) even when other records have no callback.
Delivery = tuple[Callable[..., Any], int, bytes | None, bytes | None, Any, int, float]


class Deliveries(Protocol):
    """A batch's delivery records in order: a list, or with the native codec a
    ``weir._records_native.DeliveryLog``, which keeps them in one array (the native appender writes
    them there without a Python object per record) and reads back as the list would, an entry
    being None once its report was served."""

    def append(self, delivery: Delivery, /) -> None: ...

    def __len__(self) -> int: ...

    def __getitem__(self, index: int, /) -> Delivery | None: ...

    def __iter__(self) -> Iterator[Delivery | None]: ...


def new_deliveries() -> Deliveries:
    """An empty record of delivery callbacks for one batch: a DeliveryLog with the native codec, else a list."""
    native = record_codec._native
    if native is None:
        return []
    log: Deliveries = native.DeliveryLog()
    return log


class ProducerBatch:
    """The records of one partition that travel in one RecordBatch.

    ``size`` is the encoded size before compression, which is also what the batch holds
    of ``buffer.memory``. After :meth:`RecordAccumulator.drain` the builder is no longer
    appended to and belongs to the sender, which sets ``payload`` (the encoded bytes, sent
    unchanged on every retry), ``base_sequence`` and the retry fields. ``maybe_persisted``
    is true once a send of the batch may have been appended without the producer knowing
    (no answer, a deadline, or an answer that does not rule it out).
    """

    __slots__ = (
        "topic",
        "partition",
        "builder",
        "size",
        "created",
        "deliveries",
        "payload",
        "base_sequence",
        "queue_position",
        "attempts",
        "retry_at",
        "deadline",
        "last_error",
        "maybe_persisted",
        "sent_behind",
        "sent_to",
    )

    def __init__(self, topic: str, partition: int, builder: RecordBatchBuilder, created: float) -> None:
        self.topic = topic
        self.partition = partition
        self.builder = builder
        self.size = HEADER_SIZE
        self.created = created
        self.deliveries = new_deliveries()
        self.payload: bytes | None = None
        self.base_sequence = -1
        # Order in which the sender received the batch within its partition (never wraps).
        self.queue_position = 0
        self.attempts = 0
        self.retry_at = 0.0
        self.deadline = 0.0
        self.last_error: Any = None
        self.maybe_persisted = False
        # Whether a batch numbered before it was unacknowledged when it was last sent: an
        # OUT_OF_ORDER_SEQUENCE_NUMBER answer then says it overtook that one (see producer_idempotence).
        self.sent_behind = False
        self.sent_to: str | None = None  # the broker address of the last attempt

    @property
    def record_count(self) -> int:
        return self.builder.record_count

    @property
    def encoded(self) -> bytes:
        """``payload`` once the sender has set it; every batch in a sender's queue has one."""
        if self.payload is None:
            raise RuntimeError(f"{self!r} is not encoded yet: the sender sets its payload before queueing it")
        return self.payload

    def __repr__(self) -> str:
        return f"ProducerBatch({self.topic}-{self.partition}, records={self.record_count}, sequence={self.base_sequence})"


class RecordAccumulator:
    """Open batches per (topic, partition), ready batches in closing order, and buffer accounting.

    Invariants: at most one open batch per partition; batches of one partition leave
    :meth:`drain` in the order they were opened; ``buffered_bytes`` is the sum of ``size``
    over batches not yet released.
    """

    def __init__(
        self,
        *,
        batch_size: int,
        batch_max_records: int,
        linger_ms: int,
        buffer_memory: int,
        codec: int,
        transactional: bool = False,
        sticky: StickyPartitions | None = None,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._batch_size = batch_size
        self._batch_max_records = batch_max_records
        self._linger = linger_ms / 1000.0
        self._buffer_memory = buffer_memory
        self._codec = codec
        # A transactional producer's batches carry the transactional bit (attributes bit 4).
        self._transactional = transactional
        self._sticky = sticky or StickyPartitions()
        self._monotonic = monotonic
        self._lock = threading.Lock()
        # The sender waits on ``changed`` for a batch to become ready; produce() threads wait
        # on ``space`` for buffer memory.
        self.changed = threading.Condition(self._lock)
        self._space = threading.Condition(self._lock)
        self._open: dict[str, list[ProducerBatch | None]] = {}
        self._partition_counts: dict[str, int] = {}
        self._closed: deque[ProducerBatch] = deque()
        self._buffered = 0
        # Records given to append() whose delivery report has not been served yet: len(producer).
        self._outstanding = 0
        self._space_waiters = 0
        self._flushes = 0
        self._closing = False
        # Every change the sender must see bumps ``_changes`` (see :meth:`_signal`); ``drain``
        # notes the count it saw, so that a change between a drain and the sender's wait (a new
        # batch whose linger.ms the drain could not know) ends the wait at once instead of
        # being a notification nobody was waiting for.
        self._changes = 0
        self._drained_changes = 0
        # The native fast path (see the module docstring): its appender, the topic and metadata it is
        # armed for, and the batches armed by partition (the appender's own list of them).
        self._appender: Any = None
        self._armed_topic: tuple[str, Any] | None = None
        self._armed: dict[int, ProducerBatch] = {}

    @property
    def lock(self) -> threading.Lock:
        """The accumulator's lock: the native appender takes it around each record it appends."""
        return self._lock

    def attach_appender(self, appender: Any) -> None:
        """Use ``appender`` (a weir._records_native.StickyAppender built on :attr:`lock`) for sticky records from now on."""
        with self._lock:
            self._disarm_all()
            self._appender = appender

    def _fold(self) -> None:
        """Count the records the appender added to the armed batches since the last fold (lock held)."""
        if not self._armed:
            return
        armed = self._armed
        for partition, records, added, count, max_timestamp, last_offset_delta in self._appender.take():
            batch = armed[partition]
            batch.builder.absorb_appended(count, added, max_timestamp, last_offset_delta)
            batch.size += added
            self._buffered += added
            self._outstanding += records

    def _signal(self) -> None:
        """Count a change the sender must see and wake it if it waits (lock held)."""
        self._changes += 1
        self.changed.notify()

    def _disarm_all(self) -> None:
        """Fold, then stop the appender from adding to any batch (lock held)."""
        if self._armed:
            self._fold()
            self._appender.disarm()
            self._armed.clear()
        self._armed_topic = None

    def _disarm(self, batch: ProducerBatch) -> None:
        """Fold, then stop the appender from adding to ``batch`` if it is armed (lock held)."""
        if self._armed.get(batch.partition) is batch:
            self._fold()
            self._appender.disarm(batch.partition)
            del self._armed[batch.partition]

    def _arm(self, topic: str, partition_count: int, batch: ProducerBatch, arm: Any) -> None:
        """Let the appender add the next records of ``batch``'s partition to it (lock held, batch open,
        no record of the appender unfolded), and the topic's keyless ones when it is the sticky partition."""
        if self._armed_topic is None or self._armed_topic[0] != topic or self._armed_topic[1] is not arm:
            self._disarm_all()  # the appender keeps one topic's batches, of one metadata
            self._armed_topic = (topic, arm)
        sticky = self._sticky.current(topic) == batch.partition
        records, count, base_timestamp, max_timestamp, last_offset_delta = batch.builder.append_state()
        self._appender.arm(
            topic,
            arm,
            partition_count,
            batch.partition,
            sticky,
            records,
            batch.deliveries,
            count,
            batch.size,
            base_timestamp,
            max_timestamp,
            last_offset_delta,
            self._buffered,
        )
        self._armed[batch.partition] = batch

    def _close_armed(self, partition: int) -> None:
        """The appender filled the armed batch of ``partition`` (it holds the lock): close it, as append() would have."""
        batch = self._armed.get(partition)
        if batch is not None:
            self._close(batch)

    # ------------------------------------------------------------------ produce() side

    def append(
        self,
        topic: str,
        partition: int,
        partition_count: int,
        timestamp: int,
        key: bytes | None,
        value: bytes | None,
        headers: Any,
        delivery: Callable[..., Any] | None,
        estimated_size: int,
        max_block: float,
        arm: Any = None,
    ) -> None:
        """Encode one record into its partition's open batch.

        ``partition`` -1 means the topic's sticky partition. ``estimated_size`` is the key,
        value and header bytes; ``max_block`` the seconds to wait for buffer space before
        raising BufferError. ``arm``: the topic's metadata (TopicInfo) when the native appender
        may take the next records of the batch this one goes to (while the producer's metadata still
        is this object).
        """
        needed = estimated_size + RECORD_OVERHEAD
        with self._lock:
            self._fold()
            if self._buffered + needed > self._buffer_memory and self._buffered > 0:
                self._wait_for_space(needed, max_block)
                self._fold()
            partitions = self._open.get(topic)
            if partitions is None or len(partitions) < partition_count:
                partitions = self._grow(topic, partition_count)
            sticky = partition < 0
            if sticky:
                partition = self._sticky.partition(topic, partition_count)
            batch = partitions[partition]
            if batch is not None and (batch.size + needed > self._batch_size or batch.builder.record_count >= self._batch_max_records):
                self._close(batch)
                if sticky:
                    partition = self._sticky.partition(topic, partition_count)
                batch = partitions[partition]
            if batch is None:
                batch = ProducerBatch(topic, partition, RecordBatchBuilder(self._codec, transactional=self._transactional), self._monotonic())
                partitions[partition] = batch
                self._buffered += HEADER_SIZE
                # The sender may be asleep with nothing to do: it must learn when linger.ms ends.
                self._signal()
            else:
                self._disarm(batch)
            added = batch.builder.append(timestamp, key, value, headers)
            batch.size += added
            self._buffered += added
            self._outstanding += 1
            if delivery is not None:
                batch.deliveries.append((delivery, batch.builder.record_count - 1, key, value, headers, timestamp, time.monotonic()))
            if batch.size >= self._batch_size or batch.builder.record_count >= self._batch_max_records:
                self._close(batch)
            elif arm is not None and self._appender is not None:
                self._arm(topic, partition_count, batch, arm)

    def _grow(self, topic: str, partition_count: int) -> list[ProducerBatch | None]:
        partitions = self._open.setdefault(topic, [])
        partitions.extend([None] * (partition_count - len(partitions)))
        self._partition_counts[topic] = partition_count
        return partitions

    def _close(self, batch: ProducerBatch) -> None:
        """Move an open batch to the ready queue (lock held) and wake the sender."""
        self._disarm(batch)
        self._open[batch.topic][batch.partition] = None
        self._closed.append(batch)
        self._sticky.batch_sent(batch.topic, batch.partition, self._partition_counts[batch.topic])
        self._signal()

    def _wait_for_space(self, needed: int, max_block: float) -> None:
        deadline = time.monotonic() + max_block
        self._space_waiters += 1
        # A waiting producer makes every open batch ready (see drain), so that lingering
        # batches leave and free their memory instead of holding it until linger.ms.
        self._signal()
        try:
            while self._buffered + needed > self._buffer_memory and self._buffered > 0:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self._closing:
                    raise BufferError(
                        f"Local: Queue full: buffer.memory ({self._buffer_memory} bytes) is used by records "
                        f"not yet delivered and no room appeared within max.block.ms"
                    )
                self._space.wait(remaining)
        finally:
            self._space_waiters -= 1

    # ------------------------------------------------------------------ sender side

    def drain(self, muted: frozenset[tuple[str, int]] | set[tuple[str, int]] = frozenset()) -> tuple[list[ProducerBatch], float | None]:
        """Take every ready batch, oldest first; return them with the monotonic time at
        which the next open batch will be ready (None when no batch is open).

        The open batch of a ``muted`` partition (one with a request in flight or batches
        queued at the sender) stays open past linger.ms, as in Kafka's accumulator: records
        keep joining it until the partition's requests are answered, instead of queueing one
        tiny batch per record behind the request in flight. Full batches still leave (and the
        sender may pipeline them, see weir.producer_idempotence).
        """
        now = self._monotonic()
        with self._lock:
            self._drained_changes = self._changes
            self._fold()
            ready = list(self._closed)
            self._closed.clear()
            everything = self._flushes > 0 or self._space_waiters > 0 or self._closing
            next_ready: float | None = None
            for topic, partitions in self._open.items():
                for partition, batch in enumerate(partitions):
                    if batch is None:
                        continue
                    if not everything and muted and (topic, partition) in muted:
                        continue  # the sender wakes when the partition's answer arrives
                    due = batch.created + self._linger
                    if everything or due <= now:
                        self._disarm(batch)
                        partitions[partition] = None
                        self._sticky.batch_sent(topic, partition, self._partition_counts[topic])
                        ready.append(batch)
                    elif next_ready is None or due < next_ready:
                        next_ready = due
            return ready, next_ready

    def release(self, batch: ProducerBatch) -> None:
        """The batch is answered (delivered or failed): give its bytes back to buffer.memory."""
        with self._lock:
            self._buffered -= batch.size
            self._space.notify_all()

    def begin_flush(self) -> None:
        """Make every batch ready until :meth:`end_flush` (flush() and purge())."""
        with self._lock:
            self._flushes += 1
            self._signal()

    def end_flush(self) -> None:
        with self._lock:
            self._flushes -= 1

    def close(self) -> None:
        """Make every batch ready from now on and fail produce() calls waiting for space."""
        with self._lock:
            self._closing = True
            self._signal()
            self._space.notify_all()

    def abort_unsent(self) -> list[ProducerBatch]:
        """Remove every open and ready batch (purge()) and return them; their memory is released."""
        with self._lock:
            self._disarm_all()
            batches = list(self._closed)
            self._closed.clear()
            for _topic, partitions in self._open.items():
                for partition, batch in enumerate(partitions):
                    if batch is not None:
                        partitions[partition] = None
                        batches.append(batch)
            for batch in batches:
                self._buffered -= batch.size
            self._space.notify_all()
            return batches

    def wait_for_work(self, timeout: float, pending: Callable[[], bool]) -> None:
        """Sender side: sleep up to ``timeout`` unless a batch is ready or ``pending()`` is true."""
        with self._lock:
            if self._closed or pending():
                return
            if self._changes != self._drained_changes:
                self._drained_changes = self._changes  # once per change, even if no drain follows (a failed round)
                return
            if (self._flushes or self._space_waiters or self._closing) and self._any_open():
                return
            self.changed.wait(timeout)

    def open_partitions(self) -> list[tuple[str, int]]:
        """The partitions with an open batch: records appended and not drained yet (a transaction adds them at once)."""
        with self._lock:
            return [(topic, partition) for topic, partitions in self._open.items() for partition, batch in enumerate(partitions) if batch is not None]

    def _any_open(self) -> bool:
        return any(batch is not None for partitions in self._open.values() for batch in partitions)

    def records_done(self, count: int) -> None:
        """``count`` records were reported (or need no report): they leave len(producer)."""
        with self._lock:
            self._outstanding -= count

    def records_added(self, count: int) -> None:
        """Records reported without entering a batch (unknown topic) still count until served."""
        with self._lock:
            self._outstanding += count

    @property
    def outstanding(self) -> int:
        with self._lock:
            self._fold()
            return self._outstanding

    def wake(self) -> None:
        """Wake the sender (a response arrived or a retry is due)."""
        with self._lock:
            self._signal()

    @property
    def buffered_bytes(self) -> int:
        with self._lock:
            self._fold()
            return self._buffered

    @property
    def has_open_batches(self) -> bool:
        with self._lock:
            return bool(self._closed) or self._any_open()

"""Idempotent delivery bookkeeping: producer id, per-partition sequence numbers, ordering.

With ``enable.idempotence`` the producer gets a producer id and epoch from InitProducerId
once, and numbers the records of every partition 0, 1, 2, ... (wrapping at 2**31 as Kafka
does). A batch's ``baseSequence`` is fixed when the sender takes it from the accumulator and
never changes: a retry sends the very same bytes, so the broker recognises a duplicate and
answers with the offset it already assigned.

:class:`PartitionQueue` keeps a partition's batches in sequence order and sends them one
request at a time per partition. Kafka can keep five requests of one partition in flight
because a broker handles the requests of one connection in order; a gRPC server runs
concurrent calls on concurrent threads, so a second in-flight batch could be appended
before the first (out of order, or answered OUT_OF_ORDER_SEQUENCE_NUMBER). Requests for
different partitions and brokers still overlap, up to ``max.in.flight`` per broker. Once a
batch must be retried, it is resent before anything newer. A batch answered
OUT_OF_ORDER_SEQUENCE_NUMBER while an earlier one is unacknowledged is queued for retry
behind it rather than failed, as Kafka's Java producer does.

Sequence gaps (what the sender does, after librdkafka's idempotent producer): when a numbered
batch fails for good (its error is not retriable, or delivery.timeout.ms passed), its numbers
leave a gap that the partition's leader would refuse in every later batch. The producer then
asks InitProducerId for a new epoch of its id (KIP-360) and numbers every unacknowledged batch
of every partition from 0 again. The bump waits until no request is in flight and no batch
that may already have been appended (:attr:`ProducerBatch.maybe_persisted`) is left: those
are sent again, unchanged under the old epoch, meanwhile (``resends_only``), so that the
broker still recognises them as duplicates and nothing is written twice. UNKNOWN_PRODUCER_ID
for a batch that cannot have been appended and has nothing unacknowledged before it (the
broker lost the producer's state) bumps the epoch and retries the batch; OUT_OF_ORDER_SEQUENCE
for the oldest unacknowledged batch (the leader lacks earlier acknowledged batches, which a
clean election never causes) fails that batch, where librdkafka stops the producer with a
fatal error, and bumps the epoch so that later batches go on.

Not thread-safe: only the sender thread uses these.
"""

from __future__ import annotations

import bisect
from collections import deque

from weir.producer_accumulator import ProducerBatch
from weir.records import set_producer_state

SEQUENCE_MODULUS = 2**31


def stamp_producer_state(batch: bytes, producer_id: int, producer_epoch: int, base_sequence: int) -> bytes:
    """Return ``batch`` with its producer id, epoch and base sequence set and its CRC recomputed."""
    buffer = bytearray(batch)
    set_producer_state(buffer, 0, producer_id, producer_epoch, base_sequence)
    return bytes(buffer)


class PartitionQueue:
    """The sender's batches of one partition: waiting, in flight, and to be retried.

    Invariants: ``unacknowledged`` lists every batch given to :meth:`add` and not yet
    acknowledged or failed, in sequence order; ``retries`` is a subsequence of it;
    ``waiting`` holds batches never sent, in sequence order.
    """

    __slots__ = ("next_sequence", "waiting", "retries", "unacknowledged", "in_flight", "_order")

    def __init__(self) -> None:
        self.next_sequence = 0
        self.waiting: deque[ProducerBatch] = deque()
        self.retries: list[tuple[int, ProducerBatch]] = []
        self.unacknowledged: dict[int, ProducerBatch] = {}
        self.in_flight = 0
        # Monotonic counter of batches added: the sequence order without wrap-around.
        self._order = 0

    def add(self, batch: ProducerBatch, assign_sequence: bool) -> None:
        """Queue a batch just taken from the accumulator, numbering it when idempotent."""
        if assign_sequence:
            batch.base_sequence = self.next_sequence
            self.next_sequence = (self.next_sequence + batch.record_count) % SEQUENCE_MODULUS
        batch.queue_position = self._order
        self.unacknowledged[self._order] = batch
        self._order += 1
        self.waiting.append(batch)

    def next_sendable(self, now: float, resends_only: bool = False) -> ProducerBatch | None:
        """The batch to send now, or None (see the module docstring for the rules).

        ``resends_only``: only a batch that may already have been appended (while an epoch
        bump waits for those).
        """
        if self.retries:
            position, batch = self.retries[0]
            if self.in_flight == 0 and batch.retry_at <= now and (batch.maybe_persisted or not resends_only):
                return batch
            return None
        if self.waiting and self.in_flight == 0 and not resends_only:
            return self.waiting[0]
        return None

    def mark_sent(self, batch: ProducerBatch) -> None:
        if self.retries and self.retries[0][1] is batch:
            self.retries.pop(0)
        else:
            self.waiting.popleft()
        self.in_flight += 1

    def answered(self) -> None:
        """A request carrying one of this partition's batches came back."""
        self.in_flight -= 1

    def finish(self, batch: ProducerBatch) -> None:
        """The batch was acknowledged or failed for good: forget it."""
        self.unacknowledged.pop(batch.queue_position, None)

    def retry(self, batch: ProducerBatch, at: float) -> None:
        """Send the batch again at monotonic time ``at``, before anything newer."""
        batch.retry_at = at
        bisect.insort(self.retries, (batch.queue_position, batch), key=lambda entry: entry[0])

    def has_maybe_persisted(self) -> bool:
        """True when an unacknowledged batch may already have been appended."""
        return any(batch.maybe_persisted for batch in self.unacknowledged.values())

    def has_earlier_unacknowledged(self, batch: ProducerBatch) -> bool:
        """True when a batch numbered before ``batch`` is still unacknowledged."""
        position = batch.queue_position
        return any(other < position for other in self.unacknowledged)

    def expire(self, now: float) -> list[ProducerBatch]:
        """Remove and return batches not in flight whose delivery deadline has passed."""
        expired = [batch for batch in self.waiting if batch.deadline <= now]
        expired += [batch for _, batch in self.retries if batch.deadline <= now]
        if expired:
            gone = {id(batch) for batch in expired}
            self.waiting = deque(batch for batch in self.waiting if id(batch) not in gone)
            self.retries = [entry for entry in self.retries if id(entry[1]) not in gone]
            for batch in expired:
                self.finish(batch)
        return expired

    def drain_all(self) -> list[ProducerBatch]:
        """Remove and return every batch not in flight (purge, close)."""
        batches = list(self.waiting) + [batch for _, batch in self.retries]
        self.waiting.clear()
        self.retries.clear()
        for batch in batches:
            self.finish(batch)
        return batches

    @property
    def idle(self) -> bool:
        return not self.unacknowledged and self.in_flight == 0

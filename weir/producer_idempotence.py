"""Idempotent delivery bookkeeping: producer id, per-partition sequence numbers, ordering.

With ``enable.idempotence`` the producer gets a producer id and epoch from InitProducerId
once, and numbers the records of every partition 0, 1, 2, ... (wrapping at 2**31 as Kafka
does). A batch's ``baseSequence`` is fixed when the sender takes it from the accumulator and
never changes: a retry sends the very same bytes, so the broker recognises a duplicate and
answers with the offset it already assigned.

:class:`PartitionQueue` keeps a partition's batches in sequence order and sends them in that
order, up to ``max.in.flight.requests.per.connection`` (at most 5 with idempotence: the broker
remembers the last 5 batch sequences of each producer per partition, so a retried batch is
recognised as a duplicate only within that window) requests of one partition in flight at a
time. Only batches that left the accumulator full (or at a flush) are pipelined: while a
partition has a batch in flight its open batch keeps filling past linger.ms (see
:attr:`PartitionQueue.muted`), so a producer faster than one round trip per full batch sends
several full batches at once, and a slower one sends one batch per round trip, as large as
the records that came meanwhile. A broker serves concurrent gRPC calls on concurrent threads and the sender makes them
from several call threads, so a batch may reach the leader before the one numbered ahead of
it: the leader refuses it OUT_OF_ORDER_SEQUENCE_NUMBER and appends nothing, and the sender
queues it for retry behind the earlier batch, as Kafka's Java producer does with a batch that
is not the next one. Such a batch is one *sent behind* an unacknowledged batch
(:attr:`ProducerBatch.sent_behind`) or still having one before it. Once a batch must be
retried, nothing newer is sent: the partition waits until no batch sent after the first one to
retry is in flight, then resends its batches to retry in sequence order, pipelined like new ones
(Kafka's Sender sends a retried batch only as the first in flight, but over one ordered TCP
connection), and only then new batches. A later batch acknowledged proves the earlier ones
appended (the leader appends in sequence order): those waiting for a retry, or whose answer was
lost, count as delivered (offset unknown, as a duplicate's). And no batch is sent
``max_in_flight`` or more batches after the oldest unacknowledged one, so that a resent batch is
still among the five the leader remembers when it arrives.

Without idempotence nothing numbers the batches, so pipelined batches of one partition may be
appended in another order than produced (after a retry, as Kafka documents for
``max.in.flight.requests.per.connection`` > 1, and also when two concurrent calls arrive in the
other order). The sender therefore keeps one batch of a partition in flight unless the
application set ``max.in.flight.requests.per.connection`` itself (see
:func:`partition_in_flight_limit`).

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
fatal error, and bumps the epoch so that later batches go on; a batch sent behind one that then
failed for good is refused OUT_OF_ORDER_SEQUENCE_NUMBER (a gap) and is renumbered under the new
epoch with the rest instead of failing.

Not thread-safe: only the sender thread uses these.
"""

from __future__ import annotations

import bisect
from collections import deque

from weir.producer_accumulator import ProducerBatch
from weir.records import set_producer_state

SEQUENCE_MODULUS = 2**31


def partition_in_flight_limit(max_in_flight: int, idempotent: bool, explicit: bool) -> int:
    """How many batches of one partition may be in flight at a time.

    ``max_in_flight`` is ``max.in.flight.requests.per.connection``; ``explicit`` whether the
    application set it. With idempotence the broker's sequence check keeps the order, so up to
    ``max_in_flight`` (at most 5, as config checks). Without it only one unless the application
    asked for more, accepting that batches may then be appended out of order (module docstring).
    """
    if max_in_flight < 1:
        raise ValueError(f"max.in.flight.requests.per.connection must be at least 1, got {max_in_flight}")
    if idempotent or explicit:
        return max_in_flight
    return 1


def stamp_producer_state(batch: bytes, producer_id: int, producer_epoch: int, base_sequence: int) -> bytes:
    """Return ``batch`` with its producer id, epoch and base sequence set and its CRC recomputed."""
    buffer = bytearray(batch)
    set_producer_state(buffer, 0, producer_id, producer_epoch, base_sequence)
    return bytes(buffer)


class PartitionQueue:
    """The sender's batches of one partition: waiting, in flight, and to be retried.

    Invariants: ``unacknowledged`` lists every batch given to :meth:`add` and not yet
    acknowledged or failed, in sequence order; ``retries`` is a subsequence of it;
    ``waiting`` holds batches never sent, in sequence order; ``in_flight`` counts this
    partition's batches sent and not answered, at most ``max_in_flight``.
    """

    __slots__ = ("next_sequence", "waiting", "retries", "unacknowledged", "in_flight", "max_in_flight", "_order", "_acknowledged", "_sent")

    def __init__(self, max_in_flight: int = 1) -> None:
        if max_in_flight < 1:
            raise ValueError(f"max_in_flight must be at least 1, got {max_in_flight}")
        self.max_in_flight = max_in_flight
        self.next_sequence = 0
        self.waiting: deque[ProducerBatch] = deque()
        self.retries: list[tuple[int, ProducerBatch]] = []
        self.unacknowledged: dict[int, ProducerBatch] = {}
        self.in_flight = 0
        # Monotonic counter of batches added: the sequence order without wrap-around.
        self._order = 0
        # The latest position acknowledged as appended (-1: none yet).
        self._acknowledged = -1
        # Positions of the batches in flight (``in_flight`` of them).
        self._sent: set[int] = set()

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
            # Once nothing sent after it is in flight any more, the batches to retry go again in
            # order, pipelined like new ones.
            resendable = self.in_flight == 0 or (self.in_flight < self.max_in_flight and max(self._sent) < position)
            if resendable and batch.retry_at <= now and (batch.maybe_persisted or not resends_only):
                return batch
            return None
        if self.waiting and self.in_flight < self.max_in_flight and not resends_only and self._in_window(self.waiting[0]):
            return self.waiting[0]
        return None

    def _in_window(self, batch: ProducerBatch) -> bool:
        """Whether ``batch`` is fewer than ``max_in_flight`` batches after the oldest unacknowledged one.

        The leader recognises a resent batch as a duplicate only among the producer's last five
        appended: a batch whose answer is outstanding (or lost) must stay among them.
        """
        for oldest in self.unacknowledged:
            return batch.queue_position - oldest < self.max_in_flight
        return True

    def retry_due_at(self) -> float | None:
        """When the first batch to retry is due, if only its backoff holds it (an answer in flight may hold it too)."""
        if not self.retries:
            return None
        position, batch = self.retries[0]
        if self.in_flight == 0 or (self.in_flight < self.max_in_flight and max(self._sent) < position):
            return batch.retry_at
        return None

    @property
    def muted(self) -> bool:
        """True while the accumulator should keep the partition's open batch filling past linger.ms.

        That is while any batch of it is in flight or queued, even below ``max_in_flight``: a
        batch that fills up still leaves at once and is pipelined, but one that only reached
        linger.ms waits and grows. Brokers here are bound by CPU per request, so a few large
        batches go faster than many small ones in flight together (``python -m bench
        replication-throughput`` on a loaded 2-core machine: pipelining every lingered batch
        gave RF=3 acks=all 0.51-0.67 of RF=1, against 1.01 with one batch in flight and 1.10
        with this rule).
        """
        return self.in_flight > 0 or bool(self.waiting) or bool(self.retries)

    @property
    def full(self) -> bool:
        """True when no more of this partition's batches may be sent now."""
        return self.in_flight >= self.max_in_flight or bool(self.waiting) or bool(self.retries)

    def mark_sent(self, batch: ProducerBatch) -> None:
        if self.retries and self.retries[0][1] is batch:
            self.retries.pop(0)
        else:
            self.waiting.popleft()
        batch.sent_behind = self.has_earlier_unacknowledged(batch)
        self._sent.add(batch.queue_position)
        self.in_flight += 1

    def answered(self, batch: ProducerBatch) -> None:
        """The request carrying ``batch`` came back (or failed)."""
        self._sent.discard(batch.queue_position)
        self.in_flight -= 1

    def acknowledge(self, batch: ProducerBatch) -> list[ProducerBatch]:
        """The leader appended ``batch`` (success or DUPLICATE_SEQUENCE_NUMBER): forget it, and
        return the earlier batches waiting to be retried, which it must have appended before
        (a leader appends a producer's batches only in sequence order); they are forgotten too."""
        self.finish(batch)
        self._acknowledged = max(self._acknowledged, batch.queue_position)
        position = batch.queue_position
        appended = [earlier for at, earlier in self.retries if at < position]
        if appended:
            self.retries = [entry for entry in self.retries if entry[0] > position]
            for earlier in appended:
                self.finish(earlier)
        return appended

    def acknowledged_after(self, batch: ProducerBatch) -> bool:
        """True when a batch numbered after ``batch`` was acknowledged: ``batch`` was appended
        (idempotent producers only: the leader checked the sequence order)."""
        return batch.queue_position < self._acknowledged

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
        # Positions enter the dict in increasing order, so its first key is the smallest left.
        for position in self.unacknowledged:
            return position < batch.queue_position
        return False

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

"""The producer's background sender: from ready batches to ProduceRequests and delivery reports.

One loop per producer, :meth:`Sender.run`, runs on one thread at a time. Each round it

1. handles the answers that arrived (gRPC completes calls on its own threads and drops the
   outcome in an inbox, so all state below is touched by the loop only),
2. takes ready batches from the accumulator, encodes them (compression and CRC happen
   here, off produce()'s path) and numbers them when idempotent,
3. fails batches whose ``delivery.timeout.ms`` has passed,
4. groups the sendable batches of every partition by leader into ProduceRequests of at most
   ``message.max.bytes`` of records each (librdkafka's meaning: the largest request; a batch
   larger than that goes alone), so that no request exceeds what brokers accept
   (``max.request.size``, 8 MiB by default), keeping at most
   ``max.in.flight.requests.per.connection`` requests in flight per broker and as many
   batches of one partition (one partition per request, so a partition's batches are
   pipelined over consecutive requests; without idempotence one per partition unless the
   application set the property, see :mod:`weir.producer_idempotence`), non-blocking:
   requests go on one ``ProduceStream`` per broker (:mod:`weir.produce_streams`), whose
   reader thread completes them, or as unary calls on :class:`weir.call_threads.CallThreads`
   threads to a broker that refuses streams,
5. sleeps until an answer arrives, a batch is ready, a retry is due, or the next batch's
   linger ends.

A stream's requests are answered in the order sent, which keeps a partition's pipelined
batches in order at the broker. Every round also ends the streams whose oldest request is past
``request.timeout.ms`` (its requests fail as a unary call past its deadline would).

Answers: success -> a delivery report with the offsets (DUPLICATE_SEQUENCE_NUMBER, "appended
before, the answer was lost", counts as success with offset -1, as in librdkafka); a
retriable error (the error table's ``retriable`` flag, transport failures, deadlines) -> retry
after ``retry.backoff.ms`` doubling up to ``retry.backoff.max.ms``, until ``retries`` or
``delivery.timeout.ms`` run out, then a delivery report with ``_MSG_TIMED_OUT`` and the last
error; anything else -> a delivery report carrying the error. With acks=0 a batch is reported
(offset -1) as soon as it is sent.

Failover: a retried batch is sent again byte for byte (same producer id, epoch and sequence
numbers), so the new leader appends it once even if the old one had appended it before
dying (the follower it was replicated to knows its sequence numbers). While a batch that
failed at its leader waits out its backoff, the sender keeps refreshing metadata (every
``retry.backoff.ms``), and once another leader is named the batch goes there at once
instead of finishing the backoff (KIP-951). Errors that mean the
cached leader is wrong (NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION,
LEADER_NOT_AVAILABLE, FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH, transport failures and
deadlines) mark the topic's metadata stale; the sender refreshes it (rate-limited, see
:meth:`weir.cluster.Cluster.maybe_refresh`) and sends to the new leader. A partition without
a leader keeps its batches until metadata names one or delivery.timeout.ms passes. Sequence
gaps and epoch bumps: see :mod:`weir.producer_idempotence`.

Transactions (``transactional.id``, see :mod:`weir.producer_transactions`): the producer id
and epoch come from the transaction manager (init_transactions(), then each EndTxn's bumped
epoch, under which every partition numbers from 0 again), never from the sender's own
InitProducerId. A partition's batches wait until the manager has added the partition to the
transaction (AddPartitionsToTxn, started by produce() or here, retried after retry.backoff.ms); once the
transaction failed nothing more is sent until abort_transaction() purges it. A batch that
fails for good fails the transaction (abortable, or fatal when fenced) instead of bumping the
epoch, and every ProduceRequest names the transactional id.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

import grpc

from grpc_protos.weir.v1 import broker_pb2
from weir.call_threads import CallThreads
from weir.cluster import Cluster, error_from_rpc
from weir.config import ClientConfig
from weir.errors import ErrorCode, KafkaError, KafkaException
from weir.produce_streams import ProduceStreams
from weir.producer_accumulator import ProducerBatch, RecordAccumulator
from weir.producer_idempotence import SEQUENCE_MODULUS, PartitionQueue, partition_in_flight_limit, stamp_producer_state
from weir.producer_transactions import TransactionManager
from weir.records import NO_PRODUCER_EPOCH, NO_PRODUCER_ID
from weir.statistics import ClientCounters

logger = logging.getLogger(__name__)

# Called once per finished batch: (batch, error or None, base offset, log append time or -1).
ReportFunction = Callable[[ProducerBatch, KafkaError | None, int, int], None]

# Errors after which the cached leader is probably wrong.
_METADATA_ERRORS = frozenset(
    {
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.LEADER_NOT_AVAILABLE,
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ErrorCode.FENCED_LEADER_EPOCH,
        ErrorCode.UNKNOWN_LEADER_EPOCH,
        KafkaError._TRANSPORT,
        KafkaError._TIMED_OUT,
    }
)
# Failures that leave open whether the batch was appended (librdkafka's "possibly persisted").
_MAYBE_APPENDED = frozenset(
    {
        KafkaError._TRANSPORT,
        KafkaError._TIMED_OUT,
        KafkaError._BAD_MSG,
        ErrorCode.REQUEST_TIMED_OUT,
        ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
        ErrorCode.NETWORK_EXCEPTION,
    }
)
# The longest the sender sleeps without a reason, so that a lost wake-up costs little.
_IDLE_WAIT = 0.5


class Sender:
    """Owns the in-flight state of one producer; see the module docstring. Runs on its own thread."""

    def __init__(
        self,
        accumulator: RecordAccumulator,
        cluster: Cluster,
        config: ClientConfig,
        report: ReportFunction,
        report_error: Callable[[KafkaError], None],
        transactions: TransactionManager | None = None,
        counters: ClientCounters | None = None,
        report_throttle: Callable[[str, int], None] | None = None,
    ) -> None:
        self._accumulator = accumulator
        # Statistics (stats_cb) and throttle events (throttle_cb), when the producer wants them.
        self._counters = counters or ClientCounters()
        self._report_throttle = report_throttle
        self._log = config.log
        self._cluster = cluster
        self._report = report
        self._report_error = report_error
        self._acks = config["acks"]
        self._idempotent = config["enable.idempotence"]
        self._request_timeout = config["request.timeout.ms"] / 1000.0
        self._request_timeout_ms = config["request.timeout.ms"]
        self._delivery_timeout = config["delivery.timeout.ms"] / 1000.0
        self._retries = config["retries"]
        self._backoff = config["retry.backoff.ms"] / 1000.0
        self._backoff_max = config["retry.backoff.max.ms"] / 1000.0
        self._max_in_flight = config["max.in.flight.requests.per.connection"]
        self._partition_in_flight = partition_in_flight_limit(self._max_in_flight, self._idempotent, config.is_set("max.in.flight.requests.per.connection"))
        self._max_request_bytes = config["message.max.bytes"]
        self._queues: dict[tuple[str, int], PartitionQueue] = {}
        self._in_flight: dict[str, int] = {}
        self._inbox: deque[tuple[str, list[ProducerBatch], Future[Any]]] = deque()
        self._calls = CallThreads("weir-producer-call")
        # Produce requests go on one stream per broker (see weir.produce_streams).
        self._streams = ProduceStreams(cluster.stub, self._calls, cluster.call_metadata)
        # Set once the loop has ended.
        self._done = threading.Event()
        self._rtts: dict[int, float] = {}  # round trip of each answered request, by id(future), until handled
        self._producer_id = NO_PRODUCER_ID
        self._producer_epoch = NO_PRODUCER_EPOCH
        self._needs_new_epoch = False
        self._next_producer_id_attempt = 0.0
        self._transactions = transactions
        self._transactional_id = transactions.transactional_id if transactions is not None else ""
        self._stopping = False
        self._purge_requested = False
        # Set when no purge is waiting for the sender's next round (abort_transaction() waits for it).
        self._purged = threading.Event()
        self._purged.set()
        self._leaders_missing = False
        self._thread = threading.Thread(target=self.run, name="weir-producer-sender", daemon=True)

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float | None = None) -> None:
        """Finish: fail what cannot be sent and return once the loop ended (or ``timeout``)."""
        self._stopping = True
        self._accumulator.close()
        self._done.wait(timeout)
        self._streams.close()
        self._calls.close()

    def request_purge(self) -> None:
        """Fail every batch not in flight with _PURGE_QUEUE at the next round (purge())."""
        self._purged.clear()
        self._purge_requested = True
        self._accumulator.wake()

    def wait_for_purge(self, timeout: float | None) -> bool:
        """Wait until the sender has purged what :meth:`request_purge` asked for; False after ``timeout`` s."""
        return self._purged.wait(timeout)

    @property
    def producer_id(self) -> tuple[int, int]:
        return self._producer_id, self._producer_epoch

    def run(self) -> None:
        """The send loop, until it ends (see the module docstring)."""
        while True:
            try:
                wait = self._run_once()
            except Exception as error:  # the sender must outlive any bug in one round
                logger.exception("producer sender round failed")
                self._report_error(KafkaError(KafkaError._FAIL, f"producer sender: {error!r}"))
                wait = self._backoff
            if self._stopping and self._finished():
                self._done.set()
                return
            self._accumulator.wait_for_work(wait, self._has_inbox)

    def _has_inbox(self) -> bool:
        return bool(self._inbox)

    def _queued(self) -> list[tuple[tuple[str, int], PartitionQueue]]:
        """The partitions with batches not in flight (waiting or to retry), in the order of ``_queues``.

        Every per-round pass that only acts on such batches (sending, expiring, retry and leader
        waits) walks these instead of every partition ever produced to: with random partitions a
        round finds a tenth of a 100-partition topic's queues holding anything, and each idle one
        cost several calls per pass.
        """
        return [(key, queue) for key, queue in self._queues.items() if queue.waiting or queue.retries]

    def _finished(self) -> bool:
        return not self._inbox and all(queue.idle for queue in self._queues.values()) and not self._accumulator.has_open_batches

    # ------------------------------------------------------------------ one round

    def _run_once(self) -> float:
        self._streams.expire(time.monotonic())
        while self._inbox:
            self._handle_answer(*self._inbox.popleft())
        if self._transactions is not None:
            # Before new batches are stamped: a new transaction may run under a new epoch.
            producer_id, producer_epoch = self._transactions.producer()
            if (producer_id, producer_epoch) != (self._producer_id, self._producer_epoch):
                self._adopt_producer(producer_id, producer_epoch, renumber=True)
        now = time.monotonic()
        muted = {key for key, queue in self._queues.items() if queue.muted}
        batches, next_ready = self._accumulator.drain(muted)
        for batch in batches:
            self._enqueue(batch, now)
        if self._purge_requested:
            self._purge_requested = False
            self._purge()
            self._purged.set()
        self._expire(now)
        if self._stopping and self._abandon_when_unreachable():
            return 0.0
        if self._transactions is not None:
            return self._run_transactional(now, next_ready)
        if self._idempotent and not self._ensure_producer_id(now):
            if self._producer_id == NO_PRODUCER_ID:
                return max(self._next_producer_id_attempt - now, 0.0)
            # An epoch bump waits for the batches that may have been appended under the
            # current epoch: meanwhile they alone are sent, unchanged.
            self._send(now, resends_only=True)
            wake = self._next_wake(now, next_ready)
            if self._next_producer_id_attempt > now:
                wake = min(wake, self._next_producer_id_attempt - now)
            return wake
        self._send(now)
        return self._next_wake(now, next_ready)

    def _enqueue(self, batch: ProducerBatch, now: float) -> None:
        batch.deadline = batch.created + self._delivery_timeout
        batch.payload = batch.builder.build()
        key = (batch.topic, batch.partition)
        queue = self._queues.get(key)
        if queue is None:
            queue = self._queues[key] = PartitionQueue(self._partition_in_flight)
        queue.add(batch, assign_sequence=self._idempotent)
        if self._idempotent and self._producer_id != NO_PRODUCER_ID:
            batch.payload = stamp_producer_state(batch.payload, self._producer_id, self._producer_epoch, batch.base_sequence)

    def _expire(self, now: float) -> None:
        for _, queue in self._queued():
            for batch in queue.expire(now):
                reason = f"Local: Message timed out: not delivered within delivery.timeout.ms ({self._delivery_timeout * 1000:.0f} ms)"
                if batch.last_error is not None:
                    reason += f"; last error: {batch.last_error.str()}"
                self._fail(batch, KafkaError(KafkaError._MSG_TIMED_OUT, reason), queue)

    def _purge(self) -> None:
        for queue in self._queues.values():
            for batch in queue.drain_all():
                self._fail(batch, KafkaError(KafkaError._PURGE_QUEUE, "Local: Purged in queue"), queue)

    def _abandon_when_unreachable(self) -> bool:
        """While stopping, nothing waits for a retry: fail queued batches that are not in flight."""
        abandoned = False
        for queue in self._queues.values():
            if queue.retries:
                for batch in queue.drain_all():
                    abandoned = True
                    error = batch.last_error or KafkaError(KafkaError._DESTROY, "the producer was closed")
                    self._fail(batch, error, queue)
        return abandoned

    def _next_wake(self, now: float, next_ready: float | None) -> float:
        wake = now + _IDLE_WAIT
        if next_ready is not None:
            wake = min(wake, next_ready)
        queued = self._queued()
        if self._leaders_missing or any(self._waits_for_new_leader(topic, partition, queue, now) for (topic, partition), queue in queued):
            wake = min(wake, now + max(self._cluster.next_refresh_in(), self._backoff))
        for _, queue in queued:
            due = queue.retry_due_at()  # None while answers in flight hold the retry: they wake the sender
            if due is not None:
                wake = min(wake, due)
            if queue.waiting:
                wake = min(wake, queue.waiting[0].deadline)
        return max(wake - now, 0.0)

    # ------------------------------------------------------------------ idempotence

    def _ensure_producer_id(self, now: float) -> bool:
        """True when new batches may be sent: a producer id is known and no epoch bump is pending.

        A pending bump (see :mod:`weir.producer_idempotence`) is made once no request is in
        flight and no batch that may have been appended is unacknowledged.
        """
        known = self._producer_id != NO_PRODUCER_ID
        if known and not self._needs_new_epoch:
            return True
        if known and not any(queue.unacknowledged for queue in self._queues.values()):
            return True  # nothing to renumber yet: the bump happens when batches are queued
        if known and any(queue.in_flight or queue.has_maybe_persisted() for queue in self._queues.values()):
            return False
        if now < self._next_producer_id_attempt:
            return False
        response = self._init_producer_id(self._producer_id, self._producer_epoch)
        if isinstance(response, KafkaError) and known and not response.retriable():
            # A broker that did not hand out this id cannot bump its epoch
            # (INVALID_PRODUCER_ID_MAPPING); a new id serves the same purpose.
            response = self._init_producer_id(NO_PRODUCER_ID, NO_PRODUCER_EPOCH)
        if isinstance(response, KafkaError):
            self._next_producer_id_attempt = now + self._backoff_max
            self._report_error(response)
            return False
        renumber = self._needs_new_epoch
        self._needs_new_epoch = False
        self._adopt_producer(response.producer_id, response.producer_epoch, renumber=renumber)
        return True

    def _adopt_producer(self, producer_id: int, producer_epoch: int, *, renumber: bool) -> None:
        """Send from now on as ``producer_id`` at ``producer_epoch``; ``renumber``: every partition's sequence starts at 0 again."""
        self._producer_id, self._producer_epoch = producer_id, producer_epoch
        for queue in self._queues.values():
            if renumber:
                queue.next_sequence = 0
            for batch in sorted(queue.unacknowledged.values(), key=lambda batch: batch.queue_position):
                if renumber:
                    batch.base_sequence = queue.next_sequence
                    queue.next_sequence = (queue.next_sequence + batch.record_count) % SEQUENCE_MODULUS
                batch.payload = stamp_producer_state(batch.encoded, self._producer_id, self._producer_epoch, batch.base_sequence)

    # ------------------------------------------------------------------ transactions

    def _run_transactional(self, now: float, next_ready: float | None) -> float:
        """One round of a transactional producer: add new partitions to the transaction, then send what may be sent."""
        transactions = self._transactions
        assert transactions is not None
        wake = self._next_wake(now, next_ready)
        if self._producer_id == NO_PRODUCER_ID or transactions.failed:
            return wake  # before init_transactions(), or until abort_transaction() purges the batches
        # As librdkafka: a partition joins the transaction at its first record. produce() starts
        # AddPartitionsToTxn itself (see TransactionManager.note_record); this covers the
        # partitions it could not name and retries after a failure. Neither waits for the answer,
        # which wakes this loop.
        wanted = {key for key, queue in self._queues.items() if queue.waiting or queue.retries}
        wanted.update(self._accumulator.open_partitions())
        missing = transactions.missing(sorted(wanted))
        if missing:
            transactions.add_partitions_soon(missing, may_block=True)
            retry_in = transactions.next_add_in()
            if retry_in > 0:
                wake = min(wake, retry_in)
        self._send(now)
        return max(min(wake, self._next_wake(now, next_ready)), 0.0)

    def _init_producer_id(self, producer_id: int, producer_epoch: int) -> broker_pb2.InitProducerIdResponse | KafkaError:
        """InitProducerId at any broker: a new id (``producer_id`` -1) or the next epoch of ``producer_id``; the error if it failed."""
        request = broker_pb2.InitProducerIdRequest(producer_id=producer_id, producer_epoch=producer_epoch)
        try:
            response: broker_pb2.InitProducerIdResponse = self._cluster.call("InitProducerId", request, timeout=self._request_timeout)
        except KafkaException as error:
            return error.error
        if response.error_code:
            return KafkaError(response.error_code, f"InitProducerId: {response.error_message or KafkaError(response.error_code).str()}")
        return response

    # ------------------------------------------------------------------ sending

    def _send(self, now: float, resends_only: bool = False) -> None:
        self._refresh_metadata()
        missing_leaders = False
        while True:
            requests: dict[str, list[ProducerBatch]] = {}
            request_bytes: dict[str, int] = {}
            for (topic, partition), queue in self._queued():
                self._skip_backoff_for_new_leader(topic, partition, queue, now)
                batch = queue.next_sendable(now, resends_only)
                if batch is None or (self._transactions is not None and not self._transactions.contains((topic, partition))):
                    continue
                address = None if self._cluster.is_stale(topic) else self._cluster.leader_address(topic, partition)
                if address is None:
                    # No leader known (an election is under way, or the refresh failed): the
                    # batch waits for metadata that names one.
                    self._cluster.mark_stale(topic)
                    missing_leaders = True
                    continue
                if address not in requests and self._in_flight.get(address, 0) >= self._max_in_flight:
                    continue
                if address in requests and request_bytes[address] + len(batch.encoded) > self._max_request_bytes:
                    continue  # the request is full: the batch goes in the next one (next pass of this loop)
                requests.setdefault(address, []).append(batch)
                request_bytes[address] = request_bytes.get(address, 0) + len(batch.encoded)
                queue.mark_sent(batch)
            if not requests:
                break
            for address, batches in requests.items():
                self._send_request(address, batches)
        self._leaders_missing = missing_leaders

    def _waits_for_new_leader(self, topic: str, partition: int, queue: PartitionQueue, now: float) -> bool:
        """Whether the partition's next retry is in backoff after a leader failure at the leader still cached."""
        if not queue.retries:
            return False
        batch = queue.retries[0][1]
        if batch.retry_at <= now or batch.sent_to is None or batch.last_error is None or batch.last_error.code() not in _METADATA_ERRORS:
            return False
        return self._cluster.leader_address(topic, partition) == batch.sent_to

    def _skip_backoff_for_new_leader(self, topic: str, partition: int, queue: PartitionQueue, now: float) -> None:
        """A batch waiting out its backoff after failing at the old leader goes to a new one at once (KIP-951).

        The backoff is there not to hammer a broker that just failed; once metadata names
        another leader, waiting only adds to the failover time.
        """
        if not queue.retries:
            return
        batch = queue.retries[0][1]
        if batch.retry_at <= now or batch.sent_to is None or self._cluster.is_stale(topic):
            return
        leader = self._cluster.leader_address(topic, partition)
        if leader is not None and leader != batch.sent_to:
            batch.retry_at = now

    def _produce_request(self, batches: list[ProducerBatch]) -> broker_pb2.ProduceRequest:
        """One ProduceRequest of ``batches``, grouped by topic in the order given.

        Each batch's bytes are copied into the request once: messages built apart and passed to
        the constructor were copied again with their payloads (measured in-process: 1.3-1.9 ms
        against 0.05-0.09 ms for a megabyte request of one or of twelve batches).
        """
        request = broker_pb2.ProduceRequest(acks=self._acks, timeout_ms=self._request_timeout_ms, transactional_id=self._transactional_id)
        topics: dict[str, broker_pb2.ProduceTopicData] = {}
        for batch in batches:
            topic = topics.get(batch.topic)
            if topic is None:
                topic = topics[batch.topic] = request.topics.add(topic=batch.topic)
            topic.partitions.add(partition=batch.partition, records=batch.payload)
        return request

    def _send_request(self, address: str, batches: list[ProducerBatch]) -> None:
        request = self._produce_request(batches)
        self._in_flight[address] = self._in_flight.get(address, 0) + 1
        size = sum(len(batch.encoded) for batch in batches)
        self._log.debug("msg", "PRODUCE", "%s: sending %d batch(es), %d bytes", address, len(batches), size)
        self._log.debug("protocol", "SEND", "Sent ProduceRequest (%d batch(es), %d bytes) to %s", len(batches), size, address)
        self._counters.request_sent(address, size)
        sent_at = time.monotonic()
        if self._calls.closed:
            self._in_flight[address] -= 1
            for batch in batches:
                queue = self._queues[(batch.topic, batch.partition)]
                queue.answered(batch)
                self._fail(batch, KafkaError(KafkaError._DESTROY, "the producer was closed"), queue)
            return
        for batch in batches:
            batch.attempts += 1
            batch.sent_to = address
        # The answer (or failure) reaches the loop through the inbox, whichever thread completes it.
        self._streams.send(address, request, self._request_timeout, lambda done: self._arrived(address, batches, done, sent_at))
        if self._acks == 0:
            # Nobody waits for the broker: the batch counts as delivered once sent (offset -1).
            for batch in batches:
                queue = self._queues[(batch.topic, batch.partition)]
                queue.finish(batch)
                self._succeed(batch, -1, -1)

    def _arrived(self, address: str, batches: list[ProducerBatch], future: Future[Any], sent_at: float) -> None:
        # Runs on a call thread: hand over to the sender thread and wake it.
        self._rtts[id(future)] = time.monotonic() - sent_at
        self._log.debug("protocol", "RECV", "Received ProduceResponse from %s", address)
        self._inbox.append((address, batches, future))
        self._accumulator.wake()

    def _refresh_metadata(self) -> None:
        """Refresh (rate-limited) the metadata of topics with batches to send that is stale or old."""
        queued = self._queued()
        topics = {topic for (topic, _), _ in queued}
        if not topics:
            return
        now = time.monotonic()
        for (topic, partition), queue in queued:
            if self._waits_for_new_leader(topic, partition, queue, now):
                # The leader that failed is still the one known: keep asking (rate-limited) so
                # that the batch goes to the new leader as soon as metadata names it.
                self._cluster.mark_stale(topic)
        try:
            self._cluster.maybe_refresh(topics, timeout=self._request_timeout)
        except KafkaException as error:
            self._report_error(error.error)

    # ------------------------------------------------------------------ answers

    def _handle_answer(self, address: str, batches: list[ProducerBatch], future: Future[Any]) -> None:
        self._in_flight[address] -= 1
        rtt = self._rtts.pop(id(future), 0.0)
        try:
            response = future.result()
        except grpc.RpcError as rpc_error:
            error = error_from_rpc(rpc_error, f"Produce to {address}")
            self._counters.request_failed(address)
            self._log.debug("broker", "FAIL", "%s", error.str())
            self._cluster.note_failure(address, error)
            for batch in batches:
                queue = self._queues[(batch.topic, batch.partition)]
                queue.answered(batch)
                if self._acks != 0:
                    self._handle_error(batch, error, queue)
            return
        self._cluster.note_answer(address)
        self._counters.response_received(address, response.ByteSize(), rtt)
        if response.throttle_time_ms > 0 and self._report_throttle is not None:
            self._report_throttle(address, response.throttle_time_ms)
        results = {(topic.topic, partition.partition): partition for topic in response.topics for partition in topic.partitions}
        for batch in batches:
            queue = self._queues[(batch.topic, batch.partition)]
            queue.answered(batch)
            if self._acks == 0:
                continue
            result = results.get((batch.topic, batch.partition))
            if result is None:
                self._handle_error(batch, KafkaError(KafkaError._BAD_MSG, f"the broker's answer has no result for {batch.topic}-{batch.partition}"), queue)
            elif result.error_code == 0:
                self._acknowledge(batch, queue)
                self._succeed(batch, result.base_offset, result.log_append_time_ms)
            elif result.error_code == ErrorCode.DUPLICATE_SEQUENCE_NUMBER:
                # Appended by an earlier send whose answer was lost; where is not known.
                self._acknowledge(batch, queue)
                self._succeed(batch, -1, -1)
            else:
                self._handle_error(batch, KafkaError(result.error_code, result.error_message or None), queue)

    def _acknowledge(self, batch: ProducerBatch, queue: PartitionQueue) -> None:
        if not self._idempotent:
            queue.finish(batch)
            return
        for earlier in queue.acknowledge(batch):
            # Waiting for a retry after a lost answer, but appended: the leader appended this later batch.
            self._succeed(earlier, -1, -1)

    def _handle_error(self, batch: ProducerBatch, error: KafkaError, queue: PartitionQueue) -> None:
        if self._idempotent and queue.acknowledged_after(batch):
            # A later batch of the partition was appended, which the leader does only in sequence
            # order: this one was appended before it, and this answer (or its lack) came late.
            # Where is not known, as with DUPLICATE_SEQUENCE_NUMBER.
            queue.finish(batch)
            self._succeed(batch, -1, -1)
            return
        code = error.code()
        now = time.monotonic()
        if code in _METADATA_ERRORS:
            self._cluster.mark_stale(batch.topic)
        if code in _MAYBE_APPENDED:
            batch.maybe_persisted = True
        batch.last_error = error
        # A batch that may have overtaken (or followed) an earlier one still unacknowledged
        # when it was sent, or one that still has an earlier one to wait for.
        behind = batch.sent_behind or queue.has_earlier_unacknowledged(batch)
        if self._transactions is None and self._idempotent and code == ErrorCode.UNKNOWN_PRODUCER_ID and not batch.maybe_persisted:
            if not behind:
                # The leader lost this producer's state and nothing of the batch was appended:
                # renumber under a new epoch and send again (librdkafka does the same).
                self._needs_new_epoch = True
            if now < batch.deadline:
                # A pipelined batch behind it goes back in line and is renumbered with it.
                queue.retry(batch, now + self._backoff)
                return
        if code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER and behind and batch.attempts <= self._retries and now < batch.deadline:
            # Refused because an earlier batch was not (yet) appended: it overtook that batch, or
            # that batch is being retried or failed for good (then the epoch bump renumbers this
            # one). Not at fault, and nothing was appended: back in line behind the earlier one,
            # resent as soon as the partition has nothing in flight, without a backoff.
            queue.retry(batch, now)
            return
        if error.retriable() and batch.attempts <= self._retries and now < batch.deadline:
            queue.retry(batch, now + self._cluster.backoff(batch.attempts - 1))
            return
        retriable = error.retriable()
        if retriable and now >= batch.deadline:
            error = KafkaError(KafkaError._MSG_TIMED_OUT, f"Local: Message timed out after retrying: {error.str()}")
        self._fail(batch, error, queue)

    def _succeed(self, batch: ProducerBatch, base_offset: int, log_append_time: int) -> None:
        self._counters.produced(batch.topic, batch.partition, batch.record_count, len(batch.encoded))
        self._accumulator.release(batch)
        self._report(batch, None, base_offset, log_append_time)

    def _fail(self, batch: ProducerBatch, error: KafkaError, queue: PartitionQueue) -> None:
        queue.finish(batch)
        if self._transactions is not None:
            # The transaction cannot commit without this batch: only an abort can end it (and
            # its new epoch starts every sequence at 0 again).
            self._transactions.produce_failed(error)
        elif self._idempotent and batch.base_sequence >= 0:
            # Its sequence numbers are now a gap the leader would refuse in every later batch
            # of the partition: number anew under a new epoch (see producer_idempotence).
            self._needs_new_epoch = True
        self._accumulator.release(batch)
        self._report(batch, error, -1, -1)

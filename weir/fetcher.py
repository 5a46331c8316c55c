"""The consumer's background fetcher: long-poll Fetch requests and prefetched record data.

One thread per consumer keeps at most one Fetch in flight per broker, covering every
assigned partition that broker leads and that is not paused, not waiting for an offset
reset, and not already holding more prefetched data than ``queued.max.messages.kbytes``.
Answers are applied on the thread that completed the call (a :class:`weir.call_threads.CallThreads`
thread, which starts no thread per call as gRPC's ``.future()`` does): the records go to the
application from there, one thread wake-up sooner than through the fetcher thread, and the
same thread sends the next Fetch, so a long poll is parked again at the broker without a wake-up
of the fetcher thread, which is woken only for offset resets and anything else it does.
Fetches go on one ``FetchStream`` per broker (:mod:`weir.fetch_streams`: a message on an open
stream costs the broker less than a unary call and reaches its purgatory sooner); a broker that
refuses the stream gets unary Fetch calls for a while, and the stream is tried again later.
Record bytes are queued as :class:`FetchedChunk` objects, undecoded; the consumer decodes
them in poll()/consume(), in the application's thread.

Offset resets also happen here: a partition assigned without an offset asks OffsetFetch for
its group's committed offset, then falls back to ``auto.offset.reset``; OFFSET_BEGINNING /
OFFSET_END and OFFSET_OUT_OF_RANGE answers ask ListOffsets.

Failover: every fetch carries the leader epoch of the cached metadata (``current_leader_epoch``),
so a deposed leader that has not heard of the election yet answers FENCED_LEADER_EPOCH or
NOT_LEADER_OR_FOLLOWER instead of serving from a log that may diverge, and a leader behind the
client answers UNKNOWN_LEADER_EPOCH. Those errors, UNKNOWN_TOPIC_OR_PARTITION,
LEADER_NOT_AVAILABLE, transport failures and deadlines mark the topic's metadata stale; the
partition waits retry.backoff.ms, its metadata is refreshed (rate-limited, see
:meth:`weir.cluster.Cluster.maybe_refresh`), and fetching goes on at the new leader from the
same position, so nothing is skipped or repeated. A partition without a leader waits for
metadata that names one. OFFSET_OUT_OF_RANGE resets per ``auto.offset.reset``.

Thread-safety: :class:`PartitionState` objects are shared with the consumer and are read
and written only under :attr:`Fetcher.lock`. Each seek or reset bumps the partition's
``generation``; data fetched for an older generation is dropped, so a seek never returns
records from before it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from concurrent.futures import Future
from typing import Any

import grpc

from grpc_protos.weir.v1 import broker_pb2
from weir.call_threads import CallThreads
from weir.cluster import Cluster, error_from_rpc
from weir.config import ClientConfig
from weir.coordinator import GroupCoordinators
from weir.errors import ErrorCode, KafkaError, KafkaException
from weir.fetch_streams import FetchStreams
from weir.message import OFFSET_BEGINNING, OFFSET_END, OFFSET_STORED
from weir.records import iter_batch_positions
from weir.statistics import ClientCounters

logger = logging.getLogger(__name__)

_LIST_OFFSETS_EARLIEST = -2
_LIST_OFFSETS_LATEST = -1
_IDLE_WAIT = 0.5


def next_fetch_offset(records: bytes, fetch_offset: int) -> int:
    """The offset after the last complete batch of a Fetch answer's ``records`` (``fetch_offset`` when none is complete;
    a trailing partial batch is not counted, as ``weir.records.iter_batch_positions`` walks them)."""
    next_offset = fetch_offset
    for _, header in iter_batch_positions(records):
        next_offset = header.next_offset
    return next_offset


class PartitionState:
    """One assigned partition: where fetching stands and where the application stands.

    ``fetch_position`` is the next offset to fetch (None while ``reset_to`` names an offset
    to look up: OFFSET_BEGINNING, OFFSET_END or OFFSET_STORED); ``position`` is the offset
    of the next record poll() returns; ``stored_offset`` the offset the next commit writes.
    """

    __slots__ = (
        "topic",
        "partition",
        "generation",
        "fetch_position",
        "reset_to",
        "position",
        "paused",
        "high_watermark",
        "log_start_offset",
        "stored_offset",
        "eof_offset",
        "in_flight",
        "retry_at",
        "partition_max_bytes",
        "leader_epoch",
    )

    def __init__(self, topic: str, partition: int, partition_max_bytes: int) -> None:
        self.topic = topic
        self.partition = partition
        self.generation = 0
        self.fetch_position: int | None = None
        self.reset_to: int | None = OFFSET_STORED
        self.position: int | None = None
        self.paused = False
        self.high_watermark = -1
        self.log_start_offset = -1
        self.stored_offset: int | None = None
        self.eof_offset = -1
        self.in_flight = False
        self.retry_at = 0.0
        self.partition_max_bytes = partition_max_bytes
        self.leader_epoch: int | None = None

    def seek(self, offset: int) -> None:
        """Start over at ``offset`` (absolute, or a logical OFFSET_* constant). Lock held."""
        self.generation += 1
        self.eof_offset = -1
        if offset >= 0:
            self.fetch_position = offset
            self.position = offset
            self.reset_to = None
        else:
            self.fetch_position = None
            self.reset_to = offset


class FetchedChunk:
    """Record bytes of one partition from one Fetch answer, or an event (``error`` set, ``records`` empty).

    ``min_offset`` is the offset that was fetched (records below it are skipped);
    ``next_offset`` follows the last complete batch. ``aborted`` holds (producer id, first
    offset) of the transactions the broker says were aborted in this range (read_committed
    only): their records are dropped when the chunk is decoded (``weir.read_committed``).
    """

    __slots__ = ("state", "generation", "records", "min_offset", "next_offset", "error", "aborted")

    def __init__(
        self,
        state: PartitionState,
        generation: int,
        records: bytes,
        min_offset: int,
        next_offset: int,
        error: KafkaError | None = None,
        aborted: tuple[tuple[int, int], ...] = (),
    ) -> None:
        self.state = state
        self.generation = generation
        self.records = records
        self.min_offset = min_offset
        self.next_offset = next_offset
        self.error = error
        self.aborted = aborted


class Fetcher:
    """Owns the fetch loop of one consumer; see the module docstring."""

    def __init__(self, cluster: Cluster, coordinators: GroupCoordinators, config: ClientConfig) -> None:
        self._cluster = cluster
        self._coordinators = coordinators
        self._group_id = config["group.id"]
        self._reset_policy = config["auto.offset.reset"]
        self._partition_eof = config["enable.partition.eof"]
        self._min_bytes = config["fetch.min.bytes"]
        self._max_bytes = config["fetch.max.bytes"]
        self._max_wait_ms = config["fetch.wait.max.ms"]
        self._isolation = broker_pb2.READ_COMMITTED if config["isolation.level"] == "read_committed" else broker_pb2.READ_UNCOMMITTED
        self._prefetch_limit = config["queued.max.messages.kbytes"] * 1024
        self._request_timeout = config["request.timeout.ms"] / 1000.0
        self._backoff: float = config["retry.backoff.ms"] / 1000.0
        self.lock = threading.Lock()
        # The application waits on ``data_ready``; the fetcher thread on ``work``.
        self.data_ready = threading.Condition(self.lock)
        self._work = threading.Condition(self.lock)
        self.states: dict[tuple[str, int], PartitionState] = {}
        self.chunks: deque[FetchedChunk] = deque()
        self.prefetched_bytes = 0
        # Set (under the lock) when something changed during a round (an answer applied, an assignment,
        # a seek, room freed): the fetcher thread runs another round before it sleeps.
        self._run_again = False
        # Held while deciding and sending fetches, by the fetcher thread or a call thread after an answer.
        self._send_lock = threading.Lock()
        self._calls = CallThreads("weir-consumer-fetch")  # unary Fetch calls to brokers that refuse a stream
        self._streams = FetchStreams(cluster.stub, self._calls, cluster.call_metadata)
        # Set on a thread while it decides and sends fetches: a fetch that fails at once (a closed
        # client) completes on that thread, which must not send again from inside the send.
        self._sending = threading.local()
        self._in_flight: set[str] = set()
        self._errors: deque[KafkaError] = deque()
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name="weir-consumer-fetcher", daemon=True)
        # Statistics (stats_cb) and throttle events (address, ms) for throttle_cb, read by the consumer.
        self.counters = ClientCounters()
        self.throttles: deque[tuple[str, int]] = deque()
        self._log = config.log

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        with self.lock:
            self._stopping = True
            self._run_again_locked()
        self._thread.join(timeout=self._request_timeout)
        # The brokers' stream threads come back now, not when the long polls in flight end.
        self._streams.close()
        self._calls.close()

    def wake(self) -> None:
        """Something changed (assignment, seek, room freed): fetch again now."""
        with self.lock:
            self._run_again_locked()

    def _run_again_locked(self) -> None:
        """Something changed: the fetcher runs another round now. Noted as well as notified, so a
        change made while the fetcher thread is in a round (not waiting) is not lost and followed
        by a full wait."""
        self._run_again = True
        self._work.notify()

    def wake_locked(self) -> None:
        """As :meth:`wake`, for callers already holding :attr:`lock`."""
        self._run_again_locked()

    def add_locked(self, topic: str, partition: int, offset: int, partition_max_bytes: int) -> PartitionState:
        """Start fetching ``partition`` at ``offset`` (absolute or OFFSET_*); lock held."""
        state = PartitionState(topic, partition, partition_max_bytes)
        state.seek(offset)
        self.states[(topic, partition)] = state
        self._run_again_locked()
        return state

    def remove_locked(self, topic: str, partition: int) -> PartitionState | None:
        """Stop fetching ``partition``; the removed state (None when it was not assigned). Lock held.

        Its generation moves on, so that answers in flight for it are dropped, as after a seek.
        """
        state = self.states.pop((topic, partition), None)
        if state is not None:
            state.generation += 1
            state.fetch_position = None
            state.reset_to = None
        return state

    def take_errors(self) -> list[KafkaError]:
        with self.lock:
            errors = list(self._errors)
            self._errors.clear()
            return errors

    # ------------------------------------------------------------------ the loop

    def _run(self) -> None:
        while True:
            with self.lock:
                if self._stopping:
                    return
                self._run_again = False
            try:
                wait = self._run_once()
            except Exception as error:  # the fetcher must outlive any bug in one round
                logger.exception("consumer fetcher round failed")
                self._report_error(KafkaError(KafkaError._FAIL, f"consumer fetcher: {error!r}"))
                wait = self._backoff
            with self.lock:
                if not self._run_again and not self._stopping:
                    self._work.wait(wait)

    def _run_once(self) -> float:
        now = time.monotonic()
        self._streams.expire(now)  # a fetch answered later than its deadline fails DEADLINE_EXCEEDED, as a unary call
        wait = self._resolve_resets(now)
        return min(wait, self._send_fetches(now))

    def _report_error(self, error: KafkaError) -> None:
        with self.lock:
            self._errors.append(error)
            self.data_ready.notify_all()

    # ------------------------------------------------------------------ offset resets

    def _resolve_resets(self, now: float) -> float:
        with self.lock:
            pending = [(state, state.generation, state.reset_to) for state in self.states.values() if state.reset_to is not None and state.retry_at <= now]
        if not pending:
            return _IDLE_WAIT
        stored = [(state, generation) for state, generation, reset_to in pending if reset_to == OFFSET_STORED]
        if stored:
            self._resolve_stored(stored)
        logical = [(state, generation, reset_to) for state, generation, reset_to in pending if reset_to in (OFFSET_BEGINNING, OFFSET_END)]
        if logical:
            self._resolve_logical(logical)
        return self._backoff

    def _resolve_stored(self, stored: list[tuple[PartitionState, int]]) -> None:
        committed: dict[tuple[str, int], int] = {}
        if self._group_id:
            try:
                committed = self.fetch_committed([(state.topic, state.partition) for state, _ in stored], self._request_timeout)
            except KafkaException as error:
                self._retry_later([state for state, _ in stored], error.error)
                return
        fallback = {"earliest": OFFSET_BEGINNING, "latest": OFFSET_END}.get(self._reset_policy)
        with self.lock:
            for state, generation in stored:
                if state.generation != generation:
                    continue
                offset = committed.get((state.topic, state.partition), -1)
                if offset >= 0:
                    state.seek(offset)
                elif fallback is not None:
                    state.seek(fallback)
                else:
                    self._reset_failed(state, f"no committed offset for {state.topic}-{state.partition} and auto.offset.reset is error")
            self._run_again_locked()

    def _resolve_logical(self, logical: list[tuple[PartitionState, int, int]]) -> None:
        requests = [
            (state.topic, state.partition, _LIST_OFFSETS_EARLIEST if reset_to == OFFSET_BEGINNING else _LIST_OFFSETS_LATEST) for state, _, reset_to in logical
        ]
        try:
            results = self.list_offsets(requests, self._request_timeout)
        except KafkaException as error:
            if error.error.retriable():
                for state, _, _ in logical:
                    self._cluster.mark_stale(state.topic)
            self._retry_later([state for state, _, _ in logical], error.error)
            return
        with self.lock:
            for state, generation, _ in logical:
                if state.generation != generation:
                    continue
                code, _, offset, _ = results[(state.topic, state.partition)]
                if code:
                    state.retry_at = time.monotonic() + self._backoff
                    self._cluster.mark_stale(state.topic)
                    continue
                state.seek(offset)

    def _retry_later(self, states: list[PartitionState], error: KafkaError) -> None:
        with self.lock:
            for state in states:
                state.retry_at = time.monotonic() + self._backoff
        self._report_error(error)

    def _reset_failed(self, state: PartitionState, reason: str) -> None:
        """auto.offset.reset=error: tell the application through an error message (lock held)."""
        state.reset_to = None
        state.fetch_position = None
        state.generation += 1
        error = KafkaError(KafkaError._AUTO_OFFSET_RESET, f"Local: no offset to start from: {reason}")
        self.chunks.append(FetchedChunk(state, state.generation, b"", -1, -1, error))
        self.data_ready.notify_all()

    # ------------------------------------------------------------------ offsets lookups

    def list_offsets(self, requests: list[tuple[str, int, int]], timeout: float) -> dict[tuple[str, int], tuple[int, str, int, int]]:
        """ListOffsets at each partition's leader: {(topic, partition): (error code, message, offset, timestamp)}."""
        by_leader: dict[str, dict[str, list[broker_pb2.ListOffsetsPartition]]] = {}
        results: dict[tuple[str, int], tuple[int, str, int, int]] = {}
        for topic, partition, timestamp in requests:
            self._cluster.topic(topic, timeout=timeout)
            address = self._cluster.leader_address(topic, partition)
            if address is None:
                results[(topic, partition)] = (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"no leader known for {topic}-{partition}", -1, -1)
                continue
            by_leader.setdefault(address, {}).setdefault(topic, []).append(broker_pb2.ListOffsetsPartition(partition=partition, timestamp=timestamp))
        for address, topics in by_leader.items():
            request = broker_pb2.ListOffsetsRequest(
                isolation_level=self._isolation,
                topics=[broker_pb2.ListOffsetsTopic(topic=topic, partitions=partitions) for topic, partitions in topics.items()],
            )
            response = self._cluster.call("ListOffsets", request, address=address, timeout=timeout)
            for topic_response in response.topics:
                for partition_response in topic_response.partitions:
                    results[(topic_response.topic, partition_response.partition)] = (
                        partition_response.error_code,
                        partition_response.error_message,
                        partition_response.offset,
                        partition_response.timestamp,
                    )
        for topic, partition, _ in requests:
            results.setdefault((topic, partition), (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "the broker did not answer for this partition", -1, -1))
        return results

    def fetch_committed(self, partitions: list[tuple[str, int]], timeout: float) -> dict[tuple[str, int], int]:
        """The group's committed offsets ({(topic, partition): offset}, -1 when none)."""
        return {key: offset for key, (offset, _, _) in self.fetch_committed_entries(partitions, timeout).items()}

    def fetch_committed_entries(self, partitions: list[tuple[str, int]], timeout: float) -> dict[tuple[str, int], tuple[int, str, int]]:
        """The group's committed offsets with their metadata and leader epoch ({(topic, partition): (offset, metadata, epoch)}, offset -1 when none)."""
        by_topic: dict[str, list[int]] = {}
        for topic, partition in partitions:
            by_topic.setdefault(topic, []).append(partition)
        request = broker_pb2.OffsetFetchRequest(
            group_id=self._group_id, topics=[broker_pb2.OffsetFetchTopic(topic=topic, partitions=numbers) for topic, numbers in by_topic.items()]
        )
        response = self._coordinators.call(self._group_id, "OffsetFetch", request, timeout=timeout)
        if response.error_code:
            raise KafkaException(KafkaError(response.error_code, response.error_message or None))
        committed: dict[tuple[str, int], tuple[int, str, int]] = {}
        for topic_response in response.topics:
            for partition_response in topic_response.partitions:
                if partition_response.error_code:
                    committed[(topic_response.topic, partition_response.partition)] = (-1, "", -1)
                else:
                    committed[(topic_response.topic, partition_response.partition)] = (
                        partition_response.committed_offset,
                        partition_response.metadata,
                        partition_response.committed_leader_epoch,
                    )
        return committed

    # ------------------------------------------------------------------ fetching

    def _send_fetches(self, now: float) -> float:
        with self._send_lock:
            self._sending.active = True
            try:
                return self._send_fetches_locked(now)
            finally:
                self._sending.active = False

    def _send_fetches_locked(self, now: float) -> float:
        by_leader: dict[str, list[PartitionState]] = {}
        missing: set[str] = set()
        with self.lock:
            if self.prefetched_bytes >= self._prefetch_limit:
                return _IDLE_WAIT
            candidates = [
                state
                for state in self.states.values()
                if state.fetch_position is not None and not state.paused and not state.in_flight and state.retry_at <= now
            ]
        try:
            self._cluster.maybe_refresh({state.topic for state in candidates}, timeout=self._request_timeout)
        except KafkaException as error:
            self._report_error(error.error)
        for state in candidates:
            address = None if self._cluster.is_stale(state.topic) else self._cluster.leader_address(state.topic, state.partition)
            if address is None:
                # No leader known (an election is under way, or the refresh failed): wait for
                # metadata that names one.
                self._cluster.mark_stale(state.topic)
                missing.add(state.topic)
                continue
            if address in self._in_flight:
                continue
            by_leader.setdefault(address, []).append(state)
        for address, states in by_leader.items():
            self._send_fetch(address, states)
        if missing:
            return min(max(self._cluster.next_refresh_in(), self._backoff), _IDLE_WAIT)
        return _IDLE_WAIT

    def _send_fetch(self, address: str, states: list[PartitionState]) -> None:
        # Built in place: messages handed to a constructor are merged by serializing and parsing them
        # again (protobuf's upb); a one-partition request took 10.2 us that way, 6.1 us so.
        request = broker_pb2.FetchRequest(
            max_wait_ms=self._max_wait_ms, min_bytes=self._min_bytes, max_bytes=self._max_bytes, isolation_level=self._isolation, replica_id=-1
        )
        topics: dict[str, broker_pb2.FetchTopic] = {}
        sent: list[tuple[PartitionState, int, int]] = []
        with self.lock:
            for state in states:
                if state.fetch_position is None or state.in_flight:
                    continue
                state.in_flight = True
                sent.append((state, state.generation, state.fetch_position))
                topic = topics.get(state.topic)
                if topic is None:
                    topic = topics[state.topic] = request.topics.add(topic=state.topic)
                topic.partitions.add(
                    partition=state.partition,
                    fetch_offset=state.fetch_position,
                    partition_max_bytes=state.partition_max_bytes,
                    current_leader_epoch=self._cluster.leader_epoch(state.topic, state.partition),
                )
        if not sent:
            return
        self._in_flight.add(address)
        self.counters.request_sent(address, request.ByteSize())
        self._log.debug("fetch", "FETCH", "%s: fetching %d partition(s)", address, len(sent))
        sent_at = time.monotonic()
        # The callback runs on the stream's reader thread (or a call thread), except for a fetch
        # that fails at once, which _arrived handles without sending again (see _sending).
        self._streams.send(address, request, self._request_timeout + self._max_wait_ms / 1000.0, lambda done: self._arrived(address, sent, done, sent_at))

    def _arrived(self, address: str, sent: list[tuple[PartitionState, int, int]], future: Future[Any], sent_at: float) -> None:
        # Runs on a call thread: queue the records for the application here (a hand-off to the
        # fetcher thread first would add a thread wake-up to every record's latency), then send
        # the next Fetch from here. _in_flight changes only under _send_lock (adds) or for an
        # address whose call just completed (this discard), so no address gets two fetches.
        rtt = time.monotonic() - sent_at
        try:
            self._handle_answer(address, sent, future, rtt)
        except Exception as error:  # as in the fetcher's loop: report, and let fetching go on
            logger.exception("consumer fetch answer failed")
            with self.lock:
                self._in_flight.discard(address)
                for state, _, _ in sent:
                    state.in_flight = False
            self._report_error(KafkaError(KafkaError._FAIL, f"consumer fetcher: {error!r}"))
        fetching_again = False
        if not self._stopping and not getattr(self._sending, "active", False):
            try:
                self._send_fetches(time.monotonic())
                fetching_again = address in self._in_flight
            except Exception as error:
                logger.exception("consumer fetch failed")
                self._report_error(KafkaError(KafkaError._FAIL, f"consumer fetcher: {error!r}"))
        if not fetching_again:
            # Something is left for the fetcher thread: an offset reset, a backoff, a missing leader, room to wait for.
            with self.lock:
                self._run_again_locked()

    def _handle_answer(self, address: str, sent: list[tuple[PartitionState, int, int]], future: Future[Any], rtt: float) -> None:
        self._in_flight.discard(address)
        try:
            response = future.result()
        except grpc.RpcError as rpc_error:
            if self._stopping:  # the consumer is closing and ended its streams: nothing to report
                with self.lock:
                    for state, _, _ in sent:
                        state.in_flight = False
                return
            error = error_from_rpc(rpc_error, f"Fetch from {address}")
            self.counters.request_failed(address)
            self._cluster.note_failure(address, error)
            with self.lock:
                for state, _, _ in sent:
                    state.in_flight = False
                    state.retry_at = time.monotonic() + self._backoff
                    self._cluster.mark_stale(state.topic)
            self._report_error(error)
            return
        self._cluster.note_answer(address)
        self.counters.response_received(address, response.ByteSize(), rtt)
        answers = {(topic.topic, partition.partition): partition for topic in response.topics for partition in topic.partitions}
        with self.lock:
            if response.throttle_time_ms > 0:
                self.throttles.append((address, response.throttle_time_ms))
            for state, generation, fetch_offset in sent:
                state.in_flight = False
                answer = answers.get((state.topic, state.partition))
                if answer is None or state.generation != generation or state.fetch_position != fetch_offset:
                    continue  # a seek happened meanwhile, or the broker left the partition out
                self._apply(state, generation, fetch_offset, answer)
            self.data_ready.notify_all()

    def _apply(self, state: PartitionState, generation: int, fetch_offset: int, answer: broker_pb2.FetchPartitionResponse) -> None:
        """One partition's answer (lock held)."""
        code = answer.error_code
        if code == ErrorCode.OFFSET_OUT_OF_RANGE:
            policy = {"earliest": OFFSET_BEGINNING, "latest": OFFSET_END}.get(self._reset_policy)
            if policy is None:
                self._reset_failed(
                    state, f"offset {fetch_offset} is out of range ({answer.log_start_offset}..{answer.high_watermark}) and auto.offset.reset is error"
                )
            else:
                state.seek(policy)
            return
        if code:
            state.retry_at = time.monotonic() + self._backoff
            error = KafkaError(code, answer.error_message or None)
            if error.retriable():
                self._cluster.mark_stale(state.topic)
            else:
                self.chunks.append(FetchedChunk(state, generation, b"", fetch_offset, fetch_offset, error))
            return
        state.high_watermark = answer.high_watermark
        state.log_start_offset = answer.log_start_offset
        records = answer.records
        next_offset = next_fetch_offset(records, fetch_offset)
        if next_offset > fetch_offset:
            state.fetch_position = next_offset
            aborted = tuple((entry.producer_id, entry.first_offset) for entry in answer.aborted_transactions)
            self.chunks.append(FetchedChunk(state, generation, records, fetch_offset, next_offset, aborted=aborted))
            self.prefetched_bytes += len(records)
        elif records:
            # Only a partial batch came back: it is larger than what we asked for. Ask for more.
            state.partition_max_bytes = min(state.partition_max_bytes * 2, max(self._max_bytes, 1))
        elif self._partition_eof and fetch_offset >= self._readable_end(answer) and state.eof_offset != fetch_offset:
            state.eof_offset = fetch_offset
            error = KafkaError(
                KafkaError._PARTITION_EOF, f"Broker: No more messages: reached the end of {state.topic}-{state.partition} at offset {fetch_offset}"
            )
            self.chunks.append(FetchedChunk(state, generation, b"", fetch_offset, fetch_offset, error))

    def _readable_end(self, answer: broker_pb2.FetchPartitionResponse) -> int:
        """Where this consumer's reading ends: the last stable offset at read_committed, else the high watermark (as librdkafka)."""
        return answer.last_stable_offset if self._isolation == broker_pb2.READ_COMMITTED else answer.high_watermark

    def refetch_locked(self, state: PartitionState, offset: int) -> None:
        """Fetch ``state`` again from ``offset`` after retry.backoff.ms (lock held).

        The consumer calls this when it returned a _BAD_MSG error for the batch at ``offset``:
        data prefetched beyond that batch is dropped (the generation moves on, as after a
        seek), and the backoff keeps a partition stuck on a bad batch from spinning.
        """
        state.seek(offset)
        state.retry_at = time.monotonic() + self._backoff
        self._run_again_locked()

    def consumed(self, chunk: FetchedChunk) -> None:
        """The application took ``chunk`` (or dropped it): its bytes no longer count against the prefetch limit (lock held).

        The fetcher thread is woken only when this brings the prefetched bytes back under
        ``queued.max.messages.kbytes``, the one case in which fetching waited for the application.
        Otherwise the next Fetch is already in flight (sent by the call thread that applied the
        answer), and waking the fetcher thread for each chunk only made it run an empty round that
        competed for the interpreter lock with the application and the next answer.
        """
        was_full = self.prefetched_bytes >= self._prefetch_limit
        self.prefetched_bytes -= len(chunk.records)
        if was_full and self.prefetched_bytes < self._prefetch_limit:
            self._run_again_locked()

"""The follower side: one fetcher thread per leader broker pulls the partitions it leads.

For each partition a fetcher first truncates a divergent tail (KIP-101 / KIP-279): it asks the
leader ``OffsetForLeaderEpoch`` for the end offset of the latest epoch in its own
leader-epoch cache and truncates its log to the smaller of that offset and its own end of
that epoch. It never truncates to its own high watermark, which may lag behind records the
leader committed. Then it fetches from its log end offset with a long poll, appends the
leader's batches as they are (``append_as_follower``: same bytes, same offsets, same epochs)
and takes the leader's high watermark, capped at its own log end, and the leader's log start
offset, so that retention on the leader removes the same records here.

When the leader answers OFFSET_OUT_OF_RANGE (Kafka's handleOffsetOutOfRange), the answer
carries the leader's log start and log end offsets: a follower whose log end is past the
leader's truncates to the leader's log end; one whose log end is below the leader's log start
(it was away while retention deleted what it lacks) discards its whole log and continues from
the leader's log start.

Fetches go on one ``ReplicaFetchStream`` per leader (``fetch_stream``), held open across
rounds: one request at a time, its answer read back on the fetcher's own thread. A leader
without the stream method (UNIMPLEMENTED) is fetched with unary ``ReplicaFetch`` calls until
the channel is next reopened. A stream that fails, ends, or misses its answer deadline is
dropped, and the next fetch opens a new one with a full fetch (a new session); it is also
dropped while the fetcher has nothing to fetch, so that no stream sits idle long enough for the
leader to refuse its keepalive pings.

The other calls (OffsetForLeaderEpoch, and unary fetches) are blocking calls on the fetcher's
own thread: the answer wakes no other thread and no thread starts per call (grpcio's
``.future()`` starts a channel "spin" thread whenever a channel goes from no call in flight to
one). A blocking call cannot be cancelled, so a partition change that must cut a long poll
short cancels the stream in flight, or closes the channel under a unary call (the call ends
CANCELLED at once) and the next call opens a new one; the replication manager interrupts once
per cluster map, not once per partition.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

import grpc

from broker_nodes.replication import stage_trace
from broker_nodes.replication.fetch_sessions import NO_SESSION, FollowerSession, PartitionState
from broker_nodes.replication.fetch_stream import AnswerDeadline, FetchStream, FetchStreamDeadlineError, FetchStreamEndedError
from broker_nodes.storage.leader_epoch_cache import UNDEFINED_EPOCH
from broker_nodes.storage.log import PartitionLog
from grpc_protos.weir.v1 import replication_pb2, replication_pb2_grpc
from weir.errors import ErrorCode

logger = logging.getLogger(__name__)

_Request = TypeVar("_Request")
_Response = TypeVar("_Response")

PartitionKey = tuple[str, int]
LogLookup = Callable[[str, int], "PartitionLog | None"]
ChannelFactory = Callable[[str], grpc.Channel]  # HOST:PORT -> a channel to that broker
INTERNAL_TOKEN_HEADER = "x-weir-internal-token"
# Added to the long poll's max wait for the gRPC deadline, so the leader can answer late.
CALL_DEADLINE_MARGIN_SECONDS = 5.0
# A partition's first retry after an error; each further error in a row doubles the pause, up to
# replica.fetch.backoff.ms. The usual error is brief: a new partition's followers learn of it
# before its leader does (the control plane pushes the map to every broker at once), and the
# leader answers NOT_LEADER_OR_FOLLOWER or UNKNOWN_LEADER_EPOCH for the few milliseconds until it
# applies the same map. A full replica.fetch.backoff.ms (1 s) there held every acks=all produce
# to the new partition for up to a second (the bimodal runs of bench replication-throughput).
FIRST_RETRY_BACKOFF_MS = 10


def retry_backoff_ms(failures: int, max_backoff_ms: int) -> int:
    """The pause before a partition's next fetch after its ``failures``-th error in a row (1, 2, ...)."""
    return min(max_backoff_ms, FIRST_RETRY_BACKOFF_MS << min(max(failures - 1, 0), 20))


class FetchInterruptedError(Exception):
    """A call was not made, or was cut short, because the partitions changed or the fetcher is stopping."""


@dataclass(slots=True)
class FollowedPartition:
    """One partition a fetcher replicates. Changed only under the fetcher's lock."""

    leader_epoch: int
    truncated: bool = False  # the divergent tail (if any) is gone; fetching may start
    retry_at: float = 0.0  # monotonic time before which the partition is not fetched (after an error)
    failures: int = 0  # errors in a row: the pause before the next retry doubles with each (retry_backoff_ms)


@dataclass(frozen=True, slots=True)
class FetcherSettings:
    max_wait_ms: int  # replica.fetch.wait.max.ms
    max_bytes: int  # replica.fetch.max.bytes, per partition
    backoff_ms: int  # replica.fetch.backoff.ms
    # Opens the channel to a leader (TLS or plaintext, keepalive, message limits): see
    # broker_nodes.server.channels.open_internal_channel.
    channel_factory: ChannelFactory


class ReplicaFetcher:
    """The thread that replicates every partition one leader broker leads for this broker.

    Thread-safety: partitions are added and removed from any thread. A removal waits for a
    response being applied, so once :meth:`remove_partition` returns the fetcher never
    writes to that partition's log again (the broker may make it the leader).
    """

    def __init__(
        self,
        node_id: int,
        leader_id: int,
        address: str,
        *,
        internal_token: str,
        logs: LogLookup,
        settings: FetcherSettings,
    ) -> None:
        self.node_id = node_id
        self.leader_id = leader_id
        self.address = address
        self._logs = logs
        self._settings = settings
        self._metadata = ((INTERNAL_TOKEN_HEADER, internal_token),)
        self._lock = threading.Lock()
        self._partitions: dict[PartitionKey, FollowedPartition] = {}
        self._stopping = threading.Event()
        # Set by every partition change (and stop); cleared when a round starts. A call about to
        # start in a round that began before the change is not made (see _call).
        self._wake = threading.Event()
        # The channel and whether a call is in flight on it change under this lock, so that an
        # interruption closes the channel exactly when a call would otherwise wait out its long poll.
        self._channel_lock = threading.Lock()
        self._calling = False
        self._channel_closed = False
        self._session = FollowerSession()  # the fetch session with this leader (KIP-227)
        self._next_retry_at: float | None = None  # when the earliest backing-off partition is due (the fetcher's thread's)
        self._channel = settings.channel_factory(address)
        self._stub = replication_pb2_grpc.ReplicationStub(self._channel)
        # The open fetch stream (None: the next stream fetch opens one) and whether the leader
        # serves streams; both change under the channel lock.
        self._stream: FetchStream | None = None
        self._streaming = True
        self._exchanging = False  # a fetch is in flight on the stream (_calling: a unary call is)
        self._answer_deadline = AnswerDeadline(f"replica-fetch-deadline-{leader_id}")
        self._thread = threading.Thread(target=self._run, name=f"replica-fetcher-{leader_id}", daemon=True)

    # ------------------------------------------------------------------ control

    def start(self) -> None:
        self._thread.start()

    def add_partition(self, topic: str, partition: int, leader_epoch: int, *, interrupt: bool = True) -> bool:
        """Follow ``(topic, partition)`` under ``leader_epoch``: truncate by epoch first, then fetch.

        True when that is a change. ``interrupt``: cut the fetch in flight short so that the change
        takes effect at once; a caller adding many partitions passes False and calls
        :meth:`interrupt` once at the end.
        """
        with self._lock:
            current = self._partitions.get((topic, partition))
            if current is not None and current.leader_epoch == leader_epoch:
                return False
            self._partitions[(topic, partition)] = FollowedPartition(leader_epoch)
        if interrupt:
            self.interrupt()
        return True

    def remove_partition(self, topic: str, partition: int) -> None:
        with self._lock:
            self._partitions.pop((topic, partition), None)

    @property
    def partition_keys(self) -> set[PartitionKey]:
        with self._lock:
            return set(self._partitions)

    def stop(self, timeout_seconds: float = 5.0) -> None:
        self._stopping.set()
        self.interrupt()
        self._thread.join(timeout_seconds)
        with self._channel_lock:  # _call opens no channel once stopping is set
            self._close_channel_locked()
        self._answer_deadline.close()

    def interrupt(self) -> None:
        """Cut a long poll short so that a partition change takes effect at once (cancels the stream or closes the channel of a call in flight)."""
        with self._channel_lock:
            self._wake.set()
            if self._exchanging:
                self._drop_stream_locked()
            elif self._calling:
                self._close_channel_locked()

    def _close_channel_locked(self) -> None:
        self._drop_stream_locked()
        if not self._channel_closed:
            self._channel_closed = True
            self._channel.close()

    def _drop_stream_locked(self) -> None:
        if self._stream is not None:
            self._stream.cancel()
            self._stream = None

    def _open_channel_locked(self) -> None:
        """A new channel when the last one was closed; the leader behind it may serve streams (again)."""
        if self._channel_closed:
            self._channel = self._settings.channel_factory(self.address)
            self._stub = replication_pb2_grpc.ReplicationStub(self._channel)
            self._channel_closed = False
            self._streaming = True

    # ------------------------------------------------------------------ the loop

    def _run(self) -> None:
        while not self._stopping.is_set():
            self._wake.clear()
            try:
                progressed = self._run_once()
            except FetchInterruptedError:
                continue  # a partition change cut the round short (see interrupt)
            except grpc.RpcError as error:
                if error.code() != grpc.StatusCode.CANCELLED:
                    logger.info("replica fetcher for leader %d at %s: %s", self.leader_id, self.address, error.code().name)
                    self._wake.wait(self._settings.backoff_ms / 1000.0)
                continue
            except (FetchStreamDeadlineError, FetchStreamEndedError) as error:
                logger.info("replica fetcher for leader %d at %s: %s", self.leader_id, self.address, error)
                self._wake.wait(self._settings.backoff_ms / 1000.0)
                continue
            except Exception:
                logger.exception("replica fetcher for leader %d failed; retrying", self.leader_id)
                progressed = False
            if not progressed:
                self._wake.wait(self._idle_wait_seconds())

    def _idle_wait_seconds(self) -> float:
        """How long a round that did nothing waits for the next: until the next partition's retry is due, at most replica.fetch.backoff.ms."""
        wait = self._settings.backoff_ms / 1000.0
        if self._next_retry_at is not None:
            wait = min(wait, max(self._next_retry_at - time.monotonic(), 0.0))
        return wait

    def _run_once(self) -> bool:
        """One round: truncate the partitions that need it, then one fetch. False when there was nothing to do."""
        to_truncate, to_fetch = self._due(time.monotonic())
        if to_truncate:
            self._truncate(to_truncate)
            # Those truncated now are fetched in this round too.
            to_truncate, to_fetch = self._due(time.monotonic())
        if not to_fetch:
            with self._channel_lock:
                self._drop_stream_locked()  # an idle stream would only draw the leader's keepalive refusals
            return False
        return self._fetch(to_fetch)

    def _due(self, now: float) -> tuple[dict[PartitionKey, int], dict[PartitionKey, int]]:
        """(partitions to truncate, partitions to fetch), each with its leader epoch: those not backing off at ``now``.

        Also notes when the earliest of the others is due (:attr:`_next_retry_at`), which bounds
        the round's long poll. One pass over the partitions: a round runs after every answer, so
        its cost per partition is in front of every acknowledgement that waits for this follower.
        """
        to_truncate: dict[PartitionKey, int] = {}
        to_fetch: dict[PartitionKey, int] = {}
        next_retry_at: float | None = None
        with self._lock:
            for key, state in self._partitions.items():
                if state.retry_at <= now:
                    (to_fetch if state.truncated else to_truncate)[key] = state.leader_epoch
                elif next_retry_at is None or state.retry_at < next_retry_at:
                    next_retry_at = state.retry_at
        self._next_retry_at = next_retry_at
        return to_truncate, to_fetch

    def _max_wait_ms(self) -> int:
        """The long poll of this round's fetch: replica.fetch.wait.max.ms, cut short when a backing-off partition is due sooner.

        Otherwise the retry would wait for the long poll of the others to end (up to 500 ms
        more, with nothing appended to them).
        """
        max_wait_ms = self._settings.max_wait_ms
        if self._next_retry_at is not None:
            max_wait_ms = min(max_wait_ms, max(math.ceil((self._next_retry_at - time.monotonic()) * 1000.0), 0))
        return max_wait_ms

    def _call(
        self, method: Callable[[replication_pb2_grpc.ReplicationStub], grpc.UnaryUnaryMultiCallable[_Request, _Response]], request: _Request
    ) -> _Response:
        """Make one blocking call on this thread; FetchInterruptedError when the round is stale or the call was cut short."""
        with self._channel_lock:
            if self._wake.is_set() or self._stopping.is_set():
                raise FetchInterruptedError()  # the partitions changed since this round read them
            self._open_channel_locked()
            callable_ = method(self._stub)
            self._calling = True
        try:
            return callable_(request, timeout=self._settings.max_wait_ms / 1000.0 + CALL_DEADLINE_MARGIN_SECONDS, metadata=self._metadata)
        except grpc.RpcError as error:
            if error.code() == grpc.StatusCode.CANCELLED and self._wake.is_set():
                raise FetchInterruptedError() from None  # interrupt() closed the channel under the call
            raise
        except ValueError as closed:  # grpcio: "Cannot invoke RPC on closed channel!" (closed between the lock and the call)
            with self._channel_lock:
                self._channel_closed = True  # whoever closed it, the next call opens a new one
            raise FetchInterruptedError() from closed
        finally:
            with self._channel_lock:
                self._calling = False

    # ------------------------------------------------------------------ truncation

    def _truncate(self, partitions: dict[PartitionKey, int]) -> None:
        requests = []
        latest_epochs: dict[PartitionKey, int] = {}
        for (topic, partition), leader_epoch in partitions.items():
            log = self._logs(topic, partition)
            if log is None:
                continue
            latest = log.leader_epoch_cache.latest_epoch
            if latest == UNDEFINED_EPOCH:
                # A log without any epoch holds no record written under a leader: nothing can diverge.
                self._mark_truncated((topic, partition), leader_epoch)
                continue
            latest_epochs[(topic, partition)] = latest
            requests.append(
                replication_pb2.OffsetForLeaderEpochPartition(topic=topic, partition=partition, current_leader_epoch=leader_epoch, leader_epoch=latest)
            )
        if not requests:
            return
        response = self._call(lambda stub: stub.OffsetForLeaderEpoch, replication_pb2.OffsetForLeaderEpochRequest(replica_id=self.node_id, partitions=requests))
        for answer in response.partitions:
            key = (answer.topic, answer.partition)
            with self._lock:
                state = self._partitions.get(key)
                if state is None or state.leader_epoch != partitions.get(key):
                    continue
                if answer.error_code != ErrorCode.NO_ERROR:
                    self._back_off_locked(state, answer.error_code, answer.error_message, key)
                    continue
                log = self._logs(*key)
                if log is None:
                    continue
                target = self._truncation_offset(log, latest_epochs[key], answer.leader_epoch, answer.end_offset)
                if target < log.log_end_offset:
                    logger.warning(
                        "partition %d of %s: truncating the divergent tail from %d to %d (leader %d, epoch %d ends at %d there)",
                        key[1],
                        key[0],
                        log.log_end_offset,
                        target,
                        self.leader_id,
                        answer.leader_epoch,
                        answer.end_offset,
                    )
                    log.truncate_to(target)
                state.truncated = True
                state.failures = 0

    @staticmethod
    def _truncation_offset(log: PartitionLog, asked_epoch: int, leader_epoch: int, leader_end_offset: int) -> int:
        """Where this log stops agreeing with the leader's (KIP-279)."""
        if leader_epoch == UNDEFINED_EPOCH or leader_end_offset < 0:
            # The leader has no epoch at or below any of ours: none of our records is in its log.
            return log.log_start_offset
        if leader_epoch == asked_epoch:
            return min(leader_end_offset, log.log_end_offset)
        # The leader never had our latest epoch: we agree at most up to where the largest
        # epoch we share ended, on either side.
        _, own_end = log.leader_epoch_cache.end_offset_for(leader_epoch, log.log_end_offset)
        return min(leader_end_offset, own_end if own_end >= 0 else log.log_start_offset, log.log_end_offset)

    def _mark_truncated(self, key: PartitionKey, leader_epoch: int) -> None:
        with self._lock:
            state = self._partitions.get(key)
            if state is not None and state.leader_epoch == leader_epoch:
                state.truncated = True

    # ------------------------------------------------------------------ fetching

    def _fetch(self, partitions: dict[PartitionKey, int]) -> bool:
        """One fetch within the fetch session (KIP-227): a full one first, then only the changes."""
        session = self._session
        wanted: dict[PartitionKey, PartitionState] = {}
        for key, leader_epoch in partitions.items():
            log = self._logs(*key)
            if log is not None:
                # The log start offset: the leader's DeleteRecords waits for it.
                wanted[key] = session.state_of(key, log.log_end_offset, leader_epoch, log.log_start_offset)
        if not wanted:
            return False
        named, forgotten = session.next_fetch(wanted)
        request = replication_pb2.ReplicaFetchRequest(
            replica_id=self.node_id,
            max_wait_ms=self._max_wait_ms(),
            min_bytes=1,
            max_bytes=self._settings.max_bytes,
            session_id=session.session_id,
            session_epoch=session.epoch,
            partitions=[
                replication_pb2.ReplicaFetchPartition(
                    topic=topic,
                    partition=partition,
                    fetch_offset=state.fetch_offset,
                    current_leader_epoch=state.current_leader_epoch,
                    log_end_offset=state.fetch_offset,
                    log_start_offset=state.log_start_offset,
                )
                for (topic, partition), state in named
            ],
            forgotten=[replication_pb2.ReplicaFetchForgottenPartition(topic=topic, partition=partition) for topic, partition in forgotten],
        )
        if stage_trace.ENABLED:
            for (topic, partition), state in named:
                stage_trace.stamp(stage_trace.FETCH_SENT, topic, partition, state.fetch_offset, self.node_id)
        try:
            response = self._fetch_call(request)
            if response.error_code != ErrorCode.NO_ERROR:
                # The leader lost or refused the session: the next fetch is a full one, at once.
                logger.info("replica fetcher for leader %d: %s; fetching in full", self.leader_id, response.error_message)
                session.reset()
                return True
            session.answered(response.session_id, named, forgotten)
            self._apply(response, partitions)
        except BaseException:
            # The leader may or may not have taken this epoch, or the answer was not applied: start over.
            session.reset()
            raise
        # An answer within a session (even an empty one, after a full long poll) is progress: fetch again at once.
        return response.session_id != NO_SESSION or bool(response.partitions)

    def _fetch_call(self, request: replication_pb2.ReplicaFetchRequest) -> replication_pb2.ReplicaFetchResponse:
        """``request`` on the fetch stream (opened if needed), or a unary ReplicaFetch to a leader without streams."""
        timeout = self._settings.max_wait_ms / 1000.0 + CALL_DEADLINE_MARGIN_SECONDS
        with self._channel_lock:
            if self._wake.is_set() or self._stopping.is_set():
                raise FetchInterruptedError()  # the partitions changed since this round read them
            self._open_channel_locked()
            if self._streaming and self._stream is None:
                try:
                    self._stream = FetchStream(self._stub, self._metadata, self._answer_deadline)
                except ValueError as closed:  # grpcio: the channel was closed (not by us: stop() holds this lock)
                    self._channel_closed = True
                    raise FetchInterruptedError() from closed
            stream = self._stream
            self._exchanging = stream is not None
        if stream is None:
            return self._unary_fetch(request)
        try:
            return stream.exchange(request, timeout)
        except grpc.RpcError as error:
            with self._channel_lock:
                self._exchanging = False  # (a unary fallback below is cut short by closing the channel)
                if self._stream is stream:
                    self._drop_stream_locked()
                if error.code() == grpc.StatusCode.UNIMPLEMENTED:
                    # A leader without ReplicaFetchStream never saw the request: send it unary, as from now on.
                    logger.info("leader %d at %s serves no fetch stream; fetching with unary calls", self.leader_id, self.address)
                    self._streaming = False
            if error.code() == grpc.StatusCode.UNIMPLEMENTED:
                return self._unary_fetch(request)
            if error.code() == grpc.StatusCode.CANCELLED and self._wake.is_set():
                raise FetchInterruptedError() from None  # interrupt() cancelled the stream under the exchange
            raise
        except BaseException:
            with self._channel_lock:
                if self._stream is stream:
                    self._drop_stream_locked()
            raise
        finally:
            with self._channel_lock:
                self._exchanging = False

    def _unary_fetch(self, request: replication_pb2.ReplicaFetchRequest) -> replication_pb2.ReplicaFetchResponse:
        response: replication_pb2.ReplicaFetchResponse = self._call(lambda stub: stub.ReplicaFetch, request)
        return response

    def _apply(self, response: replication_pb2.ReplicaFetchResponse, partitions: dict[PartitionKey, int]) -> None:
        for answer in response.partitions:
            key = (answer.topic, answer.partition)
            # Applied under the lock so that a removal (this broker becoming the leader) waits
            # for it and no follower write lands after the partition changed hands.
            with self._lock:
                state = self._partitions.get(key)
                if state is None or state.leader_epoch != partitions.get(key):
                    continue
                if answer.error_code not in (ErrorCode.NO_ERROR, ErrorCode.OFFSET_OUT_OF_RANGE):
                    self._back_off_locked(state, answer.error_code, answer.error_message, key)
                    continue
                log = self._logs(*key)
                if log is None:
                    continue
                if answer.error_code == ErrorCode.OFFSET_OUT_OF_RANGE:
                    self._handle_out_of_range_locked(key, state, log, answer)
                    continue
                records = answer.records  # each read of a protobuf bytes field copies it: once
                if records:
                    if stage_trace.ENABLED:
                        stage_trace.stamp(stage_trace.ANSWER_ARRIVED, key[0], key[1], log.log_end_offset, self.node_id)
                    log.append_as_follower(records)
                    if stage_trace.ENABLED:
                        stage_trace.stamp(stage_trace.APPENDED, key[0], key[1], log.log_end_offset, self.node_id)
                log.update_high_watermark(min(answer.high_watermark, log.log_end_offset))
                log.increase_log_start_offset(answer.log_start_offset)
                state.failures = 0

    def _handle_out_of_range_locked(
        self, key: PartitionKey, state: FollowedPartition, log: PartitionLog, answer: replication_pb2.ReplicaFetchPartitionResponse
    ) -> None:
        """The leader refused our log end as a fetch offset: move our log into the leader's range."""
        leader_start, leader_end = answer.log_start_offset, answer.log_end_offset
        own_end = log.log_end_offset
        if leader_start < 0 or leader_end < 0:
            # A leader that does not say where its log lies: truncate by epoch again, later.
            state.truncated = False
            self._back_off_locked(state, answer.error_code, answer.error_message, key)
        elif leader_end < own_end:
            # Epoch truncation ran before fetching, so this is a leader that lost records it
            # had (an unclean election); Kafka truncates to the leader's end as well.
            logger.warning(
                "partition %d of %s: log end %d is past leader %d's log end %d; truncating to it",
                key[1],
                key[0],
                own_end,
                self.leader_id,
                leader_end,
            )
            log.truncate_to(leader_end)
        elif leader_start > own_end:
            logger.warning(
                "partition %d of %s: log end %d is below leader %d's log start %d (deleted there meanwhile); "
                "discarding this log and continuing from the leader's log start",
                key[1],
                key[0],
                own_end,
                self.leader_id,
                leader_start,
            )
            log.truncate_fully_and_start_at(leader_start)
        else:
            # Our log end is inside the leader's range by now (it moved since it answered): retry.
            self._back_off_locked(state, answer.error_code, answer.error_message, key)

    def _back_off_locked(self, state: FollowedPartition, code: int, message: str, key: PartitionKey) -> None:
        state.failures += 1
        backoff_ms = retry_backoff_ms(state.failures, self._settings.backoff_ms)
        logger.info("partition %d of %s from leader %d: error %d (%s); retrying in %d ms", key[1], key[0], self.leader_id, code, message, backoff_ms)
        state.retry_at = time.monotonic() + backoff_ms / 1000.0

"""Fetch for both front doors: authorize, read (long-polling in the fetch purgatory), meter, charge the quota.

Stored batch bytes are returned as they are. A partition the caller may not READ is answered
TOPIC_AUTHORIZATION_FAILED whether or not it exists; a request with such a partition is
answered at once (an error answers a fetch at once, as in Kafka). A read_committed fetch
stops at the last stable offset and carries the aborted transactions of the range it returns.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from broker_nodes.partition_waitlist import WakeSignal, wait_blocking
from broker_nodes.replica_manager import FetchPartitionRequest, FetchPartitionResult
from broker_nodes.replication import stage_trace
from broker_nodes.requests import throttle
from broker_nodes.requests.departure import Departure
from broker_nodes.requests.outcomes import NO_ERROR, LeaderHint, allowed_topics, leader_hint, plain_error, qualified_names
from broker_nodes.security.access import CallContext
from broker_nodes.security.authorizer import Operation
from broker_nodes.security.errors import TopicAuthorizationError
from broker_nodes.security.quotas import Direction
from broker_nodes.server.broker import Broker
from broker_nodes.server.fetch_purgatory import LongPoll
from broker_nodes.storage.transaction_index import AbortedTransaction
from log_formats import consumer_fetch_trace


class FetchPartitionOutcome(NamedTuple):  # a NamedTuple: built once per partition, cheaper than a frozen dataclass
    """One partition's answer (plain topic name): records, or an error code and message, with the log bounds."""

    topic: str
    partition: int
    error_code: int
    error_message: str
    high_watermark: int
    last_stable_offset: int
    log_start_offset: int
    records: bytes
    current_leader: LeaderHint | None = None  # with NOT_LEADER_OR_FOLLOWER / FENCED_LEADER_EPOCH, when known
    # (epoch, end offset) when the fetcher's log diverged from the leader's at its last fetched
    # epoch (KIP-320): no records, the fetcher truncates there first.
    diverging_epoch: tuple[int, int] | None = None
    # read_committed only: the aborted transactions overlapping ``records`` (None at read_uncommitted).
    aborted_transactions: tuple[AbortedTransaction, ...] | None = None


class FetchResult(NamedTuple):
    partitions: list[FetchPartitionOutcome]  # in request order
    throttle_ms: int


def fetch_limit(broker: Broker, requested_max_bytes: int) -> int:
    """The response size limit: the request's ``max_bytes`` (0: none asked) capped by the broker's fetch.max.bytes."""
    broker_limit: int = broker.config.integer("fetch.max.bytes")
    return min(requested_max_bytes or broker_limit, broker_limit)


class FetchAbandonedError(Exception):
    """The client went away while its fetch waited: nobody to answer, and nothing was metered or charged."""


def fetch(
    broker: Broker,
    call: CallContext,
    partitions: Sequence[FetchPartitionRequest],
    *,
    max_wait_ms: int,
    min_bytes: int,
    max_bytes: int,
    departure: Departure | None = None,
) -> FetchResult:
    """Read every partition (``topic`` as the caller names it); one outcome per partition, in order.

    Precondition: no (topic, partition) occurs twice, the numbers are not negative. Blocks this
    thread up to ``max_wait_ms`` until ``min_bytes`` are available (never when a partition is
    denied); :func:`start_fetch` is the same fetch for a caller that waits without a thread.
    With ``departure`` (a stream's fetches), the wait ends as soon as the client leaves, with
    :class:`FetchAbandonedError`.
    """
    pending = start_fetch(broker, call, partitions, max_wait_ms=max_wait_ms, min_bytes=min_bytes, max_bytes=max_bytes, holds_thread=True)
    if departure is None:
        wait_blocking(pending)
    elif not departure.wait(pending):
        raise FetchAbandonedError("the client went away while its fetch waited")
    return pending.result()


class PendingFetch:
    """One Fetch between its steps (a ``partition_waitlist.Pending``): drive it, then :meth:`result` answers it.

    :meth:`advance` reads (first call) and re-reads after wake-ups on the calling thread, and
    :meth:`result`, once :meth:`advance` returned True, builds the outcomes, charges the quota
    and meters what is returned (once). Always :meth:`release` it (unparks the fetch).
    """

    def __init__(
        self,
        broker: Broker,
        call: CallContext,
        partitions: Sequence[FetchPartitionRequest],
        authorized: list[FetchPartitionRequest],
        qualified: list[FetchPartitionRequest],
        poll: LongPoll[list[FetchPartitionResult]],
    ) -> None:
        self._broker = broker
        self._call = call
        self._partitions = partitions
        self._authorized = authorized
        self._qualified = qualified
        self._poll = poll

    @property
    def signal(self) -> WakeSignal:
        return self._poll.signal

    def advance(self) -> bool:
        if stage_trace.ENABLED and self._poll.signal.is_set():
            _stamp(consumer_fetch_trace.FETCH_WOKE, self._qualified)
        return self._poll.advance()

    def remaining_seconds(self) -> float:
        return self._poll.remaining_seconds()

    def release(self) -> None:
        self._poll.release()

    def result(self) -> FetchResult:
        results = self._poll.results
        assert results is not None, "result() before advance() returned True"
        if stage_trace.ENABLED:
            _stamp(consumer_fetch_trace.ANSWER_BUILT, [item for item, result in zip(self._qualified, results) if result.records])
        return _finish(self._broker, self._call, self._partitions, self._authorized, self._qualified, results)


def start_fetch(
    broker: Broker,
    call: CallContext,
    partitions: Sequence[FetchPartitionRequest],
    *,
    max_wait_ms: int,
    min_bytes: int,
    max_bytes: int,
    holds_thread: bool = False,
) -> PendingFetch:
    """The fetch :func:`fetch` runs, authorized but not yet read: its caller drives it (see :class:`PendingFetch`).

    ``holds_thread``: the caller blocks a thread while it waits (False: it waits on an event loop).
    """
    limit = fetch_limit(broker, max_bytes)
    allowed = allowed_topics(call, Operation.READ, (item.topic for item in partitions))
    authorized = [item for item in partitions if item.topic in allowed]
    names = qualified_names(call, allowed)
    qualified = [
        FetchPartitionRequest(
            names[item.topic],
            item.partition,
            item.fetch_offset,
            item.max_bytes,
            item.current_leader_epoch,
            item.last_fetched_epoch,
            item.isolation_level,
        )
        for item in authorized
    ]
    if stage_trace.ENABLED:
        _stamp(consumer_fetch_trace.FETCH_ARRIVED, qualified)
    if len(authorized) < len(partitions):
        poll = broker.replica_manager.start_fetch(qualified, max_wait_ms=0, min_bytes=0, max_bytes=limit, holds_thread=holds_thread)
    else:
        poll = broker.replica_manager.start_fetch(qualified, max_wait_ms=max_wait_ms, min_bytes=min_bytes, max_bytes=limit, holds_thread=holds_thread)
    return PendingFetch(broker, call, partitions, authorized, qualified, poll)


def _stamp(stage: str, partitions: Sequence[FetchPartitionRequest]) -> None:
    """Stage stamps for ``bench.latency_breakdown`` (only while the broker traces, see ``replication.stage_trace``)."""
    for item in partitions:
        stage_trace.stamp(stage, item.topic, item.partition, item.fetch_offset)


def _finish(
    broker: Broker,
    call: CallContext,
    partitions: Sequence[FetchPartitionRequest],
    authorized: list[FetchPartitionRequest],
    qualified: list[FetchPartitionRequest],
    results: list[FetchPartitionResult],
) -> FetchResult:
    by_partition = {(item.topic, item.partition): result for item, result in zip(authorized, results)}
    outcomes = []
    for item in partitions:
        result = by_partition.get((item.topic, item.partition))
        if result is None:
            result = FetchPartitionResult(b"", -1, -1, TopicAuthorizationError(item.topic, "read from"))
        outcomes.append(_partition_outcome(broker, item, result, call))
    throttle_ms = throttle.charge(broker, call, Direction.FETCH, sum(len(result.records) for result in results))
    broker.metering.record_fetch(call, qualified, results, throttle_ms)
    return FetchResult(outcomes, throttle_ms)


def _partition_outcome(broker: Broker, item: FetchPartitionRequest, result: FetchPartitionResult, call: CallContext) -> FetchPartitionOutcome:
    code, message = (NO_ERROR, "") if result.error is None else plain_error(result.error, call, item.topic)
    hint = None if result.error is None else leader_hint(broker, result.error, call.qualify(item.topic), item.partition)
    return FetchPartitionOutcome(
        item.topic,
        item.partition,
        code,
        message,
        result.high_watermark,
        result.last_stable_offset if result.last_stable_offset >= 0 else result.high_watermark,
        result.log_start_offset,
        result.records,
        hint,
        result.diverging_epoch,
        result.aborted_transactions,
    )

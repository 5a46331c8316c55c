"""``Consumer``: confluent-kafka's consumer API over Weir's gRPC data plane.

A background :class:`~weir.fetcher.Fetcher` keeps long-poll Fetch requests in flight and
queues raw record bytes; poll() and consume() decode them into :class:`~weir.message.Message`
objects in the application's thread, skipping records below the position (the first batch
of an answer may start earlier) and control batches.

Two ways to get partitions, as in confluent-kafka:

- ``assign()`` / ``incremental_assign()``: the application names them; commits for
  ``group.id`` carry no member (Kafka's "simple" consumer group);
- ``subscribe(topics, on_assign=, on_revoke=, on_lost=)``: the consumer joins ``group.id``
  and the group's coordinator assigns partitions (KIP-848). Everything about the group (the
  subscription, heartbeats, rebalance callbacks, committing revoked partitions) is its
  :class:`~weir.group_membership.GroupMembership`'s; the consumer fetches what it is told to.
  Changes are incremental (cooperative): ``on_assign`` gets the added partitions,
  ``on_revoke`` the removed ones, ``on_lost`` those taken away without a chance to commit
  (fenced, session or poll interval expired; ``on_revoke`` when ``on_lost`` is unset). The
  callbacks run inside poll() / consume() / close() as ``callback(consumer, partitions)``;
  inside one, ``incremental_assign`` / ``incremental_unassign`` may set start offsets or
  drop partitions, and partitions the callback did not assign start at the committed
  offset or ``auto.offset.reset``. ``assign(partitions)`` inside ``on_assign`` works as under
  confluent-kafka's eager protocol: the partitions given start at their offsets. A revoked partition is given up only after
  ``on_revoke`` returned and, with ``enable.auto.commit``, its offsets were committed.
  Commits carry the member id and member epoch; a commit answered STALE_MEMBER_EPOCH is sent
  again once the member heard of its new epoch. Group errors (authorization, fencing that
  cannot be recovered, _MAX_POLL_EXCEEDED) come out of poll() as error events.

A subscribed topic (by name) that the brokers do not know comes out of poll() once as an
event whose error() is UNKNOWN_TOPIC_OR_PART, as librdkafka reports it (asked again every
few seconds until the topic exists; ``allow.auto.create.topics`` lets the broker create it).

Auto commit (``enable.auto.commit``): every ``auto.commit.interval.ms`` poll() commits the
offsets following the records poll()/consume() returned (or stored with store_offsets(),
which raises ``_INVALID_ARG`` unless ``enable.auto.offset.store`` is false, as librdkafka);
also before partitions are revoked and on close(). Commit metadata
(``TopicPartition.metadata``) is committed with the offset and returned by committed(), None
and '' apart as in confluent-kafka (:mod:`weir.commit_metadata`).

``stats_cb`` (every ``statistics.interval.ms``, weir.statistics) and ``throttle_cb`` are served
from poll()/consume(), as ``error_cb``.

Where a group's offsets live: at the group's coordinator, found with FindCoordinator and
cached (:mod:`weir.coordinator`). Synchronous commits and committed() retry within their
timeout when the coordinator moved, is loading or cannot be reached; asynchronous commits are
not retried (as in Kafka) but make the next call look the coordinator up again.

Start position of an assigned partition: the offset given to assign(), else the group's
committed offset, else ``auto.offset.reset``. OFFSET_OUT_OF_RANGE while fetching resets per
``auto.offset.reset``; with ``error`` the application gets a Message whose error() is
OFFSET_OUT_OF_RANGE.

Thread-safety: one application thread should call poll()/consume(), subscribe() and
close(), as with confluent-kafka; commit(), position() and the offset queries may be called
from others.
"""

from __future__ import annotations

import gc
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, Literal, overload

import grpc

from grpc_protos.weir.v1 import broker_pb2
from weir.cluster import Cluster, ClusterMetadata, error_from_rpc
from weir.commit_metadata import decode_commit_metadata, encode_commit_metadata
from weir.config import CONSUMER, ClientConfig, invalid_argument
from weir.coordinator import COORDINATOR_MOVED, GroupCoordinators
from weir.errors import BadBatchError, ErrorCode, KafkaError, KafkaException
from weir.fetcher import FetchedChunk, Fetcher, PartitionState
from weir.group_membership import GroupMembership, Partition, parse_subscription
from weir.group_metadata import ConsumerGroupMetadata
from weir.message import OFFSET_INVALID, OFFSET_STORED, Message, ThrottleEvent, TopicPartition, decode_messages
from weir.read_committed import committed_batches
from weir.records import (
    CONTROL_FLAG_MASK,
    BatchHeader,
    RecordFormatError,
    batch_records_bytes,
    iter_batch_positions,
)
from weir.statistics import StatisticsSource, StatisticsTimer, statistics_json

Callback = Callable[["Consumer", list[TopicPartition]], Any]
# Longest close() / unsubscribe() wait for the coordinator to answer the leave; a leave that is
# not answered only means the coordinator waits out the session timeout.
_LEAVE_TIMEOUT = 5.0
# STALE_MEMBER_EPOCH: the coordinator moved the member to a newer epoch it has not heard of yet.
_STALE_EPOCH = ErrorCode.STALE_MEMBER_EPOCH


# How often poll() asks again whether a subscribed topic that did not exist has appeared.
_TOPIC_CHECK_INTERVAL = 5.0


def bad_batch_message(topic: str, partition: int, header: BatchHeader, min_offset: int, error: RecordFormatError) -> Message:
    """The error event for a stored batch whose records cannot be decoded: a Message whose
    error() is _BAD_MSG (a :class:`~weir.errors.BadBatchError`) naming topic, partition and
    the batch's offsets, at the first offset the application has not seen."""
    offset = max(header.base_offset, min_offset)
    reason = (
        f"Local: Bad message format: {topic} [{partition}] offsets {header.base_offset}..{header.last_offset} "
        f"cannot be decoded ({error.reason}); seek to offset {header.next_offset} to skip this batch"
    )
    return Message(topic, partition, (offset, -1, None, None, ()), 0, BadBatchError(reason, header.base_offset, header.last_offset))


class Consumer:
    """A Kafka-style consumer: manual assignment or group subscription (see the module docstring)."""

    def __init__(self, config: Mapping[str, Any] | None = None, **options: Any) -> None:
        merged = dict(config or {})
        merged.update(options)
        self._config = ClientConfig(merged, CONSUMER)
        self._cluster = Cluster(self._config)
        self._coordinators = GroupCoordinators(self._cluster)
        self._fetcher = Fetcher(self._cluster, self._coordinators, self._config)
        self._group_id: str | None = self._config["group.id"]
        self._auto_commit = self._config["enable.auto.commit"] and bool(self._group_id)
        self._auto_commit_interval = self._config["auto.commit.interval.ms"] / 1000.0
        self._auto_store = self._config["enable.auto.offset.store"]
        self._partition_max_bytes = self._config["max.partition.fetch.bytes"]
        self._request_timeout = self._config["request.timeout.ms"] / 1000.0
        self._error_callback: Callable[[KafkaError], Any] | None = self._config["error_cb"]
        self._commit_callback: Callable[..., Any] | None = self._config["on_commit"]
        self._commit_results: list[tuple[KafkaError | None, list[TopicPartition]]] = []
        self._commit_lock = threading.Lock()
        # Offsets this consumer last committed successfully, so auto commit skips unchanged ones.
        self._last_committed: dict[tuple[str, int], int] = {}
        self._next_auto_commit = time.monotonic() + self._auto_commit_interval
        # Decoded messages not yet returned, all of one chunk (one partition, one generation).
        self._decoded: list[Message] = []
        self._decoded_index = 0
        self._decoded_chunk: FetchedChunk | None = None
        self._closed = False
        # Group membership, from the first subscribe() on.
        self._membership: GroupMembership | None = None
        # Subscribed topics reported as unknown (UNKNOWN_TOPIC_OR_PART from poll()), and when to look again.
        self._reported_unknown: set[str] = set()
        self._next_topic_check = float("inf")
        self._stats_callback: Callable[[str], Any] | None = self._config["stats_cb"]
        self._throttle_callback: Callable[[ThrottleEvent], Any] | None = self._config["throttle_cb"]
        self._stats_timer = StatisticsTimer(self._config["statistics.interval.ms"] if self._stats_callback is not None else 0)
        self._started = time.monotonic()
        self._fetcher.start()

    # ------------------------------------------------------------------ assignment

    def assign(self, partitions: list[TopicPartition]) -> None:
        """Consume exactly these partitions; each starts at its offset, else the committed one, else auto.offset.reset."""
        self._check_open()
        membership = self._membership
        if membership is not None and membership.active and membership.in_assign_callback:
            self._assign_in_callback(partitions)
            return
        self._check_not_subscribed("assign")
        with self._fetcher.lock:
            for key in list(self._fetcher.states):
                self._fetcher.remove_locked(*key)
            self._drop_buffered(None)
            for topic_partition in partitions:
                self._add_locked(topic_partition)
            self._fetcher.wake_locked()

    def _assign_in_callback(self, partitions: list[TopicPartition]) -> None:
        """assign() from on_assign, as under confluent-kafka's eager protocol: the partitions start at the offsets given.

        The group decides the assignment; partitions given here start at their offset (else
        the committed one), those already fetched are repositioned when an offset is given.
        """
        with self._fetcher.lock:
            for topic_partition in partitions:
                key = (topic_partition.topic, topic_partition.partition)
                if key not in self._fetcher.states:
                    self._add_locked(topic_partition)
                elif topic_partition.offset not in (OFFSET_INVALID, OFFSET_STORED):
                    self._fetcher.remove_locked(*key)
                    self._add_locked(topic_partition)
            self._fetcher.wake_locked()

    def unassign(self) -> None:
        """Stop consuming every partition (manual assignment).

        Inside on_revoke / on_lost (confluent-kafka's eager protocol calls it there) it is
        accepted and changes nothing more: the group gives the callback's partitions up when
        the callback returns, and keeps the others.
        """
        self._check_open()
        membership = self._membership
        if membership is not None and membership.active and membership.in_assign_callback:
            return
        self._check_not_subscribed("unassign")
        self.assign([])

    def incremental_assign(self, partitions: list[TopicPartition]) -> None:
        """Add partitions to the assignment; each starts at its offset, else the committed one, else auto.offset.reset.

        Raises KafkaException _CONFLICT when one is assigned already (nothing is added then), as librdkafka.
        """
        self._check_open()
        with self._fetcher.lock:
            already = [tp for tp in partitions if (tp.topic, tp.partition) in self._fetcher.states]
            if already:
                named = ", ".join(f"{tp.topic} [{tp.partition}]" for tp in already)
                raise KafkaException(KafkaError(KafkaError._CONFLICT, f"incremental_assign(): {named} already assigned"))
            for topic_partition in partitions:
                self._add_locked(topic_partition)
            self._fetcher.wake_locked()

    def incremental_unassign(self, partitions: list[TopicPartition]) -> None:
        """Remove partitions from the assignment; raises KafkaException _INVALID_ARG when one is not assigned (nothing is removed then)."""
        self._check_open()
        with self._fetcher.lock:
            missing = [tp for tp in partitions if (tp.topic, tp.partition) not in self._fetcher.states]
            if missing:
                raise invalid_argument(f"incremental_unassign(): {', '.join(f'{tp.topic} [{tp.partition}]' for tp in missing)} not assigned")
        dropped = self._drop_partitions([(tp.topic, tp.partition) for tp in partitions])
        if self._membership is not None:
            self._membership.unassigned(dropped)

    def _add_locked(self, topic_partition: TopicPartition) -> None:
        offset = topic_partition.offset
        self._fetcher.add_locked(
            topic_partition.topic,
            topic_partition.partition,
            OFFSET_STORED if offset in (OFFSET_INVALID, OFFSET_STORED) else offset,
            self._partition_max_bytes,
        )

    def _drop_partitions(self, keys: list[tuple[str, int]]) -> dict[tuple[str, int], int]:
        """Stop fetching ``keys`` and forget what was prefetched; their stored offsets ({(topic, partition): offset})."""
        stored = {}
        with self._fetcher.lock:
            for key in keys:
                state = self._fetcher.remove_locked(*key)
                if state is None:
                    continue
                if state.stored_offset is not None:
                    stored[key] = state.stored_offset
                self._drop_buffered(state)
        with self._commit_lock:
            for key in keys:
                self._last_committed.pop(key, None)
        return stored

    def _check_not_subscribed(self, method: str) -> None:
        if self._membership is not None and self._membership.active:
            raise KafkaException(
                KafkaError(
                    KafkaError._STATE,
                    f"Local: Erroneous state: {method}() while subscribed: the group's assignment changes incrementally; "
                    "use incremental_assign() / incremental_unassign(), or unsubscribe() first",
                )
            )

    # ------------------------------------------------------------------ group subscription

    def subscribe(self, topics: list[str], on_assign: Callback | None = None, on_revoke: Callback | None = None, on_lost: Callback | None = None) -> None:
        """Join ``group.id`` consuming ``topics`` (a name starting with ``^`` is a regular expression).

        Calling it again replaces the subscription (and the callbacks). Raises KafkaException
        _INVALID_ARG without group.id or with a bad topic list, _STATE after assign().
        """
        self._check_open()
        if not self._group_id:
            raise invalid_argument('subscribe() needs "group.id" to be configured')
        subscription = parse_subscription(topics, on_assign, on_revoke, on_lost)
        subscribed = self._membership is not None and self._membership.active
        if not subscribed:
            with self._fetcher.lock:
                manual = bool(self._fetcher.states)
            if manual:
                raise KafkaException(KafkaError(KafkaError._STATE, "Local: Erroneous state: subscribe() after assign(): call unassign() first"))
        if self._membership is None:
            self._membership = GroupMembership(
                self._cluster, self._coordinators, self._config, owner=_ConsumerPartitions(self), application=self, wake_application=self._wake_application
            )
        self._membership.subscribe(subscription)
        self._next_topic_check = 0.0  # the next poll() reports subscribed topics that do not exist

    def unsubscribe(self) -> None:
        """Revoke every partition (on_revoke, commit with enable.auto.commit) and leave the group."""
        self._check_open()
        if self._membership is not None:
            self._membership.unsubscribe(min(self._request_timeout, _LEAVE_TIMEOUT))

    def memberid(self) -> str | None:
        """This consumer's member id in its group (None before it joined), as confluent-kafka's memberid()."""
        self._check_open()
        membership = self._membership
        return membership.member_id or None if membership is not None else None

    def consumer_group_metadata(self) -> ConsumerGroupMetadata:
        """This consumer's group membership for ``Producer.send_offsets_to_transaction()`` (KIP-447), as confluent-kafka's.

        Raises KafkaException _INVALID_ARG without a group.id (there is no group to commit to).
        """
        self._check_open()
        if not self._group_id:
            raise invalid_argument('consumer group metadata is not available: "group.id" is not set')
        member_id, epoch = self._membership.commit_identity() if self._membership is not None else ("", -1)
        return ConsumerGroupMetadata(self._group_id, epoch, member_id, self._config["group.instance.id"] or None)

    def _wake_application(self) -> None:
        # Called by the heartbeat thread: a poll() waiting for data has group work to do.
        with self._fetcher.lock:
            self._fetcher.data_ready.notify_all()

    def _serve_group(self) -> list[Message]:
        """Rebalance callbacks due now; group errors as error events."""
        membership = self._membership
        if membership is None:
            return []
        errors = membership.serve()
        return [Message(None, None, error=error) for error in errors]

    def assignment(self) -> list[TopicPartition]:
        self._check_open()
        with self._fetcher.lock:
            return [TopicPartition(state.topic, state.partition) for state in self._fetcher.states.values()]

    def seek(self, partition: TopicPartition) -> None:
        """Continue ``partition`` at its offset (absolute or OFFSET_BEGINNING / OFFSET_END / OFFSET_STORED)."""
        self._check_open()
        with self._fetcher.lock:
            state = self._state(partition)
            state.seek(partition.offset)
            self._drop_buffered(state)
            self._fetcher.wake_locked()

    def pause(self, partitions: list[TopicPartition]) -> None:
        """Stop fetching these partitions; what was prefetched is dropped and fetched again on resume()."""
        self._check_open()
        with self._fetcher.lock:
            for partition in partitions:
                state = self._state(partition)
                state.paused = True
                if state.position is not None:
                    state.seek(state.position)
                self._drop_buffered(state)

    def resume(self, partitions: list[TopicPartition]) -> None:
        self._check_open()
        with self._fetcher.lock:
            for partition in partitions:
                self._state(partition).paused = False
            self._fetcher.wake_locked()

    def _state(self, partition: TopicPartition) -> PartitionState:
        state = self._fetcher.states.get((partition.topic, partition.partition))
        if state is None:
            raise KafkaException(KafkaError(KafkaError._STATE, f"Local: Erroneous state: {partition.topic} [{partition.partition}] is not assigned"))
        return state

    def _drop_buffered(self, state: PartitionState | None) -> None:
        """Forget prefetched data of ``state`` (every partition when None). Lock held."""
        kept = []
        for chunk in self._fetcher.chunks:
            if state is None or chunk.state is state:
                self._fetcher.consumed(chunk)
            else:
                kept.append(chunk)
        self._fetcher.chunks.clear()
        self._fetcher.chunks.extend(kept)
        if state is None or (self._decoded_chunk is not None and self._decoded_chunk.state is state):
            self._decoded = []
            self._decoded_index = 0
            self._decoded_chunk = None

    # ------------------------------------------------------------------ reading

    def poll(self, timeout: float | None = None) -> Message | None:
        """The next message or event, waiting up to ``timeout`` seconds (None or < 0: forever)."""
        messages = self.consume(1, -1 if timeout is None else timeout)
        return messages[0] if messages else None

    def consume(self, num_messages: int = 1, timeout: float = -1) -> list[Message]:
        """Up to ``num_messages`` messages and events, as librdkafka's batch consume: returns when
        ``num_messages`` are there or ``timeout`` seconds (-1: forever) have passed, or earlier when
        the group needs this thread (rebalance callbacks are served at the next call).

        To take whatever is there once a first message arrived, see :func:`consume_available`.
        """
        self._check_open()
        if num_messages < 0 or num_messages > 1_000_000:
            raise ValueError("num_messages must be between 0 and 1000000")
        membership = self._membership
        if membership is None:
            return self._consume(num_messages, timeout, [])
        membership.polling = True
        try:
            return self._consume(num_messages, timeout, self._unknown_topic_errors(membership) + self._serve_group())
        finally:
            membership.polled()

    def _unknown_topic_errors(self, membership: GroupMembership) -> list[Message]:
        """UNKNOWN_TOPIC_OR_PART events for subscribed topics the brokers do not know, once per topic, as librdkafka reports them.

        Checked at the first poll() after subscribe(), then every _TOPIC_CHECK_INTERVAL while
        a subscribed topic is missing (a topic created meanwhile is reported again if deleted).
        """
        now = time.monotonic()
        if now < self._next_topic_check:
            return []
        names = membership.subscribed_names
        if not names:
            return []
        self._next_topic_check = now + _TOPIC_CHECK_INTERVAL
        try:
            self._cluster.refresh(names, timeout=self._request_timeout, retry=False, allow_auto_topic_creation=self._config["allow.auto.create.topics"])
        except KafkaException:
            return []  # brokers unreachable: error_cb reports that elsewhere
        events = []
        for name in names:
            info = self._cluster.topics.get(name)
            if info is None or info.error_code != ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
                self._reported_unknown.discard(name)
                continue
            if name not in self._reported_unknown:
                self._reported_unknown.add(name)
                error = KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Subscribed topic not available: {name}: Broker: Unknown topic or partition")
                events.append(Message(name, -1, (OFFSET_INVALID, -1, None, None, ()), 0, error))
        if not self._reported_unknown:
            self._next_topic_check = float("inf") if all(name in self._cluster.topics for name in names) else self._next_topic_check
        return events

    def _consume(self, num_messages: int, timeout: float | None, out: list[Message]) -> list[Message]:
        """consume() after the group's callbacks ran; ``out`` holds the group's error events."""
        self._serve_callbacks()
        deadline = None if timeout is None or timeout < 0 else time.monotonic() + timeout
        while len(out) < num_messages:
            if self._decoded_index < len(self._decoded):
                self._take_decoded(out, num_messages - len(out))
                continue
            chunk = self._next_chunk(self._stats_wait(deadline))
            if chunk is None:
                if self._serve_statistics() and (deadline is None or time.monotonic() < deadline):
                    continue  # statistics were due during the wait: keep waiting to fill the batch
                membership = self._membership
                if not out and membership is not None and membership.needs_service and (deadline is None or time.monotonic() < deadline):
                    out += self._serve_group()  # the group changed while this poll() waited
                    continue
                break
            if chunk.error is not None:
                out.append(Message(chunk.state.topic, chunk.state.partition, (chunk.min_offset, -1, None, None, ()), 0, chunk.error))
                continue
            self._decode(chunk)
        if self._auto_commit and time.monotonic() >= self._next_auto_commit:
            self._next_auto_commit = time.monotonic() + self._auto_commit_interval
            self._commit_stored(asynchronous=True, only_changed=True)
        return out

    def _stats_wait(self, deadline: float | None) -> float | None:
        """``deadline``, or sooner when statistics fall due before it (poll() serves stats_cb while it waits)."""
        left = self._stats_timer.seconds_left()
        if left is None:
            return deadline
        due = time.monotonic() + left
        return due if deadline is None else min(deadline, due)

    def _next_chunk(self, deadline: float | None) -> FetchedChunk | None:
        """The next prefetched chunk of a partition still assigned, waiting until ``deadline``.

        None at the deadline, or as soon as the group membership has work for this thread.
        """
        fetcher = self._fetcher
        membership = self._membership
        with fetcher.lock:
            for _ in range(1_000_000):  # ends at the deadline, or when a chunk or group work is there
                while not fetcher.chunks:
                    if membership is not None and membership.needs_service:
                        return None
                    remaining = None if deadline is None else deadline - time.monotonic()
                    if remaining is not None and remaining <= 0:
                        return None
                    fetcher.data_ready.wait(remaining if remaining is not None else 0.5)
                chunk = fetcher.chunks.popleft()
                fetcher.consumed(chunk)
                state = chunk.state
                if fetcher.states.get((state.topic, state.partition)) is state and state.generation == chunk.generation:
                    return chunk
                # Fetched for a partition unassigned (or seeked) since: not wanted any more.
            return None

    def _decode(self, chunk: FetchedChunk) -> None:
        """Decode a chunk's batches into Messages; records below its fetch offset are skipped."""
        state = chunk.state
        topic = state.topic
        partition = state.partition
        min_offset = chunk.min_offset
        records = chunk.records
        messages: list[Message] = []
        # Decoding allocates two objects per record (its tuple and its Message) and creates no
        # reference cycles, so the cyclic collector, which would otherwise run every 700
        # allocations and now and then walk the whole heap, cannot find garbage here. It is
        # paused for this one chunk (measured: 25% of consume time) and restored exactly as
        # found, so an application that disabled it keeps it disabled.
        collector_was_enabled = gc.isenabled()
        if collector_was_enabled:
            gc.disable()
        try:
            # At read_committed the batches of aborted transactions are left out (and markers).
            batches = committed_batches(records, chunk.aborted) if chunk.aborted else iter_batch_positions(records)
            for position, header in batches:
                if header.attributes & CONTROL_FLAG_MASK or header.base_offset + header.last_offset_delta < min_offset:
                    continue
                epoch = header.partition_leader_epoch if header.partition_leader_epoch >= 0 else None
                try:
                    # One C call per batch: records straight to Messages (weir.message.decode_messages).
                    messages += decode_messages(batch_records_bytes(records, position, header), header, min_offset, topic, partition, epoch)
                except RecordFormatError as error:
                    # A batch stored before brokers validated records, or a flipped bit: the
                    # records before it are delivered, then this error, and nothing after it
                    # until the application seeks past it (see _take_decoded).
                    messages.append(bad_batch_message(topic, partition, header, min_offset, error))
                    break
        finally:
            if collector_was_enabled:
                gc.enable()
        self._decoded = messages
        self._fetcher.counters.consumed(topic, partition, len(messages), len(records))  # librdkafka's rxmsgs / rxbytes
        self._decoded_index = 0
        self._decoded_chunk = chunk
        if not messages:
            # Only transaction markers or aborted transactions: nothing to return, but the
            # position moves past them (as librdkafka's does), so that lag and commits do not
            # stop short of a partition's end.
            with self._fetcher.lock:
                if state.generation == chunk.generation and self._fetcher.states.get((topic, partition)) is state:
                    self._advance_position_locked(state, chunk.next_offset)

    def _take_decoded(self, out: list[Message], wanted: int) -> None:
        chunk = self._decoded_chunk
        start = self._decoded_index
        end = min(start + wanted, len(self._decoded))
        taken = self._decoded[start:end]
        self._decoded_index = end
        with self._fetcher.lock:
            state = chunk.state if chunk is not None else None
            if chunk is None or state is None or state.generation != chunk.generation or self._fetcher.states.get((state.topic, state.partition)) is not state:
                return  # seeked or unassigned since: these records are not wanted any more
            last = taken[-1]
            last_offset = last.offset()
            assert last_offset is not None  # every decoded record, and every batch that cannot be decoded, has its offset
            if last.error() is None:
                next_position = last_offset + 1
                if end == len(self._decoded):
                    next_position = max(next_position, chunk.next_offset)  # past trailing markers or aborted batches
            else:
                # A batch that cannot be decoded: the position stays on it and it is fetched
                # again, so that every poll() returns this error until the application seeks
                # past the batch (as librdkafka does with _BAD_MSG).
                next_position = last_offset
                self._fetcher.refetch_locked(state, next_position)
            self._advance_position_locked(state, next_position)
        out.extend(taken)

    def _advance_position_locked(self, state: PartitionState, next_position: int) -> None:
        state.position = next_position
        if self._auto_store:
            state.stored_offset = next_position

    # ------------------------------------------------------------------ positions and offsets

    def position(self, partitions: list[TopicPartition]) -> list[TopicPartition]:
        """The offset of the next message poll() returns for each partition (OFFSET_INVALID when not known yet)."""
        self._check_open()
        with self._fetcher.lock:
            result = []
            for partition in partitions:
                state = self._fetcher.states.get((partition.topic, partition.partition))
                offset = state.position if state is not None and state.position is not None else OFFSET_INVALID
                result.append(TopicPartition(partition.topic, partition.partition, offset))
            return result

    def store_offsets(self, message: Message | None = None, offsets: list[TopicPartition] | None = None) -> None:
        """Remember offsets for the next commit: message.offset()+1, or each TopicPartition's offset as given."""
        self._check_open()
        if (message is None) == (offsets is None):
            raise invalid_argument("store_offsets() takes exactly one of message and offsets")
        if self._auto_store:
            raise invalid_argument('store_offsets() requires "enable.auto.offset.store" to be false (every returned message is stored already)')
        pairs = [_next_offset_of(message, "store_offsets()")] if message is not None else [(tp.topic, tp.partition, tp.offset) for tp in offsets or []]
        with self._fetcher.lock:
            for topic, partition, offset in pairs:
                state = self._fetcher.states.get((topic, partition))
                if state is None:
                    raise KafkaException(KafkaError(KafkaError._STATE, f"Local: Erroneous state: {topic} [{partition}] is not assigned"))
                state.stored_offset = offset

    def commit(self, message: Message | None = None, offsets: list[TopicPartition] | None = None, asynchronous: bool = True) -> list[TopicPartition] | None:
        """Commit offsets for group.id: message.offset()+1, the given offsets, or every stored offset.

        Synchronous commits return the committed TopicPartitions (``error`` set on those that
        failed) and raise KafkaException when the whole request fails; asynchronous ones
        return None and report to on_commit from a later poll().
        """
        self._check_open()
        if message is not None and offsets is not None:
            raise invalid_argument("commit() takes message or offsets, not both")
        if message is not None:
            partitions = [TopicPartition(*_next_offset_of(message, "commit()"))]
        elif offsets is not None:
            partitions = list(offsets)
        else:
            return self._commit_stored(asynchronous, only_changed=False)
        return self._commit(partitions, asynchronous)

    def _commit_stored(self, asynchronous: bool, only_changed: bool) -> list[TopicPartition] | None:
        with self._fetcher.lock:
            partitions = [
                TopicPartition(state.topic, state.partition, state.stored_offset) for state in self._fetcher.states.values() if state.stored_offset is not None
            ]
        if only_changed:
            with self._commit_lock:
                last = dict(self._last_committed)
            partitions = [tp for tp in partitions if last.get((tp.topic, tp.partition)) != tp.offset]
        if not partitions:
            if only_changed:
                return None
            error = KafkaError(KafkaError._NO_OFFSET, "Local: No offset stored")
            if not asynchronous:
                raise KafkaException(error)
            # As librdkafka: an asynchronous commit of nothing returns, and on_commit gets _NO_OFFSET.
            with self._fetcher.lock:
                assigned = [TopicPartition(topic, partition, OFFSET_INVALID) for topic, partition in self._fetcher.states]
            with self._commit_lock:
                self._commit_results.append((error, assigned))
            return None
        return self._commit(partitions, asynchronous)

    def _commit(self, partitions: list[TopicPartition], asynchronous: bool) -> list[TopicPartition] | None:
        group_id = self._group_id
        if not group_id:
            raise invalid_argument('commit needs "group.id" to be configured')
        by_topic: dict[str, list[broker_pb2.OffsetCommitPartition]] = {}
        for tp in partitions:
            if tp.offset < 0:
                raise invalid_argument(f"cannot commit offset {tp.offset} for {tp.topic} [{tp.partition}]: it is not an absolute offset")
            if tp.metadata is not None and "\x00" in tp.metadata:
                raise ValueError(f"commit metadata of {tp.topic} [{tp.partition}] has an embedded null character")
            by_topic.setdefault(tp.topic, []).append(
                broker_pb2.OffsetCommitPartition(
                    partition=tp.partition,
                    committed_offset=tp.offset,
                    committed_leader_epoch=tp.leader_epoch if tp.leader_epoch is not None else -1,
                    metadata=encode_commit_metadata(tp.metadata),
                )
            )
        # A subscribed member commits as itself (member id and epoch); otherwise without a member.
        member_id, epoch = self._membership.commit_identity() if self._membership is not None else ("", -1)
        request = broker_pb2.OffsetCommitRequest(
            group_id=group_id,
            generation_id=epoch,
            member_id=member_id,
            topics=[broker_pb2.OffsetCommitTopic(topic=topic, partitions=items) for topic, items in by_topic.items()],
        )
        if not asynchronous:
            return self._commit_answered(partitions, self._commit_sync(request))
        address = self._coordinators.address(group_id, timeout=self._request_timeout)
        future = self._cluster.stub(address).OffsetCommit.future(request, timeout=self._request_timeout, metadata=self._cluster.call_metadata)
        future.add_done_callback(lambda done: self._commit_finished(group_id, partitions, address, done))
        return None

    def _commit_sync(self, request: broker_pb2.OffsetCommitRequest) -> broker_pb2.OffsetCommitResponse:
        """Send a commit, within request.timeout.ms; after STALE_MEMBER_EPOCH again with the member's new epoch."""
        deadline = time.monotonic() + self._request_timeout
        membership = self._membership
        for _ in range(100):  # each round waits for a new epoch; the deadline ends it long before
            response: broker_pb2.OffsetCommitResponse = self._coordinators.call(
                request.group_id, "OffsetCommit", request, timeout=max(deadline - time.monotonic(), 0.001)
            )
            stale = response.error_code == _STALE_EPOCH or any(
                partition.error_code == _STALE_EPOCH for topic in response.topics for partition in topic.partitions
            )
            remaining = deadline - time.monotonic()
            if membership is None or request.generation_id < 0 or not stale or remaining <= 0:
                return response
            membership.wait_for_new_epoch(request.generation_id, remaining)
            member_id, epoch = membership.commit_identity()
            if epoch < 0 or epoch == request.generation_id:
                return response  # no newer epoch (the member left or lost its partitions meanwhile)
            request.member_id = member_id
            request.generation_id = epoch
        return response

    def _commit_answered(self, partitions: list[TopicPartition], response: broker_pb2.OffsetCommitResponse) -> list[TopicPartition]:
        if response.error_code:
            raise KafkaException(KafkaError(response.error_code, response.error_message or None))
        errors = {
            (topic.topic, partition.partition): KafkaError(partition.error_code, partition.error_message or None)
            for topic in response.topics
            for partition in topic.partitions
            if partition.error_code
        }
        committed = {}
        for tp in partitions:
            tp.error = errors.get((tp.topic, tp.partition))
            if tp.error is None:
                committed[(tp.topic, tp.partition)] = tp.offset
        with self._commit_lock:
            self._last_committed.update(committed)
        return partitions

    def _commit_finished(self, group_id: str, partitions: list[TopicPartition], address: str, future: grpc.Future) -> None:
        # Runs on a gRPC thread; the result reaches on_commit from the next poll().
        error: KafkaError | None = None
        try:
            self._commit_answered(partitions, future.result())
        except grpc.RpcError as rpc_error:
            error = error_from_rpc(rpc_error, f"OffsetCommit to {address}")
        except KafkaException as exception:
            error = exception.error
        failures = [error] if error is not None else [tp.error for tp in partitions if tp.error is not None]
        if any(failure.retriable() or failure.code() in COORDINATOR_MOVED for failure in failures):
            self._coordinators.forget(group_id, address)
        with self._commit_lock:
            self._commit_results.append((error, partitions))

    def _serve_callbacks(self) -> None:
        with self._commit_lock:
            results, self._commit_results = self._commit_results, []
        if self._commit_callback is not None:
            for error, partitions in results:
                self._commit_callback(error, partitions)
        errors = self._fetcher.take_errors()
        if self._error_callback is not None:
            for error in errors:
                self._error_callback(error)
        throttles: list[tuple[str, int]] = []
        if self._fetcher.throttles:  # read without the lock first: poll() must stay cheap
            with self._fetcher.lock:
                throttles = list(self._fetcher.throttles)
                self._fetcher.throttles.clear()
        if throttles and self._throttle_callback is not None:
            brokers = self._cluster.broker_addresses()
            for address, throttle_ms in throttles:
                node_id = next((node for node, known in brokers.items() if known == address), -1)
                self._throttle_callback(ThrottleEvent(address, node_id, throttle_ms / 1000.0))
        self._serve_statistics()

    def _serve_statistics(self) -> bool:
        """stats_cb with the consumer's statistics when they are due; whether it ran."""
        if self._stats_callback is None or not self._stats_timer.take_due():
            return False
        self._stats_callback(statistics_json(self._statistics_source(), self._fetcher.counters))
        return True

    def _statistics_source(self) -> StatisticsSource:
        now = time.monotonic()
        topics = dict(self._cluster.topics)
        with self._commit_lock:
            last_committed = dict(self._last_committed)
        extras: dict[tuple[str, int], dict[str, Any]] = {}
        with self._fetcher.lock:
            for key, state in self._fetcher.states.items():
                position = state.position if state.position is not None else -1
                extras[key] = {
                    "fetch_state": "paused" if state.paused else ("active" if state.fetch_position is not None else "offset-query"),
                    "next_offset": position,
                    "app_offset": position,
                    "stored_offset": state.stored_offset if state.stored_offset is not None else -1001,
                    "committed_offset": last_committed.get(key, -1001),
                    "hi_offset": state.high_watermark,
                    "lo_offset": state.log_start_offset,
                    "consumer_lag": state.high_watermark - position if position >= 0 and state.high_watermark >= 0 else -1,
                }
        membership = self._membership
        cgrp = None
        if membership is not None:
            cgrp = {"state": "up" if membership.active else "init", "join_state": "steady" if membership.active else "init", "assignment_size": len(extras)}
        return StatisticsSource(
            name=self._config.log.name,
            client_id=self._config["client.id"],
            kind="consumer",
            started=self._started,
            brokers=self._cluster.broker_addresses(),
            leaders={name: info.leaders for name, info in topics.items() if not info.error_code},
            metadata_ages={name: now - info.fetched_at for name, info in topics.items()},
            partition_extras=extras,
            cgrp=cgrp,
        )

    def committed(self, partitions: list[TopicPartition], timeout: float | None = None) -> list[TopicPartition]:
        """The group's committed offsets (OFFSET_INVALID where none)."""
        self._check_open()
        if not self._group_id:
            raise invalid_argument('committed() needs "group.id" to be configured')
        committed = self._fetcher.fetch_committed_entries([(tp.topic, tp.partition) for tp in partitions], self._timeout(timeout))
        result = []
        for tp in partitions:
            offset, metadata, leader_epoch = committed.get((tp.topic, tp.partition), (-1, "", -1))
            found = TopicPartition(
                tp.topic, tp.partition, offset if offset >= 0 else OFFSET_INVALID, decode_commit_metadata(metadata), leader_epoch if leader_epoch >= 0 else None
            )
            result.append(found)
        return result

    @overload
    def get_watermark_offsets(self, partition: TopicPartition, timeout: float | None = None, cached: Literal[False] = False) -> tuple[int, int]: ...

    @overload
    def get_watermark_offsets(self, partition: TopicPartition, timeout: float | None = None, cached: bool = False) -> tuple[int, int] | None: ...

    def get_watermark_offsets(self, partition: TopicPartition, timeout: float | None = None, cached: bool = False) -> tuple[int, int] | None:
        """(low, high) offsets of ``partition``: from the last fetch when ``cached``, else asked of its leader."""
        self._check_open()
        if cached:
            with self._fetcher.lock:
                state = self._fetcher.states.get((partition.topic, partition.partition))
                if state is None or state.high_watermark < 0:
                    return None
                return state.log_start_offset, state.high_watermark
        requests = [(partition.topic, partition.partition, -2), (partition.topic, partition.partition, -1)]
        low = self._list_offset(*requests[0], timeout)
        high = self._list_offset(*requests[1], timeout)
        return low, high

    def _list_offset(self, topic: str, partition: int, timestamp: int, timeout: float | None) -> int:
        code, message, offset, _ = self._fetcher.list_offsets([(topic, partition, timestamp)], self._timeout(timeout))[(topic, partition)]
        if code:
            raise KafkaException(KafkaError(code, message or None))
        return offset

    def offsets_for_times(self, partitions: list[TopicPartition], timeout: float | None = None) -> list[TopicPartition]:
        """For each partition, the earliest offset whose timestamp is >= the given one (passed as ``offset``); -1 past the end."""
        self._check_open()
        results = self._fetcher.list_offsets([(tp.topic, tp.partition, tp.offset) for tp in partitions], self._timeout(timeout))
        out = []
        for tp in partitions:
            code, message, offset, _ = results[(tp.topic, tp.partition)]
            result = TopicPartition(tp.topic, tp.partition, offset if not code else OFFSET_INVALID)
            if code:
                result.error = KafkaError(code, message or None)
            out.append(result)
        return out

    def _timeout(self, timeout: float | None) -> float:
        return self._request_timeout if timeout is None or timeout < 0 else timeout

    def list_topics(self, topic: str | None = None, timeout: float = -1) -> ClusterMetadata:
        self._check_open()
        return self._cluster.list_topics(topic, timeout)

    # ------------------------------------------------------------------ closing

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("Consumer closed")

    def close(self) -> None:
        """Leave the group (after on_revoke and, with enable.auto.commit, a last commit), stop fetching and close connections."""
        if self._closed:
            return
        try:
            if self._membership is not None:
                self._membership.shutdown(leave_timeout=min(self._request_timeout, _LEAVE_TIMEOUT), thread_timeout=1.0)
            if self._auto_commit:
                try:
                    self._commit_stored(asynchronous=False, only_changed=True)
                except KafkaException as error:
                    if self._error_callback is not None:
                        self._error_callback(error.error)
        finally:
            self._closed = True
            self._fetcher.stop()
            self._cluster.close()

    def __enter__(self) -> Consumer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class _ConsumerPartitions:
    """The consumer's fetching and commits, as its :class:`~weir.group_membership.GroupMembership` asks for them (a PartitionOwner)."""

    def __init__(self, consumer: Consumer) -> None:
        self._consumer = consumer

    def start_fetching(self, partitions: list[TopicPartition]) -> None:
        consumer = self._consumer
        with consumer._fetcher.lock:
            for tp in partitions:
                if (tp.topic, tp.partition) not in consumer._fetcher.states:
                    consumer._add_locked(tp)
            consumer._fetcher.wake_locked()

    def stop_fetching(self, partitions: list[TopicPartition]) -> dict[Partition, int]:
        return self._consumer._drop_partitions([(tp.topic, tp.partition) for tp in partitions])

    def commit_offsets(self, offsets: list[TopicPartition]) -> None:
        self._consumer._commit(offsets, asynchronous=False)


def _next_offset_of(message: Message, what: str) -> tuple[str, int, int]:
    """(topic, partition, offset + 1) of a consumed message: the offset to commit after it."""
    topic, partition, offset = message.topic(), message.partition(), message.offset()
    error = message.error()
    if error is not None:
        # confluent-kafka's words: an error event has no offset to commit or store.
        raise KafkaException(KafkaError(KafkaError._INVALID_ARG, f"Cannot commit offsets for message with error: '{error.str()}'"))
    if topic is None or partition is None or offset is None:
        raise TypeError(f"{what}: {message!r} has no topic, partition and offset (an error event is not a record)")
    return topic, partition, offset + 1


def consume_available(consumer: Consumer, num_messages: int, timeout: float) -> list[Message]:
    """Up to ``num_messages``: waits up to ``timeout`` seconds for the first, then takes only what is already there.

    consume() waits to fill its batch (as librdkafka's); readers that process whatever has
    arrived (a scan up to an offset, a tail) use this instead of waiting out ``timeout``.
    """
    first = consumer.consume(1, timeout)
    if not first or num_messages <= 1:
        return first
    return first + consumer.consume(num_messages - 1, 0)

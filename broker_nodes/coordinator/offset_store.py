"""Committed consumer offsets, stored as records of the compacted internal topic ``__consumer_offsets``.

A group's commits go to partition ``Utils.abs(groupId.hashCode()) % N`` of the topic, one
record per committed partition with Kafka's key and value schemas (see ``log_formats.offset_commit_records``),
so the topic is the durable truth and compaction keeps only the latest commit per key.

The coordinator of a group is the leader of the group's partition, as in Kafka. This broker
serves commits and fetches only for the partitions it leads, each from an in-memory cache
(:class:`OffsetsPartition`) loaded from the partition's log when the leadership begins; a
group of another partition is answered NOT_COORDINATOR, one of a partition still loading
COORDINATOR_LOAD_IN_PROGRESS. A standalone broker leads every partition and loads them all at
startup; a managed broker follows the cluster map (:meth:`OffsetStore.follow_leadership`)
and loads a newly led partition on a background thread. A commit is appended on the leader
and, when the partition has followers, answered once every in-sync replica has it (acks=all,
bounded by request.timeout.ms), so an acknowledged commit survives the loss of the leader.

The same partitions hold the records of consumer groups (``groups.records``): loading a
partition rebuilds its groups too, and the group coordinator (``groups.coordinator``) writes
their changes through :meth:`OffsetStore.write_records`, the same acks=all path as commits.
A commit is checked against its group (``ConsumerGroup.check_commit``) under the group's
lock: a member commits with its current member epoch and only partitions it owns; a commit
without a member id (an admin or ``assign()``-style commit) only while the group has no
members.

Transactional commits (TxnOffsetCommit, KIP-447) are appended as a *transactional* batch of
the producer's id and epoch (:meth:`OffsetStore.commit_transactional`), so the partition's
producer state, last stable offset and markers treat them like any transactional batch. They
stay pending in the partition's state until the transaction's marker lands here: the
transaction coordinator's marker path calls :meth:`OffsetStore.transaction_completed`
(COMMIT: they become the committed offsets; ABORT: they are dropped), and loading replays the
transactional batches and markers of the log the same way.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass

from broker_nodes import names
from broker_nodes.clock import Clock
from broker_nodes.cluster_state import NotLeaderOrFollowerError
from broker_nodes.coordinator.groups import classic_records
from broker_nodes.coordinator.groups.group import check_commit_without_group
from broker_nodes.coordinator.groups.records import GROUP_RECORD_KEY_VERSIONS, GroupRecordError, key_version
from broker_nodes.coordinator.groups.records import decode as decode_group_record
from broker_nodes.coordinator.offsets_partition import OffsetsPartition, TopicPartition
from broker_nodes.coordinator.partition_leadership import PartitionLeadership
from broker_nodes.replica_manager import ACKS_ALL, ReplicaManager
from broker_nodes.replication.errors import ReplicationWaitersFullError
from broker_nodes.storage.log import AppendInfo
from broker_nodes.storage.producer_state import SEQUENCE_MODULUS
from broker_nodes.topic_registry import TopicRegistry, UnknownTopicOrPartitionError
from log_formats.control_records import read_marker_batch
from log_formats.offset_commit_records import (
    GROUP_METADATA_KEY_VERSION,
    OffsetAndMetadata,
    OffsetCommitKey,
    OffsetSchemaError,
    decode_key,
    decode_offset_commit_value,
    encode_offset_commit_key,
    encode_offset_commit_value,
    partition_for_group,
)
from weir.records import RecordBatchBuilder, RecordFormatError, batch_records_bytes, decode_records, iter_batch_positions

logger = logging.getLogger(__name__)

OFFSETS_TOPIC = "__consumer_offsets"  # Kafka's name for the internal topic of committed offsets


class OffsetStoreError(Exception):
    retriable = False


class InvalidGroupIdError(OffsetStoreError):
    def __init__(self, group_id: str) -> None:
        super().__init__(f"group id {group_id!r} is invalid: it must not be empty")
        self.group_id = group_id


class InvalidCommitOffsetError(OffsetStoreError):
    def __init__(self, topic: str, partition: int, offset: int) -> None:
        super().__init__(f"committed offset {offset} for partition {partition} of topic {topic!r} is negative")
        self.topic = topic
        self.partition = partition
        self.offset = offset


class OffsetMetadataTooLargeError(OffsetStoreError):
    def __init__(self, size: int, limit: int) -> None:
        super().__init__(f"offset metadata of {size} bytes exceeds offset.metadata.max.bytes {limit}")
        self.size = size
        self.limit = limit


class CoordinatorLoadingError(OffsetStoreError):
    """The group's offsets partition is led here but still being loaded (COORDINATOR_LOAD_IN_PROGRESS)."""

    retriable = True

    def __init__(self, group_id: str, partition: int) -> None:
        super().__init__(
            f"committed offsets of group {names.plain(group_id)!r} are still being loaded from partition {partition} of {OFFSETS_TOPIC}; try again shortly"
        )
        self.group_id = group_id
        self.partition = partition


class NotCoordinatorError(OffsetStoreError):
    """This broker does not lead the group's offsets partition (NOT_COORDINATOR): find the coordinator again."""

    retriable = True

    def __init__(self, group_id: str, partition: int) -> None:
        super().__init__(
            f"this broker is not the coordinator of group {names.plain(group_id)!r}: it does not lead partition {partition} of {OFFSETS_TOPIC}; find the coordinator again"
        )
        self.group_id = group_id
        self.partition = partition


class CoordinatorNotAvailableError(OffsetStoreError):
    """No broker can coordinate the group now (COORDINATOR_NOT_AVAILABLE): no offsets topic yet, or its partition has no leader."""

    retriable = True

    def __init__(self, group_id: str, reason: str) -> None:
        super().__init__(f"no coordinator is available for group {names.plain(group_id)!r}: {reason}")
        self.group_id = group_id
        self.reason = reason


class UnstableOffsetCommitError(OffsetStoreError):
    """An open transaction has committed an offset of the partition (UNSTABLE_OFFSET_COMMIT): asked for stable offsets, try again once it ends."""

    retriable = True

    def __init__(self, group_id: str, topic: str, partition: int) -> None:
        super().__init__(
            f"group {names.plain(group_id)!r} has an offset of partition {partition} of topic {topic!r} committed by a transaction still open; try again once it ends"
        )
        self.group_id = group_id
        self.topic = topic
        self.partition = partition


@dataclass(frozen=True, slots=True)
class OffsetCommitEntry:
    topic: str
    partition: int
    offset: int
    leader_epoch: int
    metadata: str


class OffsetStore(PartitionLeadership[OffsetsPartition]):
    """Committed offsets of the groups whose ``__consumer_offsets`` partition this broker leads.

    Lifecycle: standalone, :meth:`lead_every_partition` at startup; managed,
    :meth:`follow_leadership` with every cluster map; :meth:`shutdown` at the end (see
    ``partition_leadership``).

    Thread-safe. The led partitions are a dict of :class:`OffsetsPartition` changed under one
    lock and read without it (a dict read is atomic). Commits of one partition are appended
    in turn under that partition's lock and wait for replication outside it.
    """

    topic = OFFSETS_TOPIC
    coordinates = "its groups"

    def __init__(
        self,
        replica_manager: ReplicaManager,
        registry: TopicRegistry,
        clock: Clock,
        *,
        metadata_max_bytes: int,
        commit_timeout_ms: int,
        loader: Executor | None = None,
    ) -> None:
        # One thread loads newly led partitions one after another, as Kafka's group-metadata
        # loader does (injected so that tests decide when a load runs).
        super().__init__(
            replica_manager, registry, clock, loader if loader is not None else ThreadPoolExecutor(max_workers=1, thread_name_prefix="offsets-loader")
        )
        self._metadata_max_bytes = metadata_max_bytes
        self._commit_timeout_ms = commit_timeout_ms  # request.timeout.ms: how long a commit waits for the in-sync replicas

    def partition_for(self, group_id: str) -> int:
        """The offsets partition of a group; CoordinatorNotAvailableError while ``__consumer_offsets`` does not exist."""
        topic = self._registry.get(OFFSETS_TOPIC)
        if topic is None:
            raise CoordinatorNotAvailableError(group_id, f"{OFFSETS_TOPIC} does not exist yet")
        return partition_for_group(group_id, topic.partitions)

    # ------------------------------------------------------------------ leadership

    def _new_partition(self, partition: int, leader_epoch: int, topic_id: str) -> OffsetsPartition:
        return OffsetsPartition(partition, leader_epoch, topic_id)

    def _load(self, state: OffsetsPartition) -> int:
        """Replay the partition's log into ``state`` and activate it; stops early when the leadership ends."""
        loaded = self._replay_log(state, lambda data, min_offset: self._replay_batches(state, data, min_offset))
        with state.lock:
            if self._is_current(state):
                # Members may have been heartbeating to the previous coordinator: each gets a full session from now.
                state.groups.start_timers(self._clock.milliseconds())
                state.activate()
        return loaded

    def _replay_batches(self, state: OffsetsPartition, data: bytes, min_offset: int) -> int:
        """Replay the records of every batch in ``data`` from ``min_offset``; return how many.

        A batch whose records cannot be decoded (written before brokers validated records, or
        damaged on disk) is skipped with a warning naming partition and offsets, and the rest
        loads: failing the whole load would leave every group of the partition without a
        coordinator, and each new leadership would fail the same way.
        """
        replayed = 0
        for position, header in iter_batch_positions(data):
            if header.next_offset <= min_offset:
                continue
            try:
                if header.is_control:
                    if header.is_transactional:
                        state.replay_marker(header.producer_id, commit=read_marker_batch(data, position, header).commit)
                    continue
                decoded = decode_records(batch_records_bytes(data, position, header), header, min_offset)
            except RecordFormatError as error:
                logger.warning(
                    "%s-%d: skipping the batch at offsets %d..%d while loading committed offsets and groups: its records cannot be decoded (%s)",
                    OFFSETS_TOPIC,
                    state.partition,
                    header.base_offset,
                    header.last_offset,
                    error.reason,
                )
                continue
            producer_id = header.producer_id if header.is_transactional else None
            for offset, _, key, value, _ in decoded:
                replayed += 1
                self._replay(state, key, value, offset, producer_id)
        return replayed

    @staticmethod
    def _replay(state: OffsetsPartition, key: bytes | None, value: bytes | None, offset: int, producer_id: int | None = None) -> None:
        """Apply one record; ``producer_id`` names the transaction of a record of a transactional batch (a TxnOffsetCommit)."""
        if key is None:
            return
        try:
            version = key_version(bytes(key))
            if version in GROUP_RECORD_KEY_VERSIONS:
                state.groups.replay(decode_group_record(bytes(key), None if value is None else bytes(value)))
                return
            if version == GROUP_METADATA_KEY_VERSION:  # a classic group: the latest record wins, a tombstone deletes it
                group_id = classic_records.decode_key(bytes(key))
                if value is None:
                    state.classic_records.pop(group_id, None)
                else:
                    state.classic_records[group_id] = classic_records.decode_value(bytes(value))
                return
            commit_key = decode_key(bytes(key))
            if commit_key is None:
                return
            decoded = None if value is None else decode_offset_commit_value(bytes(value))
        except (OffsetSchemaError, GroupRecordError, classic_records.ClassicRecordError) as error:
            logger.warning("skipping undecodable record at offset %d of %s-%d: %s", offset, OFFSETS_TOPIC, state.partition, error)
            return
        topic_partition = (commit_key.topic, commit_key.partition)
        if producer_id is None:
            state.replay(commit_key.group, topic_partition, decoded, offset)
        elif decoded is not None:  # a transaction commits offsets, never tombstones
            state.add_transactional(producer_id, commit_key.group, [(topic_partition, decoded)], offset)

    def shutdown(self) -> None:
        """Stop loading (a running load ends at its next step) and drop every leadership."""
        self._stop_leading()

    # ------------------------------------------------------------------ commit and fetch

    def commit(self, group_id: str, member_id: str, entries: Sequence[OffsetCommitEntry], *, member_epoch: int = -1) -> list[Exception | None]:
        """Store ``entries`` for a group; one outcome (None = stored) per entry.

        ``member_id`` / ``member_epoch`` name the committing member ("" / -1 for a commit
        without one). Raises InvalidGroupIdError / NotCoordinatorError /
        CoordinatorLoadingError / CoordinatorNotAvailableError, and the group's refusals
        (UNKNOWN_MEMBER_ID, STALE_MEMBER_EPOCH, an active group for a commit without a member),
        for the whole request. Entries that fail validation (a partition the member does not
        own, an unknown partition...) are not stored; the valid ones are appended as one
        batch, so they are stored together or not at all; when the append or the wait for the
        in-sync replicas fails (NOT_ENOUGH_REPLICAS, REQUEST_TIMED_OUT...), that error is each
        valid entry's outcome and the cache keeps the previous commits.

        The group's lock is held from the check to the end of the wait for the replicas, so
        no heartbeat changes the member's assignment in between and no group is deleted under
        a commit in flight.
        """
        self._check_group_id(group_id)
        state = self.coordinating(group_id)
        with state.groups.lock(group_id):
            group = state.groups.get(group_id)
            topic_partitions = [(entry.topic, entry.partition) for entry in entries]
            if group is None:
                checks = check_commit_without_group(group_id, member_id, len(entries))
            else:
                checks = group.check_commit(member_id, member_epoch, topic_partitions)
            outcomes = [check if check is not None else self._validate(entry) for check, entry in zip(checks, entries)]
            return self._store_commits(state, group_id, entries, outcomes)

    def _store_commits(
        self, state: OffsetsPartition, group_id: str, entries: Sequence[OffsetCommitEntry], outcomes: list[Exception | None]
    ) -> list[Exception | None]:
        valid = [entry for entry, outcome in zip(entries, outcomes) if outcome is None]
        if not valid:
            return outcomes
        now = self._clock.milliseconds()
        builder = RecordBatchBuilder()
        values: list[tuple[TopicPartition, OffsetAndMetadata]] = []
        for entry in valid:
            value = OffsetAndMetadata(entry.offset, entry.leader_epoch, entry.metadata, now)
            values.append(((entry.topic, entry.partition), value))
            builder.append(now, encode_offset_commit_key(OffsetCommitKey(group_id, entry.topic, entry.partition)), encode_offset_commit_value(value))
        try:
            with self._wait_slot():
                try:
                    info = self._append_commit(state, group_id, [topic_partition for topic_partition, _ in values], builder.build())
                except NotCoordinatorError:
                    raise
                except Exception as error:  # nothing was appended
                    return [error if outcome is None else outcome for outcome in outcomes]
                stored = False
                try:
                    self._wait_for_replicas(state.partition, info.last_offset + 1, self._commit_timeout_ms)
                    stored = True
                except NotLeaderOrFollowerError:
                    raise NotCoordinatorError(group_id, state.partition) from None
                except Exception as error:  # in the leader's log, not (yet) on every in-sync replica
                    return [error if outcome is None else outcome for outcome in outcomes]
                finally:
                    state.complete_commit(group_id, values, info.first_offset, stored=stored)
                return outcomes
        except ReplicationWaitersFullError as error:  # no wait slot: nothing was appended
            return [error if outcome is None else outcome for outcome in outcomes]

    def commit_transactional(
        self, state: OffsetsPartition, group_id: str, producer_id: int, producer_epoch: int, entries: Sequence[OffsetCommitEntry]
    ) -> list[Exception | None]:
        """Append ``entries`` as one transactional batch of the producer; one outcome (None = stored) per entry.

        The caller (``GroupCoordinator.commit_transactional_offsets``) checked the member and
        holds the group's lock; the transaction coordinator verified the producer's
        transaction holds this offsets partition. Valid entries are kept pending for the
        producer from their append until its marker (:meth:`transaction_completed`); when the
        append or the wait for the in-sync replicas fails they are dropped and that error is
        their outcome. An older producer epoch than the partition's is refused by the log
        (InvalidProducerEpochError). NotCoordinatorError when the leadership ended.
        """
        outcomes = [self._validate(entry) for entry in entries]
        valid = [entry for entry, outcome in zip(entries, outcomes) if outcome is None]
        if not valid:
            return outcomes
        now = self._clock.milliseconds()
        values = [((entry.topic, entry.partition), OffsetAndMetadata(entry.offset, entry.leader_epoch, entry.metadata, now)) for entry in valid]
        topic_partitions = [topic_partition for topic_partition, _ in values]
        try:
            with self._wait_slot():
                with state.lock:
                    if not self._is_current(state):
                        raise NotCoordinatorError(group_id, state.partition)
                    try:
                        records = self._transactional_batch(state.partition, group_id, producer_id, producer_epoch, values, now)
                        info = self._replica_manager.append_to_partition(OFFSETS_TOPIC, state.partition, records, acks=ACKS_ALL)
                    except NotLeaderOrFollowerError:
                        raise NotCoordinatorError(group_id, state.partition) from None
                    except Exception as error:  # nothing was appended
                        return [error if outcome is None else outcome for outcome in outcomes]
                    # Under the lock: the marker's completion (which takes it) cannot come in between.
                    state.begin_transactional_commit(producer_id, group_id, values, info.first_offset)
                try:
                    self._wait_for_replicas(state.partition, info.last_offset + 1, self._commit_timeout_ms)
                except NotLeaderOrFollowerError:
                    state.drop_transactional(producer_id, group_id, topic_partitions)
                    raise NotCoordinatorError(group_id, state.partition) from None
                except Exception as error:  # in the leader's log, not (yet) on every in-sync replica: failed, as Kafka answers it
                    state.drop_transactional(producer_id, group_id, topic_partitions)
                    return [error if outcome is None else outcome for outcome in outcomes]
                return outcomes
        except ReplicationWaitersFullError as error:  # no wait slot: nothing was appended
            return [error if outcome is None else outcome for outcome in outcomes]

    def _transactional_batch(
        self, partition: int, group_id: str, producer_id: int, producer_epoch: int, values: Sequence[tuple[TopicPartition, OffsetAndMetadata]], now: int
    ) -> bytes:
        """The records of a transactional commit as a batch of the producer, numbered after its last batch in this partition.

        Kafka's coordinator appends these without a sequence check; Weir's log checks every
        producer batch's sequence, so the batch continues the producer's sequence here (0 at a
        new epoch). The caller holds the partition's lock, so no other append of this
        producer's can come between reading the sequence and appending.
        """
        entry = self._replica_manager.partition_log(OFFSETS_TOPIC, partition).producer_state(producer_id)
        base_sequence = (entry.last_sequence + 1) % SEQUENCE_MODULUS if entry is not None and entry.epoch == producer_epoch else 0
        builder = RecordBatchBuilder(producer_id=producer_id, producer_epoch=producer_epoch, base_sequence=base_sequence, transactional=True)
        for (topic, topic_partition), value in values:
            builder.append(now, encode_offset_commit_key(OffsetCommitKey(group_id, topic, topic_partition)), encode_offset_commit_value(value))
        return builder.build()

    def transaction_completed(self, offsets_partition: int, producer_id: int, producer_epoch: int, *, commit: bool) -> None:
        """A transaction's marker is durable in an offsets partition led here: its offsets become committed (COMMIT) or go (ABORT).

        The transaction coordinator's marker path calls this (``TransactionCompletionListener``).
        A partition no longer led here is left alone: its new leader replays the marker from the log.
        """
        state = self._partitions.get(offsets_partition)
        if state is None:
            return
        visible = state.transaction_completed(producer_id, commit=commit)
        logger.debug(
            "%s-%d: transaction of producer %d (epoch %d) %s; %d offsets now committed",
            OFFSETS_TOPIC,
            offsets_partition,
            producer_id,
            producer_epoch,
            "committed" if commit else "aborted",
            visible,
        )

    def _append_commit(self, state: OffsetsPartition, group_id: str, topic_partitions: list[TopicPartition], records: bytes) -> AppendInfo:
        with state.lock:
            if not self._is_current(state):
                raise NotCoordinatorError(group_id, state.partition)
            try:
                info = self._replica_manager.append_to_partition(OFFSETS_TOPIC, state.partition, records, acks=ACKS_ALL)
            except NotLeaderOrFollowerError:
                raise NotCoordinatorError(group_id, state.partition) from None
            state.begin_commit(group_id, topic_partitions)
        return info

    def write_records(self, state: OffsetsPartition, group_id: str, records: Sequence[tuple[bytes, bytes | None]]) -> None:
        """Append records of a group (state changes, tombstones) to its partition and wait for the in-sync replicas.

        The group coordinator's path to the log, acks=all like commits. NotCoordinatorError
        when the leadership ended; CoordinatorNotAvailableError (retriable) when the records
        could not be appended or did not reach the in-sync replicas in request.timeout.ms,
        in which case the caller keeps the group as it was before these records.
        """
        now = self._clock.milliseconds()
        builder = RecordBatchBuilder()
        for key, value in records:
            builder.append(now, key, value)
        try:
            with self._wait_slot():
                with state.lock:
                    if not self._is_current(state):
                        raise NotCoordinatorError(group_id, state.partition)
                    try:
                        info = self._replica_manager.append_to_partition(OFFSETS_TOPIC, state.partition, builder.build(), acks=ACKS_ALL)
                    except NotLeaderOrFollowerError:
                        raise NotCoordinatorError(group_id, state.partition) from None
                    except Exception as error:
                        raise CoordinatorNotAvailableError(
                            group_id, f"its records could not be written to partition {state.partition} of {OFFSETS_TOPIC}: {error}"
                        ) from error
                try:
                    self._wait_for_replicas(state.partition, info.last_offset + 1, self._commit_timeout_ms)
                except NotLeaderOrFollowerError:
                    raise NotCoordinatorError(group_id, state.partition) from None
                except Exception as error:
                    raise CoordinatorNotAvailableError(
                        group_id, f"its records did not reach the in-sync replicas of partition {state.partition} of {OFFSETS_TOPIC}: {error}"
                    ) from error
        except ReplicationWaitersFullError as error:  # no wait slot: nothing was appended
            raise CoordinatorNotAvailableError(group_id, str(error)) from error

    def fetch(self, group_id: str, partitions: Iterable[TopicPartition] | None) -> list[tuple[str, int, OffsetAndMetadata | None]]:
        """Committed offsets of a group: of ``partitions``, or of every partition it committed (None).

        Raises like :meth:`commit` when this broker does not coordinate the group (yet).
        """
        self._check_group_id(group_id)
        committed = self.coordinating(group_id).committed(group_id)
        if partitions is None:
            return [(topic, partition, value) for (topic, partition), value in sorted(committed.items())]
        return [(topic, partition, committed.get((topic, partition))) for topic, partition in partitions]

    def unstable_partitions(self, group_id: str) -> set[TopicPartition]:
        """The group's partitions with an offset committed by a transaction still open (OffsetFetch require_stable); raises like :meth:`fetch`."""
        self._check_group_id(group_id)
        return self.coordinating(group_id).unstable_partitions(group_id)

    def expire(self, retention_ms: int, classic_expire_from: Callable[[OffsetsPartition, str], int | None] | None = None) -> int:
        """Remove commits past ``retention_ms`` (offsets.retention.minutes) with tombstones; returns how many.

        Offsets of a group with members never expire; an empty group's count from when it
        became empty (see ``OffsetsPartition.expired``; ``classic_expire_from`` tells it of the
        classic groups). Only partitions this broker leads and has loaded are expired; their
        followers learn of the tombstones through replication.
        """
        removed = 0
        for state in list(self._partitions.values()):
            if not state.active:
                continue
            # Under the partition's lock no commit can be appended between finding an expired
            # commit and writing its tombstone; commits still waiting for replicas are skipped.
            with state.lock:
                if not self._is_current(state):
                    continue
                classic = functools.partial(classic_expire_from, state) if classic_expire_from is not None else None
                expired = state.expired(self._clock.milliseconds(), retention_ms, classic)
                if not expired:
                    continue
                now = self._clock.milliseconds()
                builder = RecordBatchBuilder()
                for group_id, (topic, topic_partition) in expired:
                    builder.append(now, encode_offset_commit_key(OffsetCommitKey(group_id, topic, topic_partition)), None)
                try:
                    self._replica_manager.append_to_partition(OFFSETS_TOPIC, state.partition, builder.build())
                except (NotLeaderOrFollowerError, UnknownTopicOrPartitionError):
                    continue  # the leadership ended meanwhile; the new leader expires them
                state.remove(expired)
                removed += len(expired)
        if removed:
            logger.info("expired %d committed offsets older than %d ms", removed, retention_ms)
        return removed

    def led_partitions(self) -> list[OffsetsPartition]:
        """The offsets partitions this broker leads and has loaded."""
        return [state for state in list(self._partitions.values()) if state.active]

    def coordinating(self, group_id: str) -> OffsetsPartition:
        """The led, loaded partition of the group; NotCoordinatorError / CoordinatorLoadingError / CoordinatorNotAvailableError otherwise."""
        partition = self.partition_for(group_id)
        state = self._partitions.get(partition)
        if state is None:
            raise NotCoordinatorError(group_id, partition)
        if not state.active:
            raise CoordinatorLoadingError(group_id, partition)
        return state

    @staticmethod
    def _check_group_id(group_id: str) -> None:
        if not group_id:
            raise InvalidGroupIdError(group_id)

    def _validate(self, entry: OffsetCommitEntry) -> Exception | None:
        topic = self._registry.get(entry.topic)
        if topic is None or not 0 <= entry.partition < topic.partitions:
            return UnknownTopicOrPartitionError(entry.topic, entry.partition)
        if entry.offset < 0:
            return InvalidCommitOffsetError(entry.topic, entry.partition, entry.offset)
        metadata_size = len(entry.metadata.encode("utf-8"))
        if metadata_size > self._metadata_max_bytes:
            return OffsetMetadataTooLargeError(metadata_size, self._metadata_max_bytes)
        return None

"""Committed consumer offsets, stored as records of the compacted internal topic ``__consumer_offsets``.

A group's commits go to partition ``Utils.abs(groupId.hashCode()) % N`` of the topic, one
record per committed partition with Kafka's key and value schemas (see ``offset_schema``),
so the topic is the durable truth and compaction keeps only the latest commit per key. An
in-memory cache answers OffsetFetch; it is rebuilt at startup by reading the topic.

Groups have no members yet (that arrives with the group protocol): a commit is accepted only
as a "simple" commit, without a member id, as Kafka's ``assign()``-style consumers make it.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import Iterable, Sequence

from broker_nodes.clock import Clock
from broker_nodes.coordinator.offset_schema import (
    OffsetAndMetadata,
    OffsetCommitKey,
    OffsetSchemaError,
    decode_key,
    decode_offset_commit_value,
    encode_offset_commit_key,
    encode_offset_commit_value,
    partition_for_group,
)
from broker_nodes.replica_manager import ReplicaManager
from broker_nodes.topic_registry import TopicRegistry, UnknownTopicOrPartitionError
from weir.records import RecordBatchBuilder, iter_batch_positions, iter_records

logger = logging.getLogger(__name__)

OFFSETS_TOPIC = "__consumer_offsets"  # Kafka's name for the internal topic of committed offsets
LOAD_READ_BYTES = 1024 * 1024  # bytes read per step while loading the topic at startup

TopicPartition = tuple[str, int]


class OffsetStoreError(Exception):
    retriable = False


class InvalidGroupIdError(OffsetStoreError):
    def __init__(self, group_id: str) -> None:
        super().__init__(f"group id {group_id!r} is invalid: it must not be empty")
        self.group_id = group_id


class UnknownMemberError(OffsetStoreError):
    """A commit naming a group member; only member-less commits exist yet (UNKNOWN_MEMBER_ID)."""

    def __init__(self, group_id: str, member_id: str) -> None:
        super().__init__(f"group {group_id!r} has no member {member_id!r}: only commits without a member id are supported")
        self.group_id = group_id
        self.member_id = member_id


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
    """Committed offsets are still being loaded (COORDINATOR_LOAD_IN_PROGRESS)."""

    retriable = True

    def __init__(self) -> None:
        super().__init__(f"committed offsets are still being loaded from {OFFSETS_TOPIC}")


@dataclass(frozen=True, slots=True)
class OffsetCommitEntry:
    topic: str
    partition: int
    offset: int
    leader_epoch: int
    metadata: str


class OffsetStore:
    """Committed offsets: ``__consumer_offsets`` on disk, a cache group -> (topic, partition) -> offset.

    Thread-safe. Commits that land in the same ``__consumer_offsets`` partition are serialized
    (append, then cache update, under that partition's lock) so the cache always agrees with
    the last record of each key in the log.
    """

    def __init__(self, replica_manager: ReplicaManager, registry: TopicRegistry, clock: Clock, *, metadata_max_bytes: int) -> None:
        self._replica_manager = replica_manager
        self._registry = registry
        self._clock = clock
        self._metadata_max_bytes = metadata_max_bytes
        self._cache: dict[str, dict[TopicPartition, OffsetAndMetadata]] = {}
        self._cache_lock = threading.Lock()
        self._partition_locks: list[threading.Lock] = []
        self._loaded = False

    @property
    def partition_count(self) -> int:
        return self._registry.require(OFFSETS_TOPIC).partitions

    def partition_for(self, group_id: str) -> int:
        return partition_for_group(group_id, self.partition_count)

    # ------------------------------------------------------------------ loading

    def load(self) -> int:
        """Rebuild the cache from every partition of ``__consumer_offsets``; returns the records read."""
        partitions = self.partition_count
        self._partition_locks = [threading.Lock() for _ in range(partitions)]
        cache: dict[str, dict[TopicPartition, OffsetAndMetadata]] = {}
        loaded = sum(self._load_partition(partition, cache) for partition in range(partitions))
        with self._cache_lock:
            self._cache = cache
            self._loaded = True
        return loaded

    def _load_partition(self, partition: int, cache: dict[str, dict[TopicPartition, OffsetAndMetadata]]) -> int:
        log = self._replica_manager.partition_log(OFFSETS_TOPIC, partition)
        offset = log.log_start_offset
        end = log.log_end_offset
        loaded = 0
        while offset < end:
            data = log.read(offset, LOAD_READ_BYTES, max_offset=end).records
            next_offset = offset
            for _, header in iter_batch_positions(data):
                next_offset = header.next_offset
            if next_offset <= offset:
                break
            for record in iter_records(data, offset):
                loaded += 1
                self._apply_record(record.key, record.value, cache, partition, record.offset)
            offset = next_offset
        return loaded

    @staticmethod
    def _apply_record(key: bytes | None, value: bytes | None, cache: dict[str, dict[TopicPartition, OffsetAndMetadata]], partition: int, offset: int) -> None:
        if key is None:
            return
        try:
            commit_key = decode_key(bytes(key))
            if commit_key is None:
                return
            group = cache.setdefault(commit_key.group, {})
            if value is None:
                group.pop((commit_key.topic, commit_key.partition), None)
                if not group:
                    del cache[commit_key.group]
                return
            group[(commit_key.topic, commit_key.partition)] = decode_offset_commit_value(bytes(value))
        except OffsetSchemaError as error:
            logger.warning("skipping undecodable record at offset %d of %s-%d: %s", offset, OFFSETS_TOPIC, partition, error)

    # ------------------------------------------------------------------ commit and fetch

    def commit(self, group_id: str, member_id: str, entries: Sequence[OffsetCommitEntry]) -> list[Exception | None]:
        """Store ``entries`` for a group; one outcome (None = stored) per entry.

        Raises InvalidGroupIdError / UnknownMemberError / CoordinatorLoadingError for the whole
        request. Entries that fail validation are not stored; the valid ones are appended as
        one batch, so they are stored together or not at all.
        """
        self._check_group(group_id)
        if member_id:
            raise UnknownMemberError(group_id, member_id)
        outcomes: list[Exception | None] = [self._validate(entry) for entry in entries]
        valid = [entry for entry, outcome in zip(entries, outcomes) if outcome is None]
        if not valid:
            return outcomes
        now = self._clock.milliseconds()
        builder = RecordBatchBuilder()
        values = []
        for entry in valid:
            value = OffsetAndMetadata(entry.offset, entry.leader_epoch, entry.metadata, now)
            values.append(value)
            builder.append(now, encode_offset_commit_key(OffsetCommitKey(group_id, entry.topic, entry.partition)), encode_offset_commit_value(value))
        partition = self.partition_for(group_id)
        try:
            with self._partition_locks[partition]:
                self._replica_manager.append_to_partition(OFFSETS_TOPIC, partition, builder.build())
                with self._cache_lock:
                    group = self._cache.setdefault(group_id, {})
                    for entry, value in zip(valid, values):
                        group[(entry.topic, entry.partition)] = value
        except Exception as error:  # the append failed: no valid entry was stored
            return [error if outcome is None else outcome for outcome in outcomes]
        return outcomes

    def fetch(self, group_id: str, partitions: Iterable[TopicPartition] | None) -> list[tuple[str, int, OffsetAndMetadata | None]]:
        """Committed offsets of a group: of ``partitions``, or of every partition it committed (None)."""
        self._check_group(group_id)
        with self._cache_lock:
            committed = dict(self._cache.get(group_id, {}))
        if partitions is None:
            return [(topic, partition, value) for (topic, partition), value in sorted(committed.items())]
        return [(topic, partition, committed.get((topic, partition))) for topic, partition in partitions]

    def expire(self, retention_ms: int) -> int:
        """Remove commits older than ``retention_ms`` (offsets.retention.minutes) with tombstones; returns how many."""
        if not self._loaded:
            return 0
        removed = 0
        for partition, lock in enumerate(self._partition_locks):
            # Under the partition's lock no commit of its groups can slip in between finding an
            # expired commit and writing its tombstone (which would then erase the newer commit).
            with lock:
                cutoff = self._clock.milliseconds() - retention_ms
                with self._cache_lock:
                    expired = [
                        (group_id, topic_partition)
                        for group_id, group in self._cache.items()
                        if self.partition_for(group_id) == partition
                        for topic_partition, value in group.items()
                        if value.commit_timestamp < cutoff
                    ]
                if not expired:
                    continue
                now = self._clock.milliseconds()
                builder = RecordBatchBuilder()
                for group_id, (topic, topic_partition) in expired:
                    builder.append(now, encode_offset_commit_key(OffsetCommitKey(group_id, topic, topic_partition)), None)
                self._replica_manager.append_to_partition(OFFSETS_TOPIC, partition, builder.build())
                with self._cache_lock:
                    for group_id, topic_partition in expired:
                        group = self._cache[group_id]
                        del group[topic_partition]
                        if not group:
                            del self._cache[group_id]
                removed += len(expired)
        if removed:
            logger.info("expired %d committed offsets older than %d ms", removed, retention_ms)
        return removed

    def _check_group(self, group_id: str) -> None:
        if not group_id:
            raise InvalidGroupIdError(group_id)
        if not self._loaded:
            raise CoordinatorLoadingError()

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

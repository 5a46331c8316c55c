"""The committed offsets and consumer groups of one ``__consumer_offsets`` partition, as its leader keeps them in memory.

A broker coordinates the groups of the offsets partitions it leads. For each of them it holds
one :class:`OffsetsPartition` per leadership (topic id and leader epoch): it starts loading,
is filled from the partition's log (:meth:`replay` for commits, :attr:`groups` for the group
records, in log order), and then serves commits, fetches and the group protocol until the
leadership ends and the store drops it. A new leadership always starts from the log again,
since records replicated while following never went through the cache.

Each cached commit remembers the log offset of its record. A commit is appended under
:attr:`lock` but waits for the in-sync replicas without it, so two commits of one key may
complete out of order; the cache keeps the one whose record is later in the log, which is
the one compaction and every reload keep too (Kafka's ``GroupMetadata`` does the same).
Keys with a commit between append and completion are *pending*: expiry leaves them alone, so
a tombstone can never land after a newer commit of the key.

Transactional offset commits (TxnOffsetCommit, KIP-447) are kept apart, per producer id, from
their append until the transaction's marker lands in this partition (Kafka's
``pendingTransactionalOffsetCommits``): invisible to OffsetFetch (which answers
UNSTABLE_OFFSET_COMMIT for them when asked for stable offsets), moved into the committed
offsets on COMMIT (each only over a commit whose record is earlier in the log: a plain commit
appended after the transaction's record wins, as in Kafka) and dropped on ABORT. Loading
replays them the same way from the transactional batches and markers of the log.

Thread-safety: every method takes :attr:`lock`, except those the caller calls holding it:
:meth:`activate`, :meth:`begin_commit` and :meth:`begin_transactional_commit` (held across the append before them) and
:meth:`expired` / :meth:`remove` (held across the tombstones' append between them).
:attr:`groups` has its own per-group locks (see ``groups.loaded_groups``).
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from broker_nodes.coordinator.groups.classic_records import StoredClassicGroup
from broker_nodes.coordinator.groups.loaded_groups import LoadedGroups
from log_formats.offset_commit_records import OffsetAndMetadata

TopicPartition = tuple[str, int]
CommitKey = tuple[str, TopicPartition]  # (group, (topic, partition))


@dataclass(frozen=True, slots=True)
class CachedCommit:
    value: OffsetAndMetadata
    log_offset: int  # offset of the record in __consumer_offsets


class OffsetsPartition:
    """One leadership of one offsets partition: loading, then active. See the module docstring."""

    def __init__(self, partition: int, leader_epoch: int, topic_id: str) -> None:
        self.partition = partition
        self.leader_epoch = leader_epoch
        self.topic_id = topic_id  # a recreated __consumer_offsets is a new leadership too
        self.lock = threading.Lock()
        self._active = False  # set once the log is loaded; read without the lock (a bool read is atomic)
        self._commits: dict[str, dict[TopicPartition, CachedCommit]] = {}
        self._pending: Counter[CommitKey] = Counter()
        # producer id -> group -> partition -> commit of the producer's open transaction
        self._transactional: dict[int, dict[str, dict[TopicPartition, CachedCommit]]] = {}
        # Markers that landed while the log was loading, applied at activation: the load may have
        # read the log's end before them (see :meth:`transaction_completed`).
        self._completed_while_loading: list[tuple[int, bool]] = []
        self.groups = LoadedGroups()  # the consumer groups whose records are in this partition
        # Classic groups read from the log, by group id: the classic coordinator takes each over on first use or timer check.
        self.classic_records: dict[str, StoredClassicGroup] = {}

    @property
    def active(self) -> bool:
        """Loaded: commits and fetches are served."""
        return self._active

    def activate(self) -> None:
        """The log is loaded: serve from now on. The caller holds :attr:`lock` (and checked the leadership is current)."""
        for producer_id, commit in self._completed_while_loading:
            self._complete_transaction(producer_id, commit=commit)
        self._completed_while_loading.clear()
        self._active = True

    # ------------------------------------------------------------------ loading

    def replay(self, group: str, topic_partition: TopicPartition, value: OffsetAndMetadata | None, log_offset: int) -> None:
        """Apply one record read from the log (a None value is a tombstone); records come in log order."""
        with self.lock:
            if value is None:
                self._remove(group, topic_partition)
            else:
                self._commits.setdefault(group, {})[topic_partition] = CachedCommit(value, log_offset)

    # ------------------------------------------------------------------ commits

    def begin_commit(self, group: str, topic_partitions: Iterable[TopicPartition]) -> None:
        """Mark keys whose commit is appended and not yet complete. The caller holds :attr:`lock`."""
        for topic_partition in topic_partitions:
            self._pending[(group, topic_partition)] += 1

    def complete_commit(self, group: str, values: Sequence[tuple[TopicPartition, OffsetAndMetadata]], first_log_offset: int, *, stored: bool) -> None:
        """End a commit begun with :meth:`begin_commit`; when ``stored``, cache its values.

        ``values`` are in the order of the records of the batch that starts at ``first_log_offset``.
        """
        with self.lock:
            for index, (topic_partition, value) in enumerate(values):
                key = (group, topic_partition)
                self._pending[key] -= 1
                if self._pending[key] <= 0:
                    del self._pending[key]
                if not stored:
                    continue
                log_offset = first_log_offset + index
                group_commits = self._commits.setdefault(group, {})
                cached = group_commits.get(topic_partition)
                if cached is None or cached.log_offset < log_offset:
                    group_commits[topic_partition] = CachedCommit(value, log_offset)

    def committed(self, group: str) -> dict[TopicPartition, OffsetAndMetadata]:
        """A copy of the group's committed offsets."""
        with self.lock:
            return {topic_partition: cached.value for topic_partition, cached in self._commits.get(group, {}).items()}

    def groups_with_commits(self) -> list[str]:
        """The groups that have committed offsets here."""
        with self.lock:
            return list(self._commits)

    # ------------------------------------------------------------------ transactional commits

    def add_transactional(self, producer_id: int, group: str, values: Sequence[tuple[TopicPartition, OffsetAndMetadata]], first_log_offset: int) -> None:
        """Keep the commits of a transactional batch read while loading until its transaction ends (see :meth:`begin_transactional_commit`)."""
        with self.lock:
            self.begin_transactional_commit(producer_id, group, values, first_log_offset)

    def begin_transactional_commit(
        self, producer_id: int, group: str, values: Sequence[tuple[TopicPartition, OffsetAndMetadata]], first_log_offset: int
    ) -> None:
        """Keep the commits of an appended transactional batch until its transaction ends. The caller holds :attr:`lock`.

        ``values`` are in the order of the records of the batch that starts at ``first_log_offset``;
        a later commit of the same partition in the same transaction replaces an earlier one.
        """
        pending = self._transactional.setdefault(producer_id, {}).setdefault(group, {})
        for index, (topic_partition, value) in enumerate(values):
            pending[topic_partition] = CachedCommit(value, first_log_offset + index)

    def drop_transactional(self, producer_id: int, group: str, topic_partitions: Iterable[TopicPartition]) -> None:
        """Forget a transactional commit that did not reach the in-sync replicas (the client is told it failed, as Kafka does)."""
        with self.lock:
            pending = self._transactional.get(producer_id, {}).get(group)
            if pending is None:
                return
            for topic_partition in topic_partitions:
                pending.pop(topic_partition, None)
            self._forget_empty_transactional(producer_id, group)

    def replay_marker(self, producer_id: int, *, commit: bool) -> None:
        """Apply a transaction marker read from the log while loading (see :meth:`transaction_completed`)."""
        with self.lock:
            self._complete_transaction(producer_id, commit=commit)

    def transaction_completed(self, producer_id: int, *, commit: bool) -> int:
        """The producer's transaction ended here (its marker was appended as leader): COMMIT makes its offsets committed, ABORT drops them.

        A committed offset replaces the cached one only when its record is later in the log,
        so a plain commit appended after the transaction's record stays. While the partition
        is loading the outcome waits for :meth:`activate`: applying it twice is harmless (no
        transactional commit is appended while loading, so the producer's pending commits are
        those of this transaction or none). Returns how many offsets became visible.
        """
        with self.lock:
            if not self._active:
                self._completed_while_loading.append((producer_id, commit))
                return 0
            return self._complete_transaction(producer_id, commit=commit)

    def _complete_transaction(self, producer_id: int, *, commit: bool) -> int:
        ended = self._transactional.pop(producer_id, {})
        if not commit:
            return 0
        visible = 0
        for group, pending in ended.items():
            group_commits = self._commits.setdefault(group, {})
            for topic_partition, cached in pending.items():
                current = group_commits.get(topic_partition)
                if current is None or current.log_offset < cached.log_offset:
                    group_commits[topic_partition] = cached
                    visible += 1
        return visible

    def unstable_partitions(self, group: str) -> set[TopicPartition]:
        """The partitions of the group with a transactional commit not yet ended (OffsetFetch's UNSTABLE_OFFSET_COMMIT)."""
        with self.lock:
            return {topic_partition for groups in self._transactional.values() for topic_partition in groups.get(group, {})}

    def has_transactional(self, group: str) -> bool:
        """Whether a transaction holds commits of the group: the group is then not deleted (Kafka's ``hasOffsets``)."""
        with self.lock:
            return any(group in groups for groups in self._transactional.values())

    def _forget_empty_transactional(self, producer_id: int, group: str) -> None:
        groups = self._transactional.get(producer_id)
        if groups is None:
            return
        if not groups.get(group, True):
            del groups[group]
        if not groups:
            del self._transactional[producer_id]

    # ------------------------------------------------------------------ expiry

    def expired(self, now_ms: int, retention_ms: int, classic_expire_from: Callable[[str], int | None] | None = None) -> list[CommitKey]:
        """Commits past ``retention_ms`` and not pending (nor in an open transaction). The caller holds :attr:`lock` until :meth:`remove`.

        Offsets of a group with members never expire; those of an empty group count from the
        later of their commit and the moment the group became empty (offsets.retention.minutes
        after the last consumer left); those of a group without members' state (assign()-style
        commits) from their commit. ``classic_expire_from`` says the same of a classic group
        (None: it has members; -1: there is none; else when it became Empty).
        """
        cutoff_ms = now_ms - retention_ms
        # A key an open transaction commits keeps its offset too: a tombstone written now would
        # be later in the log than the transaction's record and undo its commit at the next load.
        in_transactions = {
            (group, topic_partition) for groups in self._transactional.values() for group, pending in groups.items() for topic_partition in pending
        }
        expired: list[CommitKey] = []
        for group, commits in self._commits.items():
            loaded = self.groups.get(group)
            empty_since = -1
            start = loaded.offsets_expire_from() if loaded is not None else classic_expire_from(group) if classic_expire_from is not None else -1
            if start is None:
                continue
            empty_since = start
            expired.extend(
                (group, topic_partition)
                for topic_partition, cached in commits.items()
                if max(cached.value.commit_timestamp, empty_since) < cutoff_ms
                and (group, topic_partition) not in self._pending
                and (group, topic_partition) not in in_transactions
            )
        return expired

    def remove(self, keys: Iterable[CommitKey]) -> None:
        """Forget commits whose tombstones were appended. The caller holds :attr:`lock`."""
        for group, topic_partition in keys:
            self._remove(group, topic_partition)

    def _remove(self, group: str, topic_partition: TopicPartition) -> None:
        commits = self._commits.get(group)
        if commits is None:
            return
        commits.pop(topic_partition, None)
        if not commits:
            del self._commits[group]

"""``__consumer_offsets`` records -> the commits a group coordinator makes visible, in log order.

The evaluator reads ``__consumer_offsets`` at read_uncommitted: at read_committed one tenant's
hanging transaction (a TxnOffsetCommit whose producer never ends it) holds the partition's last
stable offset back, and every other tenant's commits on that partition would stay unread until
the transaction times out (15 minutes by default). So it applies transaction markers itself,
as the group coordinator does when it loads the partition (Kafka's
``pendingTransactionalOffsetCommits``, Weir's ``OffsetsPartition``):

- a plain (non-transactional) commit or tombstone is visible at once;
- a transactional commit is pending under its producer id until that producer's next marker in
  the same ``__consumer_offsets`` partition: COMMIT makes its commits visible (each with its own
  record offset as ``order``, so a plain commit appended after it still wins: the window's
  storage rule drops a commit not newer than the window's newest), ABORT drops them.

:func:`decode_offset_record` decodes one record with Kafka's schemas
(``log_formats.offset_commit_records``); group metadata records (key versions 2+) and commits of
groups without a tenant (standalone, internal) are not commits of a tenant's group and are
counted, not returned. :class:`OffsetsLogReplica` holds the pending transactional commits;
:meth:`OffsetsLogReplica.to_document` / :meth:`from_document` carry them across a restart with
the cursor, so that a marker read after a restart still finds its commits.
Pure: no I/O, no clock.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from log_formats.offset_commit_records import OFFSET_COMMIT_KEY_VERSIONS, OffsetSchemaError, decode_key, decode_offset_commit_value, key_version
from log_formats.topic_names import split_qualified_name

KIND_COMMIT = "commit"
KIND_TOMBSTONE = "tombstone"
KIND_GROUP_RECORD = "group_record"
KIND_UNDECODABLE = "undecodable"
KIND_UNTENANTED = "untenanted"

GroupPartition = tuple[str, str, str, int]  # (tenant id, group, topic, partition), plain names


class InvalidReplicaStateError(ValueError):
    """The saved pending transactional commits are not what :meth:`OffsetsLogReplica.to_document` writes."""

    retriable = False


@dataclass(frozen=True, slots=True)
class Commit:
    """A visible commit (``offset`` set) or tombstone (``offset`` and ``timestamp_ms`` None) of a tenant's group-partition.

    ``order`` is the record's offset in its ``__consumer_offsets`` partition (Burrow's Order).
    """

    key: GroupPartition
    offset: int | None
    timestamp_ms: int | None
    order: int


def decode_offset_record(key: bytes | None, value: bytes | None, order: int) -> tuple[str, Commit | None, str | None]:
    """(kind, commit or None, problem or None) of one record; ``kind`` is one of the KIND_* names."""
    if key is None:
        return KIND_UNDECODABLE, None, "a record without a key"
    try:
        if key_version(bytes(key)) not in OFFSET_COMMIT_KEY_VERSIONS:
            return KIND_GROUP_RECORD, None, None
        commit_key = decode_key(bytes(key))
        decoded = None if value is None else decode_offset_commit_value(bytes(value))
    except OffsetSchemaError as error:
        return KIND_UNDECODABLE, None, str(error)
    assert commit_key is not None  # key versions 0 and 1 are commits
    tenant_id, group = split_qualified_name(commit_key.group)
    _, topic = split_qualified_name(commit_key.topic)
    if not tenant_id:
        return KIND_UNTENANTED, None, None
    group_partition = (tenant_id, group, topic, int(commit_key.partition))
    if decoded is None:
        return KIND_TOMBSTONE, Commit(group_partition, None, None, order), None
    return KIND_COMMIT, Commit(group_partition, int(decoded.offset), int(decoded.commit_timestamp), order), None


class OffsetsLogReplica:
    """The transaction state of the ``__consumer_offsets`` partitions read so far (see the module docstring)."""

    def __init__(self) -> None:
        # (source partition, producer id) -> the producer's pending commits, in log order.
        self._pending: dict[tuple[int, int], list[Commit]] = {}
        self.counts: Counter[str] = Counter()
        self.problems: list[tuple[int, int, str]] = []  # (source partition, offset, problem), the first few

    def record(self, source_partition: int, order: int, key: bytes | None, value: bytes | None, *, producer_id: int, transactional: bool) -> list[Commit]:
        """The commits visible after one data record (none while it is part of an open transaction)."""
        kind, commit, problem = decode_offset_record(key, value, order)
        self.counts[kind] += 1
        if problem is not None and len(self.problems) < 5:
            self.problems.append((source_partition, order, problem))
        if commit is None:
            return []
        if transactional:
            self._pending.setdefault((source_partition, producer_id), []).append(commit)
            return []
        return [commit]

    def marker(self, source_partition: int, producer_id: int, *, commit: bool) -> list[Commit]:
        """The producer's transaction ended in this partition: its commits on COMMIT, none on ABORT."""
        self.counts["commit_marker" if commit else "abort_marker"] += 1
        ended = self._pending.pop((source_partition, producer_id), [])
        return ended if commit else []

    def pending_count(self) -> int:
        return sum(len(commits) for commits in self._pending.values())

    def to_document(self) -> list[dict[str, Any]]:
        return [
            {
                "partition": partition,
                "producer_id": producer_id,
                "commits": [[*commit.key, commit.offset, commit.timestamp_ms, commit.order] for commit in commits],
            }
            for (partition, producer_id), commits in sorted(self._pending.items())
        ]

    @classmethod
    def from_document(cls, document: Any) -> OffsetsLogReplica:
        replica = cls()
        if document is None:
            return replica
        if not isinstance(document, list):
            raise InvalidReplicaStateError(f"the pending transactional commits must be a list, not {type(document).__name__}")
        for item in document:
            if not isinstance(item, Mapping) or not isinstance(item.get("partition"), int) or not isinstance(item.get("producer_id"), int):
                raise InvalidReplicaStateError(f"a pending transaction lacks its partition or producer id: {item!r}"[:300])
            commits = []
            for entry in item.get("commits", []):
                if not isinstance(entry, list) or len(entry) != 7:
                    raise InvalidReplicaStateError(f"a pending commit is not [tenant, group, topic, partition, offset, timestamp_ms, order]: {entry!r}"[:300])
                tenant_id, group, topic, partition, offset, timestamp_ms, order = entry
                commits.append(Commit((str(tenant_id), str(group), str(topic), int(partition)), offset, timestamp_ms, int(order)))
            replica._pending[(item["partition"], item["producer_id"])] = commits
        return replica

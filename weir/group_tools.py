"""Group tooling shared by the ``weir groups`` CLI, the REST API and the dashboard.

What ``kafka-consumer-groups.sh`` does, over an :class:`~weir.admin.AdminClient`:

- :func:`consumer_group_lag`: per partition, the group's committed offset, the partition's end
  offset and the lag between them, for every partition the group has committed or is
  assigned;
- :func:`plan_offset_reset`: the dry run of an offset reset (to the earliest or latest
  offset, to the first offset at a timestamp, or to given offsets clamped to what the log
  holds): what each partition's committed offset is and would become;
- :func:`apply_offset_reset`: writes such a plan. The coordinator accepts it only while the
  group has no members; otherwise KafkaException (UNKNOWN_MEMBER_ID, naming how many members
  are active) and nothing is written.

Every function takes ``timeout`` in seconds for the whole operation and raises
KafkaException with the broker's error (GROUP_ID_NOT_FOUND, UNKNOWN_TOPIC_OR_PARTITION...).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from weir.admin import AdminClient, OffsetSpec
from weir.consumer_groups import ConsumerGroupTopicPartitions
from weir.errors import ErrorCode, KafkaError, KafkaException
from weir.message import TopicPartition

# Where a reset goes: "earliest", "latest", ("timestamp", ms) or {(topic, partition): offset}.
ResetTarget = str | tuple[str, int] | Mapping[tuple[str, int], int]


@dataclass(frozen=True)
class PartitionLag:
    """One partition of a group: ``committed_offset`` -1 when nothing is committed (``lag`` None
    then); ``end_offset`` -1 when its leader could not tell (``lag`` None then too)."""

    topic: str
    partition: int
    committed_offset: int
    end_offset: int
    lag: int | None


@dataclass(frozen=True)
class OffsetChange:
    """One partition of a reset plan: ``current_offset`` -1 when nothing is committed."""

    topic: str
    partition: int
    current_offset: int
    new_offset: int


class _Deadline:
    def __init__(self, timeout: float) -> None:
        if timeout <= 0:
            raise ValueError(f"timeout must be a positive number of seconds, got {timeout}")
        self._end = time.monotonic() + timeout

    def remaining(self) -> float:
        return max(self._end - time.monotonic(), 0.001)

    def result(self, future: Future) -> Any:
        """The future's result within the deadline; a deadline passed raises KafkaException _TIMED_OUT."""
        try:
            return future.result(timeout=self.remaining())
        except TimeoutError:
            raise KafkaException(KafkaError(KafkaError._TIMED_OUT, "the brokers did not answer in time")) from None


def _committed(admin: AdminClient, group_id: str, partitions: list[TopicPartition] | None, deadline: _Deadline) -> dict[tuple[str, int], int]:
    """{(topic, partition): committed offset} of ``group_id``; -1 where nothing is committed."""
    request = ConsumerGroupTopicPartitions(group_id, partitions)
    result = deadline.result(admin.list_consumer_group_offsets([request], request_timeout=deadline.remaining())[group_id])
    committed = {}
    for tp in result.topic_partitions or []:
        if tp.error is not None:
            raise KafkaException(KafkaError(tp.error.code(), f"committed offset of {tp.topic} [{tp.partition}] in group {group_id!r}: {tp.error.str()}"))
        committed[(tp.topic, tp.partition)] = tp.offset if tp.offset >= 0 else -1
    return committed


def _offsets(admin: AdminClient, partitions: list[tuple[str, int]], spec: OffsetSpec, deadline: _Deadline, *, strict: bool) -> dict[tuple[str, int], int]:
    """ListOffsets for ``partitions``: {(topic, partition): offset}; -1 where none (past the end for a timestamp).

    ``strict``: a partition's failure raises; otherwise its offset is -1.
    """
    if not partitions:
        return {}
    futures = admin.list_offsets({TopicPartition(topic, partition): spec for topic, partition in partitions}, request_timeout=deadline.remaining())
    offsets = {}
    for tp, future in futures.items():
        try:
            offsets[(tp.topic, tp.partition)] = deadline.result(future).offset
        except KafkaException as failure:
            if strict:
                raise KafkaException(KafkaError(failure.error.code(), f"offsets of {tp.topic} [{tp.partition}]: {failure.error.str()}")) from None
            offsets[(tp.topic, tp.partition)] = -1
    return offsets


def consumer_group_lag(admin: AdminClient, group_id: str, *, timeout: float) -> list[PartitionLag]:
    """Lag of every partition ``group_id`` has committed or is assigned, sorted by topic and partition.

    Raises KafkaException GROUP_ID_NOT_FOUND when the group has neither members nor offsets.
    """
    deadline = _Deadline(timeout)
    committed = _committed(admin, group_id, None, deadline)
    assigned: set[tuple[str, int]] = set()
    try:
        description = deadline.result(admin.describe_consumer_groups([group_id], request_timeout=deadline.remaining())[group_id])
    except KafkaException as failure:
        if failure.error.code() != ErrorCode.GROUP_ID_NOT_FOUND or not committed:
            raise
    else:
        for member in description.members:
            for assignment in (member.assignment, member.target_assignment):
                if assignment is not None:
                    assigned.update((tp.topic, tp.partition) for tp in assignment.topic_partitions)
    partitions = sorted(set(committed) | assigned)
    ends = _offsets(admin, partitions, OffsetSpec.latest(), deadline, strict=False)
    lags = []
    for topic, partition in partitions:
        offset = committed.get((topic, partition), -1)
        end = ends.get((topic, partition), -1)
        lag = max(end - offset, 0) if offset >= 0 and end >= 0 else None
        lags.append(PartitionLag(topic, partition, offset, end, lag))
    return lags


def _is_list_of_names(value: object) -> bool:
    """The check of the topics argument at run time: callers of the public API need not be type-checked."""
    return isinstance(value, list) and all(isinstance(item, str) and item for item in value)


def _check_target(to: Any) -> None:
    if isinstance(to, str):
        if to not in ("earliest", "latest"):
            raise ValueError(f'reset target must be "earliest", "latest", ("timestamp", ms) or a dict of offsets, got {to!r}')
    elif isinstance(to, tuple):
        if len(to) != 2 or to[0] != "timestamp" or not isinstance(to[1], int) or isinstance(to[1], bool) or to[1] < 0:
            raise ValueError(f'a timestamp reset target is ("timestamp", milliseconds >= 0), got {to!r}')
    elif isinstance(to, Mapping):
        if not to:
            raise ValueError("a dict reset target must name at least one (topic, partition)")
        for key, offset in to.items():
            if not (isinstance(key, tuple) and len(key) == 2 and isinstance(key[0], str) and isinstance(key[1], int)):
                raise ValueError(f"reset offsets are keyed by (topic, partition), got {key!r}")
            if not isinstance(offset, int) or isinstance(offset, bool) or offset < 0:
                raise ValueError(f"reset offset of {key[0]} [{key[1]}] must be an integer >= 0, got {offset!r}")
    else:
        raise ValueError(f'reset target must be "earliest", "latest", ("timestamp", ms) or a dict of offsets, got {to!r}')


def _topic_partitions(admin: AdminClient, topics: list[str], deadline: _Deadline) -> list[tuple[str, int]]:
    partitions = []
    for topic in topics:
        metadata = admin.list_topics(topic, timeout=deadline.remaining()).topics.get(topic)
        if metadata is None or metadata.error is not None:
            code = metadata.error.code() if metadata is not None and metadata.error is not None else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            raise KafkaException(
                KafkaError(code, f"topic {topic!r}: {metadata.error.str() if metadata is not None and metadata.error is not None else 'does not exist'}")
            )
        partitions += [(topic, partition) for partition in sorted(metadata.partitions)]
    return partitions


def plan_offset_reset(admin: AdminClient, group_id: str, *, topics: list[str], to: ResetTarget, timeout: float) -> list[OffsetChange]:
    """The dry run of resetting ``group_id``'s offsets on ``topics`` (every partition of each).

    ``to``: ``"earliest"``, ``"latest"``, ``("timestamp", ms)`` (the first offset whose
    timestamp is >= ms; the end of the partition when there is none) or
    ``{(topic, partition): offset}`` (those partitions only, each offset clamped to the
    partition's earliest..latest, as kafka-consumer-groups.sh does; their topics must be
    among ``topics`` when ``topics`` is not empty). Nothing is written.
    """
    _check_target(to)
    if not _is_list_of_names(topics):
        raise ValueError("topics must be a list of topic names")
    if not topics and not isinstance(to, Mapping):
        raise ValueError("name at least one topic to reset")
    deadline = _Deadline(timeout)
    if isinstance(to, Mapping):
        outside = sorted({topic for topic, _ in to if topics and topic not in topics})
        if outside:
            raise ValueError(f"reset offsets name topics that are not being reset: {', '.join(outside)}")
        known = set(_topic_partitions(admin, sorted({topic for topic, _ in to}), deadline))
        missing = sorted(key for key in to if key not in known)
        if missing:
            raise KafkaException(
                KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"no such partition: {', '.join(f'{topic} [{partition}]' for topic, partition in missing)}")
            )
        partitions = sorted(to)
    else:
        partitions = _topic_partitions(admin, topics, deadline)
    current = _committed(admin, group_id, [TopicPartition(topic, partition) for topic, partition in partitions], deadline)
    if to == "earliest":
        new = _offsets(admin, partitions, OffsetSpec.earliest(), deadline, strict=True)
    elif to == "latest":
        new = _offsets(admin, partitions, OffsetSpec.latest(), deadline, strict=True)
    elif isinstance(to, tuple):
        at_time = _offsets(admin, partitions, OffsetSpec.for_timestamp(to[1]), deadline, strict=True)
        latest = _offsets(admin, [key for key, offset in at_time.items() if offset < 0], OffsetSpec.latest(), deadline, strict=True)
        new = {key: offset if offset >= 0 else latest[key] for key, offset in at_time.items()}
    elif isinstance(to, Mapping):
        earliest = _offsets(admin, partitions, OffsetSpec.earliest(), deadline, strict=True)
        latest = _offsets(admin, partitions, OffsetSpec.latest(), deadline, strict=True)
        new = {key: min(max(to[key], earliest[key]), latest[key]) for key in partitions}
    else:  # _check_target above lets no other target through
        raise ValueError(f"unknown reset target {to!r}")
    return [OffsetChange(topic, partition, current.get((topic, partition), -1), new[(topic, partition)]) for topic, partition in partitions]


def apply_offset_reset(admin: AdminClient, group_id: str, changes: list[OffsetChange], *, timeout: float) -> None:
    """Commit each change's ``new_offset`` for ``group_id`` (a plan from :func:`plan_offset_reset`).

    Raises KafkaException when the coordinator refuses: the group has members (nothing is
    written), or a partition was refused (its error names it).
    """
    if not changes:
        raise ValueError("the reset plan is empty: there is nothing to apply")
    deadline = _Deadline(timeout)
    request = ConsumerGroupTopicPartitions(group_id, [TopicPartition(change.topic, change.partition, change.new_offset) for change in changes])
    result = deadline.result(admin.alter_consumer_group_offsets([request], request_timeout=deadline.remaining())[group_id])
    for tp in result.topic_partitions or []:
        if tp.error is not None:
            raise KafkaException(KafkaError(tp.error.code(), f"group {group_id!r}, {tp.topic} [{tp.partition}]: {tp.error.str()}"))

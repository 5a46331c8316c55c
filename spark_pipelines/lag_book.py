"""The evaluator's memory, as Burrow keeps it: a window of commits per group-partition and a
ring of recent end offsets per partition, evaluated on demand with Burrow's rules
(:mod:`spark_pipelines.transforms.lag_rules`) and Weir's trends (:mod:`spark_pipelines.lag_trends`).

- :meth:`LagBook.apply` stores a visible commit (:mod:`spark_pipelines.lag_offsets_log`) with
  Burrow's storage rule, its lag against the partition's latest observed end offset. A commit
  of a partition never observed yet is *held* until :meth:`LagBook.observe` brings the first
  end offset, then stored with the lag against it (an upper bound, so a new partition's first
  evaluation is never optimistic; Burrow drops such commits). A tombstone forgets the window.
- :meth:`LagBook.observe` appends one end offset to the partition's ring (``window_size``
  observations: with one observation per refresh that is Burrow's ``intervals`` x
  ``offset-refresh``, the recent-lag-zero test's horizon) and records the log start offset and
  the topic's ``retention.ms`` for the trends.
- :meth:`LagBook.evaluate` gives one :class:`PartitionEvaluation` per window and one
  :class:`GroupEvaluation` per group (Burrow's group status: the worst partition, with STOP,
  STALL and REWIND as ERROR).

Windows changed since :meth:`LagBook.take_changed_windows` are tracked, so that the evaluator
persists only those (:meth:`window_document` / :meth:`load_window`). Pure: no I/O, time passed in.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from spark_pipelines import lag_trends
from spark_pipelines.lag_offsets_log import Commit, GroupPartition
from spark_pipelines.transforms.lag_rules import (
    DEFAULT_MIN_DISTANCE_MS,
    DEFAULT_MINIMUM_COMPLETE,
    DEFAULT_WINDOW_SIZE,
    OK,
    SEVERITY,
    CommitEntry,
    LagRuleError,
    evaluate_partition_status,
    group_status,
    lag_at,
    store_commit,
)

Partition = tuple[str, str, int]  # (tenant id, topic, partition)
RETENTION_SEVERITY = {status: rank for rank, status in enumerate(lag_trends.RETENTION_STATUSES)}


@dataclass(frozen=True)
class BookSettings:
    """Burrow's knobs (``intervals``, ``min-distance``, ``minimum-complete``, ``allowed-lag``) and the retention-risk horizon."""

    window_size: int = DEFAULT_WINDOW_SIZE
    min_distance_ms: int = DEFAULT_MIN_DISTANCE_MS
    minimum_complete: float = DEFAULT_MINIMUM_COMPLETE
    allowed_lag: int = 0
    risk_horizon_seconds: float = lag_trends.DEFAULT_RISK_HORIZON_SECONDS

    def __post_init__(self) -> None:
        if self.window_size < 1:
            raise LagRuleError(f"the window size must be at least 1, got {self.window_size}")
        if self.min_distance_ms < 0 or self.allowed_lag < 0 or self.risk_horizon_seconds < 0:
            raise LagRuleError("min-distance, allowed-lag and the retention risk horizon must not be negative")


@dataclass(frozen=True)
class PartitionFacts:
    """What the brokers said of a partition at the latest poll; None where they could not tell."""

    end_offset: int | None
    log_start_offset: int | None
    retention_ms: int | None = None


@dataclass(frozen=True)
class PartitionEvaluation:
    """One group-partition now. ``offset_lag`` is -1 while the end offset is unknown."""

    tenant_id: str
    group: str
    topic: str
    partition: int
    committed_offset: int
    end_offset: int | None
    log_start_offset: int | None
    offset_lag: int
    time_lag_seconds: float | None
    status: str
    last_commit_ms: int
    lag_rate: float | None
    catch_up_seconds: float | None
    retention_seconds: float | None
    retention_status: str

    @property
    def next_offset(self) -> int:
        return next_offset(self.committed_offset, self.log_start_offset)


@dataclass(frozen=True)
class GroupEvaluation:
    """One group now: Burrow's group status and the rolled-up figures of its partitions."""

    tenant_id: str
    group: str
    status: str
    max_lag: int
    total_lag: int
    max_time_lag_seconds: float | None
    partition_count: int
    worst_topic: str
    worst_partition: int | None
    worst_status: str
    lag_rate: float | None
    catch_up_seconds: float | None
    retention_seconds: float | None
    retention_status: str

    @property
    def retention_risk(self) -> bool:
        return self.retention_status != lag_trends.RETENTION_OK


def next_offset(committed_offset: int, log_start_offset: int | None) -> int:
    """Where the group's next record is: the committed offset, or the log start when that is higher."""
    return committed_offset if log_start_offset is None else max(committed_offset, log_start_offset)


@dataclass
class _Window:
    entries: list[CommitEntry] = field(default_factory=list)
    last_commit_ms: int = 0


class LagBook:
    """See the module docstring."""

    def __init__(self, settings: BookSettings | None = None) -> None:
        self.settings = settings or BookSettings()
        self._windows: dict[GroupPartition, _Window] = {}
        self._held: dict[GroupPartition, list[Commit]] = {}
        self._rings: dict[Partition, deque[int]] = {}
        self._facts: dict[Partition, PartitionFacts] = {}
        self._changed: set[GroupPartition] = set()
        self._forgotten: set[GroupPartition] = set()

    # ------------------------------------------------------------------ input

    def apply(self, commit: Commit) -> None:
        key = commit.key
        if commit.offset is None:
            self._held.pop(key, None)
            if self._windows.pop(key, None) is not None:
                self._forgotten.add(key)
                self._changed.discard(key)
            return
        ring = self._rings.get(_partition(key))
        if not ring:
            self._held.setdefault(key, []).append(commit)
            return
        self._store(commit, ring[-1])

    def observe(self, partition: Partition, facts: PartitionFacts) -> None:
        self._facts[partition] = facts
        if facts.end_offset is None:
            return
        ring = self._rings.setdefault(partition, deque(maxlen=self.settings.window_size))
        ring.append(facts.end_offset)
        for key in [key for key in self._held if _partition(key) == partition]:
            for commit in self._held.pop(key):
                self._store(commit, facts.end_offset)

    def forget_partition(self, partition: Partition) -> None:
        """The partition's topic was deleted: its windows, held commits and observations go (Burrow's ``deleteTopic``)."""
        self._rings.pop(partition, None)
        self._facts.pop(partition, None)
        for key in [key for key in self._held if _partition(key) == partition]:
            del self._held[key]
        for key in [key for key in self._windows if _partition(key) == partition]:
            del self._windows[key]
            self._forgotten.add(key)
            self._changed.discard(key)

    def _store(self, commit: Commit, end_offset: int) -> None:
        assert commit.offset is not None and commit.timestamp_ms is not None
        window = self._windows.setdefault(commit.key, _Window())
        entry = CommitEntry(commit.offset, commit.timestamp_ms, commit.order, lag_at(end_offset, commit.offset))
        stored = store_commit(window.entries, entry, window_size=self.settings.window_size, min_distance_ms=self.settings.min_distance_ms)
        if stored != window.entries:
            window.entries = stored
            window.last_commit_ms = max(window.last_commit_ms, commit.timestamp_ms)
            self._changed.add(commit.key)
            self._forgotten.discard(commit.key)

    # ------------------------------------------------------------------ what to ask the brokers

    def partitions(self) -> set[Partition]:
        """Every partition a window or a held commit names: the ones to poll."""
        return {_partition(key) for key in self._windows} | {_partition(key) for key in self._held}

    def wanted_timestamps(self) -> set[tuple[Partition, int]]:
        """(partition, next offset) of every lagging window: the records whose timestamps give the time lag and the retention clock."""
        wanted = set()
        for key, window in self._windows.items():
            partition = _partition(key)
            facts = self._facts.get(partition)
            if facts is None or facts.end_offset is None:
                continue
            offset = next_offset(window.entries[-1].offset, facts.log_start_offset)
            if offset < facts.end_offset:
                wanted.add((partition, offset))
        return wanted

    # ------------------------------------------------------------------ evaluation

    def evaluate(self, now_ms: int, timestamps: Mapping[tuple[Partition, int], int]) -> tuple[list[PartitionEvaluation], list[GroupEvaluation]]:
        """Every window and group now; ``timestamps`` maps (partition, offset) to the timestamp of the first record at or after it."""
        partitions = [self._evaluate_window(key, window, now_ms, timestamps) for key, window in sorted(self._windows.items())]
        by_group: dict[tuple[str, str], list[PartitionEvaluation]] = {}
        for evaluation in partitions:
            by_group.setdefault((evaluation.tenant_id, evaluation.group), []).append(evaluation)
        return partitions, [roll_up(tenant_id, group, rows) for (tenant_id, group), rows in by_group.items()]

    def _evaluate_window(self, key: GroupPartition, window: _Window, now_ms: int, timestamps: Mapping[tuple[Partition, int], int]) -> PartitionEvaluation:
        settings = self.settings
        partition = _partition(key)
        facts = self._facts.get(partition, PartitionFacts(None, None))
        entries = window.entries
        committed = entries[-1].offset
        offset_lag = -1 if facts.end_offset is None else max(facts.end_offset - committed, 0)
        status = evaluate_partition_status(
            entries,
            list(self._rings.get(partition, ())),
            max(offset_lag, 0),
            now_ms,
            window_size=settings.window_size,
            minimum_complete=settings.minimum_complete,
            allowed_lag=settings.allowed_lag,
        )
        timestamp_ms = timestamps.get((partition, next_offset(committed, facts.log_start_offset)))
        if offset_lag == 0:
            time_lag: float | None = 0.0
        elif offset_lag < 0 or timestamp_ms is None:
            time_lag = None
        else:
            time_lag = max((now_ms - timestamp_ms) / 1000.0, 0.0)
        rate = None
        catch_up = None
        if offset_lag >= 0:
            points = [(entry.timestamp_ms, entry.lag) for entry in entries if entry.lag is not None]
            rate = lag_trends.lag_rate([*points, (now_ms, offset_lag)])
            catch_up = lag_trends.catch_up_seconds(offset_lag, rate)
        seconds_left = lag_trends.retention_seconds(
            committed_offset=committed,
            log_start_offset=facts.log_start_offset,
            next_record_timestamp_ms=timestamp_ms if offset_lag > 0 else None,
            retention_ms=facts.retention_ms,
            now_ms=now_ms,
        )
        retention = lag_trends.retention_status(
            offset_lag=offset_lag,
            committed_offset=committed,
            log_start_offset=facts.log_start_offset,
            seconds_left=seconds_left,
            catch_up=catch_up,
            horizon_seconds=settings.risk_horizon_seconds,
        )
        tenant_id, group, topic, number = key
        return PartitionEvaluation(
            tenant_id,
            group,
            topic,
            number,
            committed,
            facts.end_offset,
            facts.log_start_offset,
            offset_lag,
            time_lag,
            status,
            window.last_commit_ms,
            rate,
            catch_up,
            seconds_left,
            retention,
        )

    # ------------------------------------------------------------------ persistence

    def take_changed_windows(self) -> tuple[dict[GroupPartition, dict[str, Any]], set[GroupPartition]]:
        """(documents of the windows changed since the last call, keys of windows forgotten since), and start tracking afresh."""
        changed = {key: self.window_document(key) for key in self._changed if key in self._windows}
        forgotten = set(self._forgotten)
        self._changed.clear()
        self._forgotten.clear()
        return changed, forgotten

    def window_document(self, key: GroupPartition) -> dict[str, Any]:
        window = self._windows[key]
        return {
            "last_commit_ms": window.last_commit_ms,
            "commits": [[entry.offset, entry.timestamp_ms, entry.commit_order, entry.lag] for entry in window.entries],
        }

    def load_window(self, key: GroupPartition, document: Mapping[str, Any]) -> None:
        """A window as :meth:`window_document` wrote it (cut to the newest ``window_size`` commits); ValueError naming the key when malformed."""
        commits = document.get("commits")
        last_commit_ms = document.get("last_commit_ms")
        if not isinstance(commits, list) or not commits or not isinstance(last_commit_ms, int):
            raise ValueError(f"the saved window of {key} has no commits or no last_commit_ms: {dict(document)!r}"[:300])
        entries = []
        for entry in commits[-self.settings.window_size :]:
            if not isinstance(entry, list) or len(entry) != 4 or not all(isinstance(value, int) for value in entry[:3]):
                raise ValueError(f"a saved commit of {key} is not [offset, timestamp_ms, order, lag]: {entry!r}"[:300])
            entries.append(CommitEntry(entry[0], entry[1], entry[2], entry[3] if isinstance(entry[3], int) else None))
        self._windows[key] = _Window(entries, last_commit_ms)

    def window_count(self) -> int:
        return len(self._windows)


def roll_up(tenant_id: str, group: str, rows: Iterable[PartitionEvaluation]) -> GroupEvaluation:
    """One group's evaluation from its partitions' (see :class:`GroupEvaluation`)."""
    rows = list(rows)
    known = [row for row in rows if row.offset_lag >= 0]
    worst = min(rows, key=lambda row: (-SEVERITY[row.status], -row.offset_lag, row.topic, row.partition), default=None)
    time_lags = [row.time_lag_seconds for row in rows if row.time_lag_seconds is not None]
    rates = [row.lag_rate for row in known if row.lag_rate is not None]
    lagging = [row for row in known if row.offset_lag > 0]
    catch_ups = [row.catch_up_seconds for row in lagging]
    if not lagging:
        catch_up: float | None = 0.0 if known else None
    elif any(value is None for value in catch_ups):
        catch_up = None
    else:
        catch_up = max(value for value in catch_ups if value is not None)
    retention_left = [row.retention_seconds for row in rows if row.retention_seconds is not None]
    return GroupEvaluation(
        tenant_id=tenant_id,
        group=group,
        status=group_status([row.status for row in rows]) if rows else OK,
        max_lag=max((row.offset_lag for row in known), default=0),
        total_lag=sum(row.offset_lag for row in known),
        max_time_lag_seconds=max(time_lags, default=None),
        partition_count=len(rows),
        worst_topic=worst.topic if worst else "",
        worst_partition=worst.partition if worst else None,
        worst_status=worst.status if worst else "",
        lag_rate=sum(rates) if rates else None,
        catch_up_seconds=catch_up,
        retention_seconds=min(retention_left, default=None),
        retention_status=max((row.retention_status for row in rows), key=RETENTION_SEVERITY.__getitem__, default=lag_trends.RETENTION_OK),
    )


def _partition(key: GroupPartition) -> Partition:
    tenant_id, _, topic, partition = key
    return (tenant_id, topic, partition)

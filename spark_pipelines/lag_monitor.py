"""The lag evaluator: consumer lag and Burrow's status within seconds of a commit, continuously.

``python -m spark_pipelines.lag_monitor`` (``make up`` starts it as a child; deploy/ has its
process lines). One long-running process, no Spark:

1. At start it loads its cursor (next offset per ``__consumer_offsets`` partition, pending
   transactional commits) and every saved window (``webapp.metering.writer.load_lag_monitor_state``).
2. Every round (``WEIR_LAG_REFRESH_SECONDS``, 2 s by default) it reads what is new in every
   ``__consumer_offsets`` partition through the SDK with the internal token, at read_uncommitted,
   applying transaction markers as the group coordinator does
   (:mod:`spark_pipelines.lag_offsets_tail`, :mod:`spark_pipelines.lag_offsets_log`), and stores
   each visible commit in its group-partition's window (:mod:`spark_pipelines.lag_book`).
3. It asks the brokers for the end and log start offsets of every partition a window names
   (per tenant, one ListOffsets per leader and spec, :class:`spark_pipelines.lag_brokers.TenantAdmins`),
   appends them to the partitions' rings, and (every ``WEIR_LAG_RETENTION_REFRESH_SECONDS``) the
   topics' ``retention.ms``. Deleted topics' windows are forgotten.
4. It fetches the timestamp of the next unconsumed record of each lagging group-partition it
   has not fetched yet (at most ``WEIR_LAG_TIME_LAG_FETCH_LIMIT`` a round; a record's timestamp
   never changes, so each is fetched once).
5. It evaluates every window (Burrow's rules, :mod:`spark_pipelines.transforms.lag_rules`;
   trends, :mod:`spark_pipelines.lag_trends`) and writes only what changed
   (``write_lag_changes``: upserts, deletes of forgotten groups, a history point per group each
   ``WEIR_LAG_HISTORY_SECONDS`` and at each status change); every ``WEIR_LAG_TOUCH_SECONDS`` one
   UPDATE per table marks the unchanged rows as evaluated (``touch_lag``), so the API's
   ``stale`` flag means the evaluator stopped.
6. It saves the windows that changed and the cursor, in one transaction, after the results: a
   restart re-reads at most one round of commits, which the windows drop as re-reads.

Settings (environment, :meth:`MonitorOptions.from_env`), besides the pipelines' own
(``WEIR_BOOTSTRAP_SERVERS``, ``WEIR_INTERNAL_TOKEN`` / ``WEIR_DATA_DIR``, ``WEIR_BROKER_TLS_CA``):

=====================================  =======  ==================================================
WEIR_LAG_REFRESH_SECONDS               2        a round: offsets polled, windows evaluated, written
WEIR_LAG_WINDOW_SIZE                   10       commits per window and end offsets per ring
                                                (Burrow's ``intervals``)
WEIR_LAG_MIN_DISTANCE_SECONDS          0        Burrow's ``min-distance``
WEIR_LAG_MINIMUM_COMPLETE              0        Burrow's ``minimum-complete``
WEIR_LAG_ALLOWED_LAG                   0        lag up to this many records counts as none
                                                (Burrow's ``allowed-lag``)
WEIR_LAG_RETENTION_RISK_SECONDS        3600     AT_RISK when retention deletes unread records
                                                within this long (or before the group catches up)
WEIR_LAG_RETENTION_REFRESH_SECONDS     300      how often topics' ``retention.ms`` is asked again
WEIR_LAG_TIME_LAG_FETCH_LIMIT          200      next-record timestamps fetched per round
WEIR_LAG_BROKER_TIMEOUT_SECONDS        5        deadline of each broker lookup
WEIR_LAG_TOUCH_SECONDS                 30       how often unchanged rows are marked evaluated
WEIR_LAG_HISTORY_SECONDS               60       a history point per group this often
=====================================  =======  ==================================================

Precondition: one evaluator per control-plane database (it holds every group's window).
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any

from spark_pipelines import lag_brokers
from spark_pipelines.lag_book import BookSettings, GroupEvaluation, LagBook, Partition, PartitionEvaluation, PartitionFacts
from spark_pipelines.lag_offsets_log import OffsetsLogReplica
from spark_pipelines.lag_offsets_tail import OffsetsTail
from spark_pipelines.settings import PipelineSettings, internal_source_options
from spark_pipelines.source_options import build_client_config
from webapp.metering import writer

logger = logging.getLogger("weir.lag_monitor")

STATE_VERSION = 1


class InvalidMonitorOptionError(ValueError):
    """An environment variable of the lag evaluator holds a value it cannot use; the message names it."""

    retriable = False

    def __init__(self, variable: str, value: str, expected: str) -> None:
        super().__init__(f"{variable}={value!r}: expected {expected}")
        self.variable = variable
        self.value = value


@dataclass(frozen=True)
class MonitorOptions:
    """The evaluator's tunables (see the module docstring for their variables and meaning)."""

    refresh_seconds: float = 2.0
    window_size: int = 10
    min_distance_seconds: float = 0.0
    minimum_complete: float = 0.0
    allowed_lag: int = 0
    retention_risk_seconds: float = 3600.0
    retention_refresh_seconds: float = 300.0
    time_lag_fetch_limit: int = 200
    broker_timeout_seconds: float = 5.0
    touch_seconds: float = 30.0
    history_seconds: float = 60.0

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> MonitorOptions:
        env = os.environ if environ is None else environ
        defaults = cls()

        def number(variable: str, default: float, low: float, high: float, integer: bool = False) -> Any:
            raw = env.get(variable)
            if raw is None or not raw.strip():
                return default
            try:
                value = int(raw) if integer else float(raw)
            except ValueError:
                value = None
            if value is None or not low <= value <= high:
                raise InvalidMonitorOptionError(variable, raw, f"{'an integer' if integer else 'a number'} from {low:g} to {high:g}")
            return value

        return cls(
            refresh_seconds=number("WEIR_LAG_REFRESH_SECONDS", defaults.refresh_seconds, 0.1, 600),
            window_size=number("WEIR_LAG_WINDOW_SIZE", defaults.window_size, 1, 1000, integer=True),
            min_distance_seconds=number("WEIR_LAG_MIN_DISTANCE_SECONDS", defaults.min_distance_seconds, 0, 86_400),
            minimum_complete=number("WEIR_LAG_MINIMUM_COMPLETE", defaults.minimum_complete, 0, 1),
            allowed_lag=number("WEIR_LAG_ALLOWED_LAG", defaults.allowed_lag, 0, 2**62, integer=True),
            retention_risk_seconds=number("WEIR_LAG_RETENTION_RISK_SECONDS", defaults.retention_risk_seconds, 0, 365 * 86_400),
            retention_refresh_seconds=number("WEIR_LAG_RETENTION_REFRESH_SECONDS", defaults.retention_refresh_seconds, 1, 86_400),
            time_lag_fetch_limit=number("WEIR_LAG_TIME_LAG_FETCH_LIMIT", defaults.time_lag_fetch_limit, 0, 100_000, integer=True),
            broker_timeout_seconds=number("WEIR_LAG_BROKER_TIMEOUT_SECONDS", defaults.broker_timeout_seconds, 0.1, 600),
            touch_seconds=number("WEIR_LAG_TOUCH_SECONDS", defaults.touch_seconds, 1, 3600),
            history_seconds=number("WEIR_LAG_HISTORY_SECONDS", defaults.history_seconds, 1, 86_400),
        )

    def book_settings(self) -> BookSettings:
        return BookSettings(
            window_size=self.window_size,
            min_distance_ms=int(self.min_distance_seconds * 1000),
            minimum_complete=self.minimum_complete,
            allowed_lag=self.allowed_lag,
            risk_horizon_seconds=self.retention_risk_seconds,
        )


def partition_row(evaluation: PartitionEvaluation) -> dict[str, Any]:
    """A partition evaluation as ``write_lag_changes`` takes it."""
    row = asdict(evaluation)
    row["retention_risk"] = evaluation.retention_status != "OK"
    row["last_commit_at"] = datetime.fromtimestamp(row.pop("last_commit_ms") / 1000, tz=UTC)
    return row


def group_row(evaluation: GroupEvaluation) -> dict[str, Any]:
    """A group evaluation as ``write_lag_changes`` takes it."""
    row = asdict(evaluation)
    row["retention_risk"] = evaluation.retention_risk
    row["worst_partition"] = {"topic": row.pop("worst_topic"), "partition": row.pop("worst_partition"), "status": row.pop("worst_status")}
    return row


def _rounded(value: float | None, digits: int) -> float | None:
    return None if value is None else round(value, digits)


def partition_signature(row: PartitionEvaluation) -> tuple:
    """What decides whether a partition row changed: every value, time lag and seconds to the
    second and rates to the hundredth (they move a little every round)."""
    return (
        row.committed_offset,
        row.end_offset,
        row.log_start_offset,
        row.offset_lag,
        _rounded(row.time_lag_seconds, 0),
        row.status,
        row.last_commit_ms,
        _rounded(row.lag_rate, 2),
        _rounded(row.catch_up_seconds, 0),
        _rounded(row.retention_seconds, 0),
        row.retention_status,
    )


def group_signature(row: GroupEvaluation) -> tuple:
    """What decides whether a group row changed (see :func:`partition_signature`)."""
    return (
        row.status,
        row.max_lag,
        row.total_lag,
        _rounded(row.max_time_lag_seconds, 0),
        row.partition_count,
        row.worst_topic,
        row.worst_partition,
        row.worst_status,
        _rounded(row.lag_rate, 2),
        _rounded(row.catch_up_seconds, 0),
        _rounded(row.retention_seconds, 0),
        row.retention_status,
    )


class LagMonitor:
    """One evaluator (see the module docstring). ``clock`` gives seconds since the epoch."""

    def __init__(self, client_config: Mapping[str, Any], options: MonitorOptions | None = None, *, clock: Callable[[], float] = time.time) -> None:
        self.client_config = dict(client_config)
        self.options = options or MonitorOptions()
        self.clock = clock
        self.book = LagBook(self.options.book_settings())
        self.replica = OffsetsLogReplica()
        self._tail: OffsetsTail | None = None
        self._admins = lag_brokers.TenantAdmins(self.client_config, timeout_seconds=self.options.broker_timeout_seconds)
        self._timestamps: dict[tuple[Partition, int], int] = {}
        self._retention: dict[tuple[str, str], int | None] = {}
        self._retention_asked = 0.0
        self._written_partitions: dict[tuple[str, str, str, int], tuple] = {}
        self._written_groups: dict[tuple[str, str], tuple] = {}
        self._group_status: dict[tuple[str, str], str] = {}
        self._history_at: dict[tuple[str, str], float] = {}
        self._touched_at = 0.0
        self._saved_cursor: dict[int, int] = {}
        self.rounds = 0

    def start(self) -> None:
        """Load the saved cursor and windows, and open the reader of ``__consumer_offsets``."""
        document, windows = writer.load_lag_monitor_state()
        if document and document.get("version") != STATE_VERSION:
            raise ValueError(f"the lag monitor's saved state has version {document.get('version')!r}, expected {STATE_VERSION}")
        for key, window in windows:
            self.book.load_window(key, window)
        self.replica = OffsetsLogReplica.from_document(document.get("pending"))
        cursor = {int(partition): int(offset) for partition, offset in (document.get("offsets") or {}).items()}
        self._saved_cursor = dict(cursor)
        self._tail = OffsetsTail(self.client_config, cursor, self.replica)
        logger.info("lag monitor: resumed %d windows, cursor %s, %d pending transactional commits", len(windows), cursor, self.replica.pending_count())

    def close(self) -> None:
        if self._tail is not None:
            self._tail.close()
            self._tail = None
        self._admins.close()

    def round(self, read_seconds: float) -> dict[str, Any]:
        """One round (steps 2-6 of the module docstring), reading ``__consumer_offsets`` for up to ``read_seconds``; returns what it did."""
        assert self._tail is not None, "start() first"
        writer.close_broken_connections()
        read_until = time.monotonic() + read_seconds
        commits = 0
        while True:
            visible = self._tail.poll(timeout=max(min(read_until - time.monotonic(), 0.5), 0.0))
            for commit in visible:
                self.book.apply(commit)
            commits += len(visible)
            if time.monotonic() >= read_until:
                break
        now = self.clock()
        now_ms = int(now * 1000)
        self._observe(now)
        self._fetch_timestamps()
        partitions, groups = self.book.evaluate(now_ms, self._timestamps)
        written = self._write(now, partitions, groups)
        self._save()
        self.rounds += 1
        return {"commits": commits, "partitions": len(partitions), "groups": len(groups), "written": written}

    def _observe(self, now: float) -> None:
        keys = sorted(self.book.partitions())
        if not keys:
            return
        topics = {(tenant_id, topic) for tenant_id, topic, _ in keys}
        if now - self._retention_asked >= self.options.retention_refresh_seconds or not topics <= set(self._retention):
            self._retention = self._admins.retention_ms(topics)
            self._retention_asked = now
        for item in self._admins.partition_offsets(keys):
            partition = (item.tenant_id, item.topic, item.partition)
            if item.deleted:
                self.book.forget_partition(partition)
            else:
                self.book.observe(partition, PartitionFacts(item.end_offset, item.log_start_offset, self._retention.get((item.tenant_id, item.topic))))

    def _fetch_timestamps(self) -> None:
        wanted = self.book.wanted_timestamps()
        self._timestamps = {key: value for key, value in self._timestamps.items() if key in wanted}
        missing = sorted(wanted - set(self._timestamps))[: self.options.time_lag_fetch_limit]
        if not missing:
            return
        requests = [(tenant_id, topic, partition, offset) for (tenant_id, topic, partition), offset in missing]
        for found in lag_brokers.next_record_timestamps(self.client_config, requests, timeout_seconds=self.options.broker_timeout_seconds):
            self._timestamps[((found.tenant_id, found.topic, found.partition), found.offset)] = found.timestamp_ms

    def _write(self, now: float, partitions: list[PartitionEvaluation], groups: list[GroupEvaluation]) -> int:
        partition_signatures = {(row.tenant_id, row.group, row.topic, row.partition): (row, partition_signature(row)) for row in partitions}
        group_signatures = {(row.tenant_id, row.group): (row, group_signature(row)) for row in groups}
        changed_partitions = {key: item for key, item in partition_signatures.items() if self._written_partitions.get(key) != item[1]}
        changed_groups = {key: item for key, item in group_signatures.items() if self._written_groups.get(key) != item[1]}
        removed_partitions = [key for key in self._written_partitions if key not in partition_signatures]
        removed_groups = [key for key in self._written_groups if key not in group_signatures]
        group_rows = {
            key: group_row(row)
            for key, (row, _) in group_signatures.items()
            if key in changed_groups or self._group_status.get(key) != row.status or now - self._history_at.get(key, 0.0) >= self.options.history_seconds
        }
        history = [
            row
            for key, row in group_rows.items()
            if self._group_status.get(key) != row["status"] or now - self._history_at.get(key, 0.0) >= self.options.history_seconds
        ]
        if not (changed_partitions or changed_groups or removed_partitions or removed_groups or history):
            if now - self._touched_at >= self.options.touch_seconds:
                writer.touch_lag(datetime.fromtimestamp(now, tz=UTC))
                self._touched_at = now
            return 0
        evaluated_at = datetime.fromtimestamp(now, tz=UTC)
        written = writer.write_lag_changes(
            evaluated_at,
            [partition_row(row) for row, _ in changed_partitions.values()],
            [group_rows[key] for key in changed_groups],
            removed_partitions=removed_partitions,
            removed_groups=removed_groups,
            history=history,
        )
        for partition_key, (_, signature) in changed_partitions.items():
            self._written_partitions[partition_key] = signature
        for group_key, (_, signature) in changed_groups.items():
            self._written_groups[group_key] = signature
        for partition_key in removed_partitions:
            del self._written_partitions[partition_key]
        for group_key in removed_groups:
            del self._written_groups[group_key]
            self._group_status.pop(group_key, None)
            self._history_at.pop(group_key, None)
        for row in history:
            group_key = (row["tenant_id"], row["group"])
            self._group_status[group_key] = row["status"]
            self._history_at[group_key] = now
        if now - self._touched_at >= self.options.touch_seconds:
            writer.touch_lag(evaluated_at)
            self._touched_at = now
        return written

    def _save(self) -> None:
        assert self._tail is not None
        changed, removed = self.book.take_changed_windows()
        cursor = dict(self._tail.cursor)
        if not changed and not removed and cursor == self._saved_cursor:
            return
        document = {
            "version": STATE_VERSION,
            "offsets": {str(partition): offset for partition, offset in sorted(cursor.items())},
            "pending": self.replica.to_document(),
        }
        writer.save_lag_monitor_state(document, changed, removed)
        self._saved_cursor = cursor

    def run(self, stop: threading.Event) -> None:
        """Rounds every ``refresh_seconds`` until ``stop`` is set; a failed round is logged and the next one tries again."""
        while not stop.is_set():
            started = time.monotonic()
            try:
                self.round(read_seconds=self.options.refresh_seconds * 0.5)
            except Exception:  # noqa: BLE001 - one bad round (a broker away, the database restarting) must not end the evaluator
                logger.exception("lag monitor: a round failed; trying again in %.1f s", self.options.refresh_seconds)
            stop.wait(max(self.options.refresh_seconds - (time.monotonic() - started), 0.0))


def client_config_from_env(environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The SDK configuration of the evaluator: bootstrap, the internal token and, with TLS, the CA (the pipelines' settings)."""
    options = internal_source_options(PipelineSettings.from_env(environ))
    return build_client_config({key.lower(): value for key, value in options.items()})


def main() -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        options = MonitorOptions.from_env()
        config = client_config_from_env()
    except (InvalidMonitorOptionError, ValueError, RuntimeError) as error:
        print(f"lag monitor: {error}", file=sys.stderr)
        return 2
    stop = threading.Event()
    for signal_number in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signal_number, lambda *_: stop.set())
    monitor = LagMonitor(config, options)
    deadline = time.monotonic() + 120
    while not stop.is_set():
        try:
            monitor.start()
            break
        except Exception as error:  # noqa: BLE001 - the brokers or the database may still be starting
            if time.monotonic() > deadline:
                print(f"lag monitor: cannot start: {error}", file=sys.stderr)
                return 1
            logger.warning("lag monitor: not started yet (%s); trying again", error)
            stop.wait(2.0)
    try:
        monitor.run(stop)
    finally:
        monitor.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

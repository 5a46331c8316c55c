"""The message browser's scan of a topic: which records match a filter, read partition by
partition in chunks within a byte and time budget, and merged into one list.

Pure logic: records come from a :class:`ChunkReader` (``webapp.dashboard.data_plane`` reads
them from the brokers; tests pass lists) and time from an injected clock, so every rule here
is checked without a broker.

How a scan walks the partitions:

* **newest first** starts at each partition's high watermark and reads backwards, one chunk of
  at most ``CHUNK_RECORDS`` offsets at a time;
* **forward** (from the beginning, an offset, a time, or the positions of a live tail) reads
  from each partition's start offset up to its high watermark taken when the scan began.

Partitions take turns chunk by chunk, so one busy partition cannot spend the whole budget. A
partition stops once it holds ``limit`` matches (no record further away can be in the first
``limit`` of the merge) or has nothing left; the scan stops when every partition has stopped,
or when the budget is spent, and then says so. The matches are merged by timestamp (ties by
partition, then offset) or grouped by partition.

JSON paths are a small documented subset of JSONPath (RFC 9535): ``$`` followed by
``.name``, ``['name']`` / ``["name"]`` and ``[index]`` (negative counts from the end) steps,
e.g. ``$.order.items[0].sku``. Anything else is an :class:`InvalidFilter` naming what is wrong.
"""

from __future__ import annotations

import heapq
import json
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from webapp.dashboard.data_plane import BrowsedRecord

# Offsets read from one partition in one step of a scan.
CHUNK_RECORDS = 200
# Default budget of one scan: bytes of keys, values and headers read, and seconds spent.
DEFAULT_MAX_BYTES = 16 * 1024 * 1024
DEFAULT_MAX_SECONDS = 5.0
# A JSON path longer than this is refused (it is typed by a person).
MAX_JSON_PATH_LENGTH = 500

_NAME_STEP = re.compile(r"\.([A-Za-z_][A-Za-z0-9_\-]*)")
_QUOTED_STEP = re.compile(r"""\[(?:'((?:[^'\\]|\\.)*)'|"((?:[^"\\]|\\.)*)")\]""")
_INDEX_STEP = re.compile(r"\[(-?\d+)\]")


class InvalidFilter(ValueError):
    """A filter that cannot be evaluated; ``field`` names the form field, ``message`` is for the page."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


class Order(StrEnum):
    """How the matches of several partitions are put in one list."""

    TIMESTAMP = "timestamp"
    PARTITION = "partition"


class Direction(StrEnum):
    NEWEST_FIRST = "newest"
    FORWARD = "forward"


# ---------------------------------------------------------------------- JSON paths


_MISSING = object()


@dataclass(frozen=True)
class JsonPath:
    """A parsed JSON path: object keys (str) and array indexes (int), in order."""

    text: str
    steps: tuple[str | int, ...]

    @classmethod
    def parse(cls, text: str) -> JsonPath:
        """Parse ``text``; raises :class:`InvalidFilter` (field ``json_path``) naming the bad part."""
        text = text.strip()
        if len(text) > MAX_JSON_PATH_LENGTH:
            raise InvalidFilter("json_path", f"The JSON path is longer than {MAX_JSON_PATH_LENGTH} characters.")
        if not text.startswith("$"):
            raise InvalidFilter("json_path", "A JSON path starts with $ (for example $.order.id).")
        steps: list[str | int] = []
        position = 1
        while position < len(text):
            for pattern in (_NAME_STEP, _QUOTED_STEP, _INDEX_STEP):
                match = pattern.match(text, position)
                if match:
                    break
            else:
                raise InvalidFilter(
                    "json_path",
                    f"The JSON path is not valid at character {position + 1} ({text[position : position + 12]!r}): "
                    "use .name, ['name'] or [index] steps after $.",
                )
            if pattern is _INDEX_STEP:
                steps.append(int(match.group(1)))
            elif pattern is _QUOTED_STEP:
                quoted = match.group(1) if match.group(1) is not None else match.group(2)
                steps.append(re.sub(r"\\(.)", r"\1", quoted))
            else:
                steps.append(match.group(1))
            position = match.end()
        return cls(text, tuple(steps))

    def find(self, document: object) -> object:
        """The value at this path in ``document``, or the module's missing marker."""
        current = document
        for step in self.steps:
            if isinstance(step, int):
                if not isinstance(current, list) or not -len(current) <= step < len(current):
                    return _MISSING
                current = current[step]
            else:
                if not isinstance(current, dict) or step not in current:
                    return _MISSING
                current = current[step]
        return current


def parse_expected_json(text: str) -> object:
    """What a JSON path's value must equal: ``text`` read as JSON (``42``, ``true``, ``"42"``,
    ``null``), else the text itself as a string (so ``paid`` means ``"paid"``)."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def _json_equal(found: object, expected: object) -> bool:
    # JSON has one number type (1 == 1.0) but true is not 1.
    if isinstance(found, bool) or isinstance(expected, bool):
        return type(found) is type(expected) and found == expected
    return found == expected


# ---------------------------------------------------------------------- filters


@dataclass(frozen=True)
class RecordFilter:
    """What a record must hold to be shown; empty fields do not filter.

    ``key_contains`` / ``value_contains`` are case-sensitive substrings of the UTF-8 bytes;
    ``json_path`` with ``json_equals`` (a parsed value, see :func:`parse_expected_json`)
    requires the value to be JSON with that value at the path, and without it only that the
    path exists; ``header_name`` requires a header of that name (exact), whose value contains
    ``header_value`` when given; ``time_from_ms`` (inclusive) and ``time_to_ms`` (exclusive)
    bound the record's timestamp. Undecodable batches never match a filter that is set.
    """

    key_contains: str = ""
    value_contains: str = ""
    json_path: JsonPath | None = None
    json_equals: object = _MISSING
    header_name: str = ""
    header_value: str = ""
    time_from_ms: int | None = None
    time_to_ms: int | None = None

    @property
    def is_empty(self) -> bool:
        return self == RecordFilter()

    def matches(self, record: BrowsedRecord) -> bool:
        if record.is_error:
            return self.is_empty
        return (
            _contains(record.key, self.key_contains)
            and _contains(record.value, self.value_contains)
            and self._json_matches(record.value)
            and self._header_matches(record.headers)
            and self._time_matches(record.timestamp_ms)
        )

    def _json_matches(self, value: bytes | None) -> bool:
        if self.json_path is None:
            return True
        if value is None:
            return False
        try:
            document = json.loads(value)
        except ValueError:
            return False
        found = self.json_path.find(document)
        if found is _MISSING:
            return False
        return self.json_equals is _MISSING or _json_equal(found, self.json_equals)

    def _header_matches(self, headers: Sequence[tuple[str, bytes | None]]) -> bool:
        if not self.header_name:
            return True
        wanted = self.header_value.encode("utf-8")
        return any(name == self.header_name and (not wanted or (value is not None and wanted in value)) for name, value in headers)

    def _time_matches(self, timestamp_ms: int) -> bool:
        if self.time_from_ms is not None and timestamp_ms < self.time_from_ms:
            return False
        return self.time_to_ms is None or timestamp_ms < self.time_to_ms


def _contains(payload: bytes | None, needle: str) -> bool:
    if not needle:
        return True
    return payload is not None and needle.encode("utf-8") in payload


# ---------------------------------------------------------------------- budget


def record_size(record: BrowsedRecord) -> int:
    """Bytes a record costs the budget: its key, value, header names and values."""
    headers = sum(len(name) + len(value or b"") for name, value in record.headers)
    return len(record.key or b"") + len(record.value or b"") + headers


@dataclass
class Budget:
    """How much one scan may read: ``max_bytes`` of records and ``max_seconds`` from ``clock()``'s first reading."""

    max_bytes: int = DEFAULT_MAX_BYTES
    max_seconds: float = DEFAULT_MAX_SECONDS
    clock: Callable[[], float] = time.monotonic
    started: float | None = None
    bytes_read: int = 0
    records_read: int = 0

    def start(self) -> None:
        if self.started is None:
            self.started = self.clock()

    def charge(self, record: BrowsedRecord) -> None:
        self.records_read += 1
        self.bytes_read += record_size(record)

    def seconds_left(self) -> float:
        self.start()
        return max(0.0, self.max_seconds - (self.clock() - (self.started or 0.0)))

    def spent(self) -> str:
        """Which budget is spent ('' while neither is): ``bytes`` or ``time``."""
        if self.bytes_read >= self.max_bytes:
            return "bytes"
        if self.seconds_left() <= 0:
            return "time"
        return ""


# ---------------------------------------------------------------------- the scan


@dataclass(frozen=True)
class Chunk:
    """What a :class:`ChunkReader` read: records in offset order; ``complete`` when it reached
    the end of the range asked for (else time ran out after ``records``)."""

    records: list[BrowsedRecord]
    complete: bool


class ChunkReader(Protocol):
    def __call__(self, partition: int, first: int, end: int, seconds: float) -> Chunk:
        """The records of ``partition`` with offsets in ``[first, end)``, waiting at most ``seconds``."""
        ...


@dataclass(frozen=True)
class PartitionRange:
    """Where a partition's scan starts and what it may read: offsets in ``[low, high)``;
    ``start`` is the first offset of a forward scan (ignored newest first)."""

    partition: int
    low: int
    high: int
    start: int = 0


@dataclass
class _Cursor:
    range: PartitionRange
    next_offset: int
    matches: list[BrowsedRecord] = field(default_factory=list)
    done: bool = False


@dataclass(frozen=True)
class ScanResult:
    """The merged matches and what was read to find them.

    ``stopped_at`` is '' when every partition was read as far as needed, else ``bytes`` or
    ``time`` (the budget that ran out). ``next_offsets`` holds, per partition, the offset a
    forward scan would continue from (a live tail's positions)."""

    records: list[BrowsedRecord]
    records_scanned: int
    bytes_scanned: int
    partitions_scanned: int
    stopped_at: str
    next_offsets: dict[int, int]


def scan(
    read: ChunkReader,
    ranges: Sequence[PartitionRange],
    record_filter: RecordFilter,
    *,
    direction: Direction,
    order: Order,
    limit: int,
    budget: Budget,
) -> ScanResult:
    """At most ``limit`` matching records of ``ranges``, newest first or forward (see the module docstring)."""
    budget.start()
    cursors = [_Cursor(r, r.high if direction is Direction.NEWEST_FIRST else max(r.low, min(r.start, r.high))) for r in ranges]
    touched: set[int] = set()
    stopped_at = ""
    while True:
        active = [cursor for cursor in cursors if not cursor.done]
        if not active:
            break
        for cursor in active:
            stopped_at = budget.spent()
            if stopped_at:
                break
            touched.add(cursor.range.partition)
            if direction is Direction.NEWEST_FIRST:
                _step_backwards(read, cursor, record_filter, limit, budget)
            else:
                _step_forward(read, cursor, record_filter, limit, budget)
        if stopped_at:
            break
    matches = [record for cursor in cursors for record in cursor.matches]
    return ScanResult(
        records=merge(matches, direction=direction, order=order)[:limit],
        records_scanned=budget.records_read,
        bytes_scanned=budget.bytes_read,
        partitions_scanned=len(touched),
        stopped_at=stopped_at,
        next_offsets={cursor.range.partition: cursor.next_offset for cursor in cursors},
    )


def _step_backwards(read: ChunkReader, cursor: _Cursor, record_filter: RecordFilter, limit: int, budget: Budget) -> None:
    end = cursor.next_offset
    first = max(cursor.range.low, end - CHUNK_RECORDS)
    if first >= end:
        cursor.done = True
        return
    chunk = read(cursor.range.partition, first, end, budget.seconds_left())
    for record in chunk.records:
        budget.charge(record)
    # An incomplete chunk means the time budget ran out: the scan stops on its next turn.
    cursor.next_offset = first
    cursor.done = first <= cursor.range.low
    for record in reversed(chunk.records):
        if record_filter.matches(record):
            cursor.matches.append(record)
            if len(cursor.matches) >= limit:
                cursor.done = True
                return


def _step_forward(read: ChunkReader, cursor: _Cursor, record_filter: RecordFilter, limit: int, budget: Budget) -> None:
    first = cursor.next_offset
    end = min(cursor.range.high, first + CHUNK_RECORDS)
    if first >= end:
        cursor.done = True
        return
    chunk = read(cursor.range.partition, first, end, budget.seconds_left())
    for record in chunk.records:
        budget.charge(record)
        cursor.next_offset = max(record.offset, record.last_offset) + 1
        if record_filter.matches(record):
            cursor.matches.append(record)
            if len(cursor.matches) >= limit:
                cursor.done = True
                return
    if chunk.complete:
        # Offsets after the last record (transaction markers, compacted away) hold nothing to show.
        cursor.next_offset = end
    else:
        # Time ran out: a live tail goes on from the last record read, on its next poll.
        cursor.done = True
    cursor.done = cursor.done or cursor.next_offset >= cursor.range.high


def merge(records: list[BrowsedRecord], *, direction: Direction, order: Order) -> list[BrowsedRecord]:
    """Records of several partitions in one list, each partition's in offset order (descending
    newest first): interleaved by timestamp (the head with the earliest timestamp next, the
    latest newest first; ties by partition), or one partition after the other. A partition's
    own order is never changed, even where its timestamps go back (producers set them)."""
    newest_first = direction is Direction.NEWEST_FIRST
    by_partition: dict[int, list[BrowsedRecord]] = {}
    for record in records:
        by_partition.setdefault(record.partition, []).append(record)
    runs = [sorted(run, key=lambda record: record.offset, reverse=newest_first) for _, run in sorted(by_partition.items())]
    if order is Order.PARTITION:
        return [record for run in runs for record in run]
    if newest_first:
        return list(heapq.merge(*runs, key=lambda record: (-record.timestamp_ms, record.partition)))
    return list(heapq.merge(*runs, key=lambda record: (record.timestamp_ms, record.partition)))

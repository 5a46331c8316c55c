"""Histories of transactional producers and the Jepsen checks made of a final read_committed read.

Every record a :mod:`tests.support.transactional_producer_process` writes names its transaction
and that transaction's intent in its value (:func:`record_value`): ``producer:txn:intent:index/count``.
The producer's history file holds one :class:`TransactionRecord` per transaction it ended (or
failed to end): what it wrote where, what it meant to do, and what the client reported.

The checks take what a read_committed consumer read from every partition (:class:`ReadRecord`)
and, for the gap check, what the replicas store (data records by offset; control batches are
not records). Each returns a list of human-readable violations (empty: the check holds):

- :func:`check_no_aborted_reads`: no record of a transaction meant to abort, or whose
  abort_transaction() returned, is visible;
- :func:`check_no_torn_transactions`: a transaction is visible whole or not at all, and no
  record is read twice;
- :func:`check_no_lost_commits`: every record of every transaction whose commit_transaction()
  returned is read, in the partition it was written to;
- :func:`check_offsets`: per partition the offsets read increase, each read is the stored
  record at its offset, and every stored record skipped belongs to a transaction none of whose
  records is visible (an aborted range); offsets that hold no record are markers;
- :func:`check_exactly_once`: a consume-transform-produce pipeline's output (read at
  read_committed) holds every input exactly once, and nothing else.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

COMMIT = "commit"
ABORT = "abort"
COMMITTED = "committed"  # commit_transaction() returned
ABORTED = "aborted"  # abort_transaction() returned
UNKNOWN = "unknown"  # the client could not say (fatal error, fenced, timed out)


@dataclass(frozen=True, order=True)
class TransactionKey:
    producer: str
    number: int

    def __str__(self) -> str:
        return f"{self.producer}#{self.number}"


@dataclass(frozen=True)
class RecordIdentity:
    """What a value says about its record (see :func:`record_value`)."""

    key: TransactionKey
    intent: str
    index: int
    count: int


def record_value(producer: str, number: int, intent: str, index: int, count: int) -> bytes:
    return f"{producer}:{number:06d}:{intent}:{index}/{count}".encode()


def parse_value(value: bytes) -> RecordIdentity:
    producer, number, intent, position = value.decode().rsplit(":", 3)
    index, count = position.split("/")
    return RecordIdentity(TransactionKey(producer, int(number)), intent, int(index), int(count))


@dataclass(frozen=True)
class TransactionRecord:
    """One transaction of a producer's history: its records as (partition, value), intent and outcome."""

    key: TransactionKey
    intent: str
    outcome: str
    records: tuple[tuple[int, bytes], ...]
    error: str | None = None

    def to_json(self) -> str:
        return json.dumps(
            {
                "producer": self.key.producer,
                "txn": self.key.number,
                "intent": self.intent,
                "outcome": self.outcome,
                "error": self.error,
                "records": [[partition, value.decode()] for partition, value in self.records],
            }
        )

    @classmethod
    def from_json(cls, line: str) -> TransactionRecord:
        data = json.loads(line)
        return cls(
            TransactionKey(data["producer"], data["txn"]),
            data["intent"],
            data["outcome"],
            tuple((partition, value.encode()) for partition, value in data["records"]),
            data["error"],
        )


@dataclass(frozen=True)
class ReadRecord:
    partition: int
    offset: int
    value: bytes


def read_history(path: Path) -> tuple[list[TransactionRecord], list[dict[str, object]]]:
    """The transactions and the events (``{"event": ...}`` lines) of one history file; a torn last line is ignored."""
    transactions: list[TransactionRecord] = []
    events: list[dict[str, object]] = []
    for line in path.read_text().splitlines() if path.exists() else []:
        try:
            data = json.loads(line)
        except json.JSONDecodeError:
            continue
        if "event" in data:
            events.append(data)
        else:
            transactions.append(TransactionRecord.from_json(line))
    return transactions, events


def _by_key(transactions: Iterable[TransactionRecord]) -> dict[TransactionKey, TransactionRecord]:
    return {transaction.key: transaction for transaction in transactions}


def check_no_aborted_reads(reads: Sequence[ReadRecord], transactions: Sequence[TransactionRecord]) -> list[str]:
    history = _by_key(transactions)
    problems = []
    for read in reads:
        identity = parse_value(read.value)
        known = history.get(identity.key)
        if identity.intent == ABORT or (known is not None and known.outcome == ABORTED):
            outcome = known.outcome if known is not None else "not in the history"
            problems.append(f"aborted read: {read.value.decode()} at {read.partition}@{read.offset} (intent {identity.intent}, outcome {outcome})")
    return problems


def check_no_torn_transactions(reads: Sequence[ReadRecord]) -> list[str]:
    seen: dict[TransactionKey, set[int]] = defaultdict(set)
    counts: dict[TransactionKey, int] = {}
    problems = []
    for read in reads:
        identity = parse_value(read.value)
        if identity.index in seen[identity.key]:
            problems.append(f"read twice: {read.value.decode()} (again at {read.partition}@{read.offset})")
        seen[identity.key].add(identity.index)
        counts[identity.key] = identity.count
    for key, indexes in sorted(seen.items()):
        if len(indexes) != counts[key]:
            missing = sorted(set(range(counts[key])) - indexes)
            problems.append(f"torn transaction {key}: {len(indexes)} of {counts[key]} records visible, missing indexes {missing}")
    return problems


def check_no_lost_commits(reads: Sequence[ReadRecord], transactions: Sequence[TransactionRecord]) -> list[str]:
    visible = {(read.partition, read.value) for read in reads}
    problems = []
    for transaction in transactions:
        if transaction.outcome != COMMITTED:
            continue
        lost = [f"{partition}:{value.decode()}" for partition, value in transaction.records if (partition, value) not in visible]
        if lost:
            problems.append(f"lost commit {transaction.key}: {len(lost)} of {len(transaction.records)} records not read, e.g. {lost[:3]}")
    return problems


def check_offsets(reads: Sequence[ReadRecord], stored: Mapping[int, Mapping[int, bytes | None]]) -> list[str]:
    """``stored``: partition -> offset -> value of every data record a replica holds (markers are absent)."""
    visible_transactions = {parse_value(read.value).key for read in reads}
    by_partition: dict[int, list[ReadRecord]] = defaultdict(list)
    for read in reads:
        by_partition[read.partition].append(read)
    problems = []
    for partition in sorted(set(stored) | set(by_partition)):
        records = stored.get(partition, {})
        offsets = [read.offset for read in by_partition[partition]]
        if any(later <= earlier for earlier, later in zip(offsets, offsets[1:], strict=False)):
            problems.append(f"partition {partition}: read offsets do not increase: {offsets[:20]}")
        for read in by_partition[partition]:
            if records.get(read.offset) != read.value:
                problems.append(f"partition {partition}: read {read.value.decode()} at {read.offset}, the log holds {records.get(read.offset)!r} there")
        read_offsets = set(offsets)
        for offset, value in sorted(records.items()):
            if offset in read_offsets or value is None:
                continue
            key = parse_value(value).key
            if key in visible_transactions:
                problems.append(f"partition {partition}: gap at {offset}: {value.decode()} skipped, yet its transaction {key} is visible")
    return problems


def check_exactly_once(inputs: Sequence[bytes], outputs: Sequence[bytes], *, prefix: bytes = b"out:") -> list[str]:
    """Each of ``inputs`` appears once in ``outputs`` as ``prefix + input``; no output comes from elsewhere."""
    wanted = {prefix + value for value in inputs}
    counts: dict[bytes, int] = defaultdict(int)
    for value in outputs:
        counts[value] += 1
    problems = [f"output {value.decode()} read {count} times" for value, count in sorted(counts.items()) if count > 1]
    problems += [f"output {value.decode()} comes from no input" for value in sorted(set(counts) - wanted)]
    missing = sorted(wanted - set(counts))
    if missing:
        problems.append(f"{len(missing)} inputs never in the output, e.g. {[value.decode() for value in missing[:3]]}")
    return problems

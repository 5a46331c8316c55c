"""Checkpoint files in Kafka's text format, written atomically.

Offset checkpoints (``recovery-point-offset-checkpoint``, ``log-start-offset-checkpoint``,
``cleaner-offset-checkpoint``) live in the data directory::

    0                      version
    2                      number of entries
    orders 0 1234          topic, partition, offset, separated by single spaces
    orders 1 99

The leader-epoch checkpoint lives in each partition directory, same header, then
``epoch start_offset`` lines. Topic names never contain spaces, so each line splits from the
right.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from broker_nodes.storage.atomic_files import write_atomically
from broker_nodes.storage.errors import CorruptCheckpointError

# The only checkpoint format version Kafka has defined.
CHECKPOINT_VERSION = 0

TopicPartition = tuple[str, int]


def _parse_lines(path: Path, fields: int) -> list[list[str]]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    lines = text.splitlines()
    if len(lines) < 2:
        raise CorruptCheckpointError(path, "missing version or count line")
    if lines[0].strip() != str(CHECKPOINT_VERSION):
        raise CorruptCheckpointError(path, f"unsupported version {lines[0]!r}")
    try:
        count = int(lines[1])
    except ValueError:
        raise CorruptCheckpointError(path, f"count line {lines[1]!r} is not a number") from None
    entries = lines[2:]
    if len(entries) != count:
        raise CorruptCheckpointError(path, f"count says {count} entries but {len(entries)} follow")
    parsed = []
    for line in entries:
        parts = line.rsplit(" ", fields - 1)
        if len(parts) != fields:
            raise CorruptCheckpointError(path, f"malformed entry {line!r}")
        parsed.append(parts)
    return parsed


def _render(lines: list[str]) -> bytes:
    return "\n".join([str(CHECKPOINT_VERSION), str(len(lines)), *lines, ""]).encode("utf-8")


class OffsetCheckpointFile:
    """One ``topic partition offset`` checkpoint file. Not thread-safe: one writer at a time.

    Remembers what it last wrote, so that :meth:`write` of the same offsets again costs no
    write and no fsync: the log manager checkpoints every second, and with thousands of
    partitions rewriting an unchanged file each time was most of an idle broker's CPU.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._written: dict[TopicPartition, int] | None = None  # what this object last wrote; None: not yet

    def read(self) -> dict[TopicPartition, int]:
        """Entries of the file; empty when it does not exist; CorruptCheckpointError when malformed."""
        result: dict[TopicPartition, int] = {}
        for topic, partition, offset in _parse_lines(self.path, 3):
            try:
                result[(topic, int(partition))] = int(offset)
            except ValueError:
                raise CorruptCheckpointError(self.path, f"non-numeric entry {topic} {partition} {offset}") from None
        return result

    def write(self, offsets: Mapping[TopicPartition, int]) -> None:
        """Replace the file's content atomically; nothing is done when it already holds exactly ``offsets`` (written here)."""
        if self._written is not None and self._written == offsets:
            return
        lines = [f"{topic} {partition} {offset}" for (topic, partition), offset in sorted(offsets.items())]
        self._written = None  # unknown until the new content is in place
        write_atomically(self.path, _render(lines))
        self._written = dict(offsets)


class LeaderEpochCheckpointFile:
    """A partition's ``epoch start_offset`` checkpoint. Not thread-safe: one writer at a time."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def read(self) -> list[tuple[int, int]]:
        """(epoch, start offset) pairs in file order; empty when the file does not exist."""
        try:
            return [(int(epoch), int(offset)) for epoch, offset in _parse_lines(self.path, 2)]
        except ValueError:
            raise CorruptCheckpointError(self.path, "non-numeric epoch entry") from None

    def write(self, entries: list[tuple[int, int]], *, durable: bool = True) -> None:
        """Replace the file's content atomically; ``durable=False`` skips the fsyncs (``atomic_files``)."""
        write_atomically(self.path, _render([f"{epoch} {offset}" for epoch, offset in entries]), durable=durable)

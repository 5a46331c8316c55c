"""Reads that follow the log end (followers' fetches, tailing consumers) look at the new batches
only, and a truncation never leaves them a batch that is gone."""

from __future__ import annotations

import struct

import pytest

from broker_nodes.storage.log import PartitionLog
from broker_nodes.storage.segment import FIND_CHUNK_BYTES, AppendedBatch, LogSegment
from tests.broker_nodes.storage.conftest import START_MS, make_batch, read_all
from weir.records import iter_batch_positions


def _count_bytes_read(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    read: list[int] = []
    pread = LogSegment.pread
    monkeypatch.setattr(LogSegment, "pread", lambda segment, length, position: read.append(length) or pread(segment, length, position))
    return read


def test_a_read_at_the_previous_log_end_reads_only_the_new_batch(open_log, monkeypatch: pytest.MonkeyPatch) -> None:
    log: PartitionLog = open_log({"index.interval.bytes": str(1 << 20)})  # one index entry for the whole test
    for value in range(100):
        log.append_as_leader(make_batch([b"%03d" % value * 30]), 0)
    end = log.log_end_offset
    assert log.read(end - 1, 1 << 20).records  # the reader that follows the log end has read its last batch
    new = make_batch([b"new" * 30])
    log.append_as_leader(new, 0)
    read = _count_bytes_read(monkeypatch)
    fetched = log.read(end, 1 << 20)
    assert [header.base_offset for _, header in iter_batch_positions(fetched.records)] == [end]
    # The new batch's header and bytes, not the ~100 batches since the offset index's only entry.
    assert sum(read) <= 3 * len(new)


def test_a_read_after_a_truncation_and_new_appends_finds_the_new_batches(open_log) -> None:
    log: PartitionLog = open_log({"index.interval.bytes": str(1 << 20)})
    for value in range(10):
        log.append_as_leader(make_batch([b"old-%d" % value]), 0)
    assert log.read(9, 1 << 20).records  # a lookup of the last batch, before the cut
    log.truncate_to(5)
    log.append_as_leader(make_batch([b"new-a" * 40, b"new-b"]), 1)  # other sizes and offsets where the old batches were
    log.append_as_leader(make_batch([b"new-c"]), 1)
    assert [value for _, _, value in read_all(log, 5)] == [b"new-a" * 40, b"new-b", b"new-c"]
    assert [value for _, _, value in read_all(log, 6)] == [b"new-b", b"new-c"]  # offset 6 is inside the first new batch
    assert [value for _, _, value in read_all(log, 7)] == [b"new-c"]
    assert [value for _, _, value in read_all(log)][:5] == [b"old-%d" % value for value in range(5)]


def test_a_lookup_behind_the_last_one_uses_the_offset_index(open_log) -> None:
    log: PartitionLog = open_log({"index.interval.bytes": "100"})
    for value in range(50):
        log.append_as_leader(make_batch([b"v%02d" % value * 20]), 0)
    assert log.read(49, 1 << 20).records
    assert [value for _, _, value in read_all(log, 17)][0] == b"v17" * 20
    assert [value for _, _, value in read_all(log, 48)] == [b"v48" * 20, b"v49" * 20]


def test_a_cut_segment_forgets_the_batches_its_lookups_found(open_log) -> None:
    log: PartitionLog = open_log({"index.interval.bytes": str(1 << 20)})
    for value in range(10):
        log.append_as_leader(make_batch([b"old-%d" % value]), 0)
    segment = log.segments[-1]
    assert segment.find_batch(9) is not None
    segment.truncate_to(5)  # its own lookup of offset 5 found the old batch there
    new = bytearray(make_batch([b"new-a" * 40, b"new-b"]))
    struct.pack_into(">q", new, 0, 5)  # base offset 5, where the old batch 5 was, larger
    segment.append(bytes(new), [AppendedBatch(0, len(new), 5, 6, START_MS)])
    found = segment.find_batch(6)
    assert found is not None
    assert (found[1].base_offset, found[1].last_offset, found[1].size) == (5, 6, len(new))


def test_a_read_up_to_the_log_end_reads_only_the_batches_it_returns(open_log, monkeypatch: pytest.MonkeyPatch) -> None:
    log: PartitionLog = open_log({"index.interval.bytes": "100"})
    batches = [make_batch([b"v%02d" % value * 200]) for value in range(400)]  # ~80 KiB: more than one lookup chunk
    for batch in batches:
        log.append_as_leader(batch, 0)
    read = _count_bytes_read(monkeypatch)
    fetched = log.read(10, len(batches[10]))  # bounded by the high watermark, which is the log end
    assert [header.base_offset for _, header in iter_batch_positions(fetched.records)] == [10]
    # The batch's lookup (one chunk) and its bytes: the log end needs no lookup of its own.
    assert sum(read) <= FIND_CHUNK_BYTES + len(batches[10])

"""The fetcher's walk of a Fetch answer to the next fetch offset: the same answer as the headers' walk in weir.records."""

from __future__ import annotations

from weir.fetcher import next_fetch_offset
from weir.records import assign_offsets, build_batch, iter_batch_positions


def _batch(base_offset: int, count: int) -> bytes:
    batch = bytearray(build_batch([(1_000, None, b"value %d" % index, None) for index in range(count)]))
    assign_offsets(batch, 0, base_offset, 0)
    return bytes(batch)


def _walked(records: bytes, fetch_offset: int) -> int:
    next_offset = fetch_offset
    for _, header in iter_batch_positions(records):
        next_offset = header.next_offset
    return next_offset


def test_next_offset_follows_the_last_complete_batch() -> None:
    records = _batch(10, 1) + _batch(11, 3) + _batch(14, 2)
    assert next_fetch_offset(records, 10) == 16 == _walked(records, 10)


def test_a_trailing_partial_batch_is_not_counted() -> None:
    records = _batch(10, 2) + _batch(12, 5)[:-7]
    assert next_fetch_offset(records, 10) == 12 == _walked(records, 10)


def test_no_complete_batch_leaves_the_fetch_offset() -> None:
    assert next_fetch_offset(b"", 7) == 7
    assert next_fetch_offset(_batch(7, 4)[:60], 7) == 7
    assert next_fetch_offset(_batch(7, 4)[:-1], 7) == 7 == _walked(_batch(7, 4)[:-1], 7)

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from broker_nodes.storage.errors import CorruptIndexError
from broker_nodes.storage.file_cache import FileHandleCache
from broker_nodes.storage.index_file import SEARCH_WINDOW_BYTES, search_greatest_at_most
from broker_nodes.storage.offset_index import OffsetIndex
from log_formats.log_files import OFFSET_INDEX_ENTRY

BASE = 1000


def new_index(directory: Path, cache: FileHandleCache, max_bytes: int = 1024) -> OffsetIndex:
    path = directory / "00000000000000001000.index"
    path.touch()
    return OffsetIndex(path, BASE, cache, max_bytes)


def test_lookup_when_empty_returns_base_offset(tmp_path: Path, file_cache: FileHandleCache) -> None:
    index = new_index(tmp_path, file_cache)
    assert index.lookup(5000) == (BASE, 0)


def test_lookup_below_first_entry_returns_base_offset(tmp_path: Path, file_cache: FileHandleCache) -> None:
    index = new_index(tmp_path, file_cache)
    index.append(BASE + 10, 400)
    assert index.lookup(BASE + 9) == (BASE, 0)
    assert index.lookup(BASE + 10) == (BASE + 10, 400)


def test_append_rejects_an_entry_that_does_not_increase(tmp_path: Path, file_cache: FileHandleCache) -> None:
    index = new_index(tmp_path, file_cache)
    index.append(BASE + 10, 400)
    with pytest.raises(ValueError):
        index.append(BASE + 10, 500)
    with pytest.raises(ValueError):
        index.append(BASE + 11, 400)


def test_is_full_at_segment_index_bytes(tmp_path: Path, file_cache: FileHandleCache) -> None:
    index = new_index(tmp_path, file_cache, max_bytes=24)
    for number in range(3):
        assert not index.is_full
        index.append(BASE + number + 1, (number + 1) * 100)
    assert index.is_full


def test_truncate_to_drops_entries_at_and_above_offset(tmp_path: Path, file_cache: FileHandleCache) -> None:
    index = new_index(tmp_path, file_cache)
    for number in range(1, 6):
        index.append(BASE + number * 10, number * 100)
    index.truncate_to(BASE + 30)
    assert index.entry_count == 2
    assert index.lookup(BASE + 45) == (BASE + 20, 200)
    assert index.path.stat().st_size == 16


def test_entries_survive_reopening(tmp_path: Path, file_cache: FileHandleCache) -> None:
    index = new_index(tmp_path, file_cache)
    index.append(BASE + 7, 70)
    reopened = OffsetIndex(index.path, BASE, FileHandleCache(2), 1024)
    assert reopened.entry_count == 1
    assert reopened.lookup(BASE + 100) == (BASE + 7, 70)


def test_sanity_check_rejects_a_partial_entry(tmp_path: Path, file_cache: FileHandleCache) -> None:
    index = new_index(tmp_path, file_cache)
    index.append(BASE + 7, 70)
    with open(index.path, "ab") as file:
        file.write(b"\x01\x02\x03")
    with pytest.raises(CorruptIndexError):
        OffsetIndex(index.path, BASE, file_cache, 1024).sanity_check(log_size=1000)


def test_sanity_check_rejects_a_position_beyond_the_log(tmp_path: Path, file_cache: FileHandleCache) -> None:
    index = new_index(tmp_path, file_cache)
    index.append(BASE + 7, 700)
    with pytest.raises(CorruptIndexError):
        index.sanity_check(log_size=500)
    index.sanity_check(log_size=701)


@settings(max_examples=60, deadline=None)
@given(
    deltas=st.lists(st.tuples(st.integers(1, 1000), st.integers(1, 5000)), max_size=60),
    targets=st.lists(st.integers(-10, 70_000), min_size=1, max_size=20),
)
def test_lookup_returns_greatest_entry_at_or_below_target(tmp_path_factory: pytest.TempPathFactory, deltas: list[tuple[int, int]], targets: list[int]) -> None:
    directory = tmp_path_factory.mktemp("index")
    cache = FileHandleCache(4)
    index = new_index(directory, cache, max_bytes=1 << 20)
    entries = []
    offset, position = BASE, 0
    for offset_step, position_step in deltas:
        offset += offset_step
        position += position_step
        index.append(offset, position)
        entries.append((offset, position))
    for target in targets:
        expected = max((entry for entry in entries if entry[0] <= BASE + target), default=(BASE, 0))
        assert index.lookup(BASE + target) == expected
    cache.close_all()


@given(keys=st.lists(st.integers(-100, 100), unique=True).map(sorted), target=st.integers(-150, 150))
def test_search_greatest_at_most_matches_a_linear_scan(keys: list[int], target: int) -> None:
    expected = max((index for index, key in enumerate(keys) if key <= target), default=-1)
    assert search_greatest_at_most(keys.__getitem__, len(keys), target) == expected


@settings(max_examples=20, deadline=None)
@given(
    count=st.integers(0, 3 * SEARCH_WINDOW_BYTES // OFFSET_INDEX_ENTRY.size),
    targets=st.lists(st.integers(-10, 40_000), min_size=1, max_size=20),
)
def test_lookup_and_truncation_point_of_an_index_larger_than_one_search_window_match_a_linear_scan(
    tmp_path_factory: pytest.TempPathFactory, count: int, targets: list[int]
) -> None:
    directory = tmp_path_factory.mktemp("index")
    cache = FileHandleCache(4)
    index = new_index(directory, cache, max_bytes=1 << 20)
    entries = [(BASE + 1 + 3 * number, 100 * (number + 1)) for number in range(count)]  # offsets 1, 4, 7, ... above the base
    for offset, position in entries:
        index.append(offset, position)
    for target in targets:
        assert index.lookup(BASE + target) == max((entry for entry in entries if entry[0] <= BASE + target), default=(BASE, 0))
        index_file = index._file
        assert index_file.first_index_at_least(0, target) == sum(1 for offset, _ in entries if offset - BASE < target)
    cache.close_all()


def test_a_lookup_in_a_large_index_reads_a_handful_of_times(tmp_path: Path, file_cache: FileHandleCache, monkeypatch: pytest.MonkeyPatch) -> None:
    index = new_index(tmp_path, file_cache, max_bytes=1 << 20)
    for number in range(16 * SEARCH_WINDOW_BYTES // OFFSET_INDEX_ENTRY.size):  # 16 windows: 4 halvings, then one window
        index.append(BASE + 1 + number, number + 1)
    reads: list[int] = []
    pread = os.pread
    monkeypatch.setattr(os, "pread", lambda descriptor, length, position: reads.append(length) or pread(descriptor, length, position))
    assert index.lookup(BASE + 5000) == (BASE + 5000, 5000)
    assert len(reads) == 5

from __future__ import annotations

from pathlib import Path

import pytest

from broker_nodes.storage.errors import CorruptIndexError
from broker_nodes.storage.file_cache import FileHandleCache
from broker_nodes.storage.time_index import TimeIndex

BASE = 50


def new_index(directory: Path, cache: FileHandleCache) -> TimeIndex:
    path = directory / "00000000000000000050.timeindex"
    path.touch()
    return TimeIndex(path, BASE, cache, 1024)


def test_lookup_when_empty_returns_none(tmp_path: Path, file_cache: FileHandleCache) -> None:
    assert new_index(tmp_path, file_cache).lookup(10**12) is None


def test_maybe_append_keeps_only_increasing_timestamps(tmp_path: Path, file_cache: FileHandleCache) -> None:
    index = new_index(tmp_path, file_cache)
    assert index.maybe_append(1000, 50)
    assert not index.maybe_append(1000, 60)
    assert not index.maybe_append(900, 70)
    assert index.maybe_append(2000, 80)
    assert index.entry_count == 2
    assert index.last_entry == (2000, 80)


def test_lookup_returns_last_entry_at_or_below_timestamp(tmp_path: Path, file_cache: FileHandleCache) -> None:
    index = new_index(tmp_path, file_cache)
    for timestamp, offset in [(1000, 50), (2000, 60), (3000, 75)]:
        index.maybe_append(timestamp, offset)
    assert index.lookup(999) is None
    assert index.lookup(2000) == (2000, 60)
    assert index.lookup(2999) == (2000, 60)
    assert index.lookup(10_000) == (3000, 75)


def test_truncate_to_drops_entries_of_removed_offsets(tmp_path: Path, file_cache: FileHandleCache) -> None:
    index = new_index(tmp_path, file_cache)
    for timestamp, offset in [(1000, 50), (2000, 60), (3000, 75)]:
        index.maybe_append(timestamp, offset)
    index.truncate_to(60)
    assert index.last_entry == (1000, 50)


def test_sanity_check_rejects_a_partial_entry(tmp_path: Path, file_cache: FileHandleCache) -> None:
    index = new_index(tmp_path, file_cache)
    index.maybe_append(1000, 50)
    with open(index.path, "ab") as file:
        file.write(b"\x00" * 5)
    with pytest.raises(CorruptIndexError):
        TimeIndex(index.path, BASE, file_cache, 1024).sanity_check()

from __future__ import annotations

from pathlib import Path

from broker_nodes.storage.leader_epoch_cache import UNDEFINED_EPOCH, LeaderEpochCache


def test_assign_keeps_only_newer_epochs_and_persists(tmp_path: Path) -> None:
    cache = LeaderEpochCache(tmp_path)
    cache.assign(0, 0)
    cache.assign(0, 10)
    cache.assign(2, 25)
    cache.assign(1, 30)
    assert cache.entries == [(0, 0), (2, 25)]
    assert LeaderEpochCache(tmp_path).entries == [(0, 0), (2, 25)]


def test_end_offset_for_epoch_is_the_next_epochs_start(tmp_path: Path) -> None:
    cache = LeaderEpochCache(tmp_path)
    cache.assign(1, 0)
    cache.assign(4, 40)
    assert cache.end_offset_for(1, 100) == (1, 40)
    assert cache.end_offset_for(3, 100) == (1, 40)
    assert cache.end_offset_for(4, 100) == (4, 100)
    assert cache.end_offset_for(0, 100) == (UNDEFINED_EPOCH, -1)


def test_truncation_from_both_ends(tmp_path: Path) -> None:
    cache = LeaderEpochCache(tmp_path)
    for epoch, offset in [(0, 0), (1, 10), (2, 20)]:
        cache.assign(epoch, offset)
    cache.truncate_from_end(20)
    assert cache.entries == [(0, 0), (1, 10)]
    cache.truncate_from_start(15)
    assert cache.entries == [(1, 15)]

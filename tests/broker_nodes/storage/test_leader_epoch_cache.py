from __future__ import annotations

from pathlib import Path

from broker_nodes.storage.leader_epoch_cache import UNDEFINED_EPOCH, LeaderEpochCache
from tests.broker_nodes.storage.conftest import make_batch


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


def test_an_epoch_lost_from_an_unsynced_checkpoint_is_recovered_from_the_log(open_log) -> None:
    # A new epoch's checkpoint is written without fsync; a power loss may leave the file as
    # it was before. Recovery after an unclean shutdown scans from the recovery point and
    # re-assigns the epochs of the batches it finds there.
    log = open_log()
    log.append_as_leader(make_batch([b"a"]), 1)
    log.flush()  # the recovery point passes offset 0, and epoch 1 is durable
    checkpoint = log.directory / "leader-epoch-checkpoint"
    durable = checkpoint.read_bytes()
    log.append_as_leader(make_batch([b"b"]), 3)
    log.append_as_leader(make_batch([b"c"]), 4)
    assert log.leader_epoch_cache.entries == [(1, 0), (3, 1), (4, 2)]
    recovery_point = log.recovery_point
    log.close()
    checkpoint.write_bytes(durable)  # what a power loss may leave
    assert LeaderEpochCache(log.directory).entries == [(1, 0)]
    recovered = open_log(clean_shutdown=False, recovery_point=recovery_point)
    assert recovered.leader_epoch_cache.entries == [(1, 0), (3, 1), (4, 2)]
    assert LeaderEpochCache(log.directory).entries == [(1, 0), (3, 1), (4, 2)]  # and written back

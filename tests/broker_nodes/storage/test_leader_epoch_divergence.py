"""LeaderEpochCache.divergence: Kafka's diverging-epoch rule for a fetch that names its last fetched epoch."""

from __future__ import annotations

from pathlib import Path

import pytest

from broker_nodes.storage.leader_epoch_cache import UNDEFINED_EPOCH, UNDEFINED_OFFSET, LeaderEpochCache

LOG_END = 70


@pytest.fixture
def cache(tmp_path: Path) -> LeaderEpochCache:
    """Epoch 1 wrote [0, 30), epoch 4 wrote [30, 50), epoch 6 writes from 50 to the log end."""
    epochs = LeaderEpochCache(tmp_path)
    for epoch, start in [(1, 0), (4, 30), (6, 50)]:
        epochs.assign(epoch, start)
    return epochs


@pytest.mark.parametrize(
    ("last_fetched_epoch", "fetch_offset"),
    [(1, 30), (1, 12), (4, 50), (6, 50), (6, LOG_END)],
)
def test_a_fetch_within_what_its_epoch_wrote_here_does_not_diverge(cache: LeaderEpochCache, last_fetched_epoch: int, fetch_offset: int) -> None:
    assert cache.divergence(last_fetched_epoch, fetch_offset, LOG_END) is None


def test_a_fetch_past_where_its_epoch_ended_here_diverges_at_that_end(cache: LeaderEpochCache) -> None:
    assert cache.divergence(1, 31, LOG_END) == (1, 30)
    assert cache.divergence(4, 55, LOG_END) == (4, 50)


def test_an_epoch_this_log_never_had_diverges_at_the_end_of_the_largest_epoch_below_it(cache: LeaderEpochCache) -> None:
    # The fetcher read epoch 3 (a leader this log never followed): epoch 1 is the last both share.
    assert cache.divergence(3, 30, LOG_END) == (1, 30)
    assert cache.divergence(5, 40, LOG_END) == (4, 50)
    # Even when the offset itself is within range: the epoch is what differs.
    assert cache.divergence(5, 45, LOG_END) == (4, 50)


def test_an_epoch_newer_than_this_logs_latest_diverges_at_the_log_end(cache: LeaderEpochCache) -> None:
    assert cache.divergence(9, 60, LOG_END) == (6, LOG_END)


def test_an_epoch_below_every_known_epoch_is_undefined(cache: LeaderEpochCache, tmp_path: Path) -> None:
    assert cache.divergence(0, 10, LOG_END) == (UNDEFINED_EPOCH, UNDEFINED_OFFSET)
    assert LeaderEpochCache(tmp_path / "empty").divergence(2, 0, 0) == (UNDEFINED_EPOCH, UNDEFINED_OFFSET)

"""When the consumer's fetcher thread is woken: not for every chunk the application takes, only when room
frees up under ``queued.max.messages.kbytes`` after fetching stopped for it.

The fetcher is built but not started, so nothing runs on its own: the test counts the wake-ups
its work condition receives.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from weir.cluster import Cluster
from weir.config import CONSUMER, ClientConfig
from weir.coordinator import GroupCoordinators
from weir.fetcher import FetchedChunk, Fetcher

CHUNK_BYTES = 1024


class CountingCondition:
    """The fetcher's work condition, counting notify() calls."""

    def __init__(self, lock: threading.Lock) -> None:
        self._condition = threading.Condition(lock)
        self.notified = 0

    def notify(self, count: int = 1) -> None:
        self.notified += 1
        self._condition.notify(count)

    def wait(self, timeout: float | None = None) -> bool:
        return self._condition.wait(timeout)


@pytest.fixture
def fetcher() -> Iterator[Fetcher]:
    config = ClientConfig({"bootstrap.servers": "127.0.0.1:1", "group.id": "wakeups", "queued.max.messages.kbytes": 4}, CONSUMER)
    cluster = Cluster(config)
    built = Fetcher(cluster, GroupCoordinators(cluster), config)
    built._work = CountingCondition(built.lock)  # type: ignore[assignment]
    try:
        yield built
    finally:
        cluster.close()


def _prefetch(fetcher: Fetcher, count: int) -> list[FetchedChunk]:
    with fetcher.lock:
        state = fetcher.states.get(("orders", 0)) or fetcher.add_locked("orders", 0, 0, 1 << 20)
        chunks = [FetchedChunk(state, state.generation, b"x" * CHUNK_BYTES, index, index + 1) for index in range(count)]
        fetcher.chunks.extend(chunks)
        fetcher.prefetched_bytes += CHUNK_BYTES * count
        return chunks


def _notified(fetcher: Fetcher) -> int:
    work = fetcher._work
    assert isinstance(work, CountingCondition)
    return work.notified


def test_taking_chunks_below_the_prefetch_limit_does_not_wake_the_fetcher(fetcher: Fetcher) -> None:
    chunks = _prefetch(fetcher, 3)  # 3 KiB, under the 4 KiB limit
    before = _notified(fetcher)
    with fetcher.lock:
        for chunk in chunks:
            fetcher.consumed(chunk)
    assert fetcher.prefetched_bytes == 0
    assert _notified(fetcher) == before


def test_taking_a_chunk_that_brings_the_prefetched_bytes_under_the_limit_wakes_the_fetcher_once(fetcher: Fetcher) -> None:
    chunks = _prefetch(fetcher, 6)  # 6 KiB: fetching stopped at the 4 KiB limit
    before = _notified(fetcher)
    with fetcher.lock:
        fetcher.consumed(chunks[0])  # 5 KiB: still full, nothing to fetch yet
        assert _notified(fetcher) == before
        fetcher.consumed(chunks[1])  # 4 KiB: still at the limit
        assert _notified(fetcher) == before
        fetcher.consumed(chunks[2])  # 3 KiB: room again, the fetcher must fetch
        assert _notified(fetcher) == before + 1
        for chunk in chunks[3:]:
            fetcher.consumed(chunk)
    assert _notified(fetcher) == before + 1

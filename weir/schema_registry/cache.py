"""A bounded least-recently-used map whose entries may also expire (``ttl`` seconds after being set).

The client keeps its schemas by id and by (subject, schema) in ones without expiry (a registered
schema never changes), and the latest version of each subject in one that expires after
``cache.latest.ttl.sec`` when that is set. The clock is injected (``time.monotonic`` by
default). Thread-safe: one lock around every operation.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class LruCache(Generic[K, V]):
    """At most ``capacity`` entries (0 keeps none); the least recently used goes first."""

    def __init__(self, capacity: int, ttl: float | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self._capacity = capacity
        self._ttl = ttl
        self._clock = clock
        self._entries: OrderedDict[K, tuple[float | None, V]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: K) -> V | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return None
            expires, value = entry
            if expires is not None and self._clock() >= expires:
                del self._entries[key]
                return None
            self._entries.move_to_end(key)
            return value

    def set(self, key: K, value: V) -> None:
        if self._capacity <= 0:
            return
        with self._lock:
            expires = self._clock() + self._ttl if self._ttl is not None else None
            self._entries[key] = (expires, value)
            self._entries.move_to_end(key)
            while len(self._entries) > self._capacity:
                self._entries.popitem(last=False)

    def discard_where(self, predicate: Callable[[K], bool]) -> None:
        """Forget every entry whose key matches (a deleted subject's, a deleted version's)."""
        with self._lock:
            for key in [key for key in self._entries if predicate(key)]:
                del self._entries[key]

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

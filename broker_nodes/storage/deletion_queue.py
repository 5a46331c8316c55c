"""Files awaiting removal after ``file.delete.delay.ms``."""

from __future__ import annotations

import heapq
import logging
import os
import threading
from pathlib import Path

logger = logging.getLogger(__name__)


class FileDeletionQueue:
    """Paths renamed to ``*.deleted`` and the time after which they may be unlinked.

    The delay lets readers that picked a segment just before retention or compaction removed it
    finish reading. Files are already renamed, so a crash before removal leaves only
    ``*.deleted`` names, which startup removes. Thread-safe (one lock).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._heap: list[tuple[int, int, list[Path]]] = []
        self._sequence = 0

    def __len__(self) -> int:
        with self._lock:
            return len(self._heap)

    def schedule(self, paths: list[Path], due_ms: int) -> None:
        with self._lock:
            self._sequence += 1
            heapq.heappush(self._heap, (due_ms, self._sequence, paths))

    def delete_due(self, now_ms: int) -> int:
        """Unlink every file due at ``now_ms``; return how many groups were removed."""
        due: list[list[Path]] = []
        with self._lock:
            while self._heap and self._heap[0][0] <= now_ms:
                due.append(heapq.heappop(self._heap)[2])
        for paths in due:
            remove_files(paths)
        return len(due)

    def delete_all(self) -> None:
        with self._lock:
            groups = [entry[2] for entry in self._heap]
            self._heap.clear()
        for paths in groups:
            remove_files(paths)


def remove_files(paths: list[Path]) -> None:
    for path in paths:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
        except OSError as error:
            logger.warning("could not remove %s: %s", path, error)

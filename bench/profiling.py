"""cProfile of the client side of a benchmark, including the client library's own threads.

cProfile follows one thread. A producer does much of its work on a background sender thread,
so a ``ClientProfiler`` also installs a hook (``threading.setprofile``) that starts a profiler
in every Python thread created while it is active, and merges all of them at the end.
Profiling slows Python code several times over: figures measured under it are not reported
as results, only where the time goes.
"""

from __future__ import annotations

import cProfile
import io
import pstats
import sys
import threading
from pathlib import Path
from types import FrameType, TracebackType
from typing import Any

# Functions listed in the printed summary, by own time and by cumulative time.
TOP_FUNCTIONS = 18


class ClientProfiler:
    """Profiles the calling thread and threads started inside the ``with`` block.

    ``directory`` None makes it do nothing, so call sites need no branch. Writes
    ``<directory>/<name>.prof`` (pstats format, for snakeviz or ``python -m pstats``).
    """

    def __init__(self, directory: Path | None, name: str) -> None:
        self.directory = directory
        self.name = name
        self._profiles: list[cProfile.Profile] = []
        self._lock = threading.Lock()
        self.summary: str | None = None

    @property
    def enabled(self) -> bool:
        return self.directory is not None

    def _start_in_new_thread(self, frame: FrameType, event: str, argument: Any) -> None:
        # Called once, as the first profile event of a new thread: replace this hook with a
        # real profiler for the thread (enable() installs it as the thread's profile function).
        profile = cProfile.Profile()
        with self._lock:
            self._profiles.append(profile)
        profile.enable()

    def __enter__(self) -> ClientProfiler:
        if self.enabled:
            threading.setprofile(self._start_in_new_thread)
            main = cProfile.Profile()
            self._profiles.append(main)
            main.enable()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None) -> None:
        if not self.enabled:
            return
        self._profiles[0].disable()
        threading.setprofile(None)  # type: ignore[arg-type]
        assert self.directory is not None
        self.directory.mkdir(parents=True, exist_ok=True)
        with self._lock:
            profiles = list(self._profiles)
        statistics = pstats.Stats(profiles[0])
        for profile in profiles[1:]:
            statistics.add(profile)
        path = self.directory / f"{self.name}.prof"
        statistics.dump_stats(str(path))
        self.summary = summarise(statistics, f"{self.name} ({len(profiles)} threads profiled, saved to {path})")


def summarise(statistics: pstats.Stats, title: str) -> str:
    """The top functions by own time and by cumulative time, as printable text."""
    text = io.StringIO()
    statistics.stream = text  # type: ignore[attr-defined]
    text.write(f"--- profile: {title}\n--- by own time\n")
    statistics.sort_stats(pstats.SortKey.TIME).print_stats(TOP_FUNCTIONS)
    text.write("--- by cumulative time\n")
    statistics.sort_stats(pstats.SortKey.CUMULATIVE).print_stats(TOP_FUNCTIONS)
    statistics.stream = sys.stdout  # type: ignore[attr-defined]
    return text.getvalue()

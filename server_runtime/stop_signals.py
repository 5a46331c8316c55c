"""SIGTERM and Ctrl-C for long-running Weir processes (make up, brokers, controllers): signals
become a stop request without locks in a handler.

A Python signal handler runs in the main thread between two bytecodes, possibly while that
thread holds a lock (inside ``Event.wait``, ``logging``, a ``SupervisedProcess``). A handler
that takes a lock (``Event.set``, a log line) can then deadlock against its own thread: that is
how two SIGTERMs once hung ``make up``. Here the handler only writes the signal's number to a
non-blocking pipe (a self-pipe); a thread reads it and does the real work: ``on_first`` at the
first signal (start stopping), ``on_again`` at every later one (stop faster). Any number of
signals, in any order and at any moment, therefore stop the stack and never hang it.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable, Iterable

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


class StopSignals:
    """Install with :meth:`install` (main thread only); ``count`` is how many stop signals came."""

    def __init__(self, on_first: Callable[[int], None], on_again: Callable[[int], None]) -> None:
        self._on_first = on_first
        self._on_again = on_again
        self.count = 0
        self._read_fd, self._write_fd = os.pipe()
        os.set_blocking(self._write_fd, False)

    def install(self, signals: Iterable[signal.Signals] = STOP_SIGNALS) -> None:
        threading.Thread(target=self._dispatch, name="stop signals", daemon=True).start()
        for signal_number in signals:
            signal.signal(signal_number, self._handler)

    def _handler(self, signal_number: int, _frame: object) -> None:
        # Async-signal-safe: one write, no lock, no allocation worth naming, never blocks.
        try:
            os.write(self._write_fd, bytes([signal_number]))
        except OSError:
            pass  # the pipe is full of earlier signals: the stop is under way already

    def _dispatch(self) -> None:
        while True:
            for signal_number in os.read(self._read_fd, 64):
                self.count += 1
                if self.count == 1:
                    self._on_first(signal_number)
                else:
                    self._on_again(signal_number)

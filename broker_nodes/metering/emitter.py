"""The metering loop: close each window, turn it into rows, append them to ``__usage``, send
again what was not acknowledged.

One thread (``usage-emitter``) wakes at every window boundary (``windows``), drains the
traffic counters, reads the led partitions' stats, and turns them into the window's rows
with the next sequence number of this incarnation; a window without any row is skipped and
takes no number. The window goes to the backlog (on disk first) and its rows to the sink.
Acknowledgements are served on the same thread; a row that fails goes back to unsent and is
sent again, same bytes and so same identity, after a short backoff or at the next window.

While ``__usage`` does not exist (a standalone broker, or a cluster whose controller has not
created it yet) or the broker has no internal token, windows stay in the backlog and the
broker says so once; the topic is looked up again at each window. An ongoing failure is
logged once when it starts and once when rows are acknowledged again.

Shutdown, in two steps: :meth:`UsageEmitter.flush` (before the broker hands its leaderships
away) closes the open window early and waits, bounded, for the backlog's acknowledgements;
:meth:`UsageEmitter.shutdown` (after the server stopped) closes what traffic came in between
as one more window, waits briefly, and leaves anything unacknowledged on disk for the next
start. Wall-clock times come from the injected clock; waits are bounded with real time.

Thread-safety: the emitter's state is used by one thread at a time (its own thread while it
runs, the caller of ``flush`` / ``shutdown`` after stopping it, or a test calling ``tick``).
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path

from broker_nodes.clock import Clock
from broker_nodes.metering.backlog import PendingWindow, UsageBacklog
from broker_nodes.metering.counters import TrafficCounters
from broker_nodes.metering.partition_stats import PartitionStats
from broker_nodes.metering.rows import window_rows
from broker_nodes.metering.sink import SinkFailure, UsageSink
from broker_nodes.metering.windows import Window, WindowSchedule
from log_formats.usage_records import USAGE_TOPIC, encode

logger = logging.getLogger(__name__)

ACKNOWLEDGEMENT_POLL_SECONDS = 0.05  # how often acknowledgements are served while rows are in flight
MAX_RETRY_BACKOFF_MS = 1_000  # after a failure, unsent rows wait this long (at most half an interval) before they go again
THREAD_STOP_SECONDS = 15.0  # longest a stop waits for the loop (a send may block for a metadata lookup)


class UsageEmitter:
    """Closes windows and appends their rows to ``__usage``; see the module docstring."""

    def __init__(
        self,
        *,
        node_id: int,
        incarnation: str,
        interval_ms: int,
        clock: Clock,
        counters: TrafficCounters,
        partition_stats: Callable[[], list[PartitionStats]],
        backlog: UsageBacklog,
        open_sink: Callable[[], UsageSink] | None,
        backlog_location: Path | None = None,
    ) -> None:
        """``open_sink`` None: the broker cannot write ``__usage`` (no internal token); windows stay in the backlog."""
        self._node_id = node_id
        self._key = str(node_id).encode("ascii")
        self._incarnation = incarnation
        self._clock = clock
        self._counters = counters
        self._partition_stats = partition_stats
        self._backlog = backlog
        self._open_sink = open_sink
        self._backlog_location = backlog_location
        self._schedule = WindowSchedule(interval_ms, clock.milliseconds())
        self._retry_backoff_ms = max(1, min(MAX_RETRY_BACKOFF_MS, interval_ms // 2))
        self._sequence = 0
        self._sink: UsageSink | None = None
        self._topic_ready = False
        self._retry_at_ms = 0
        self._failure: str | None = None  # the reason of the ongoing failure (logged once)
        self._said_unwritable = False
        self._flushed = False
        self._shut_down = False
        self._sink_closing = False
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ the loop

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="usage-emitter", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stopping.is_set():
            try:
                self.tick()
            except Exception:
                logger.exception("usage metering failed unexpectedly; it goes on at the next window")
            self._stopping.wait(self._seconds_until_next_tick())

    def _seconds_until_next_tick(self) -> float:
        now = self._clock.milliseconds()
        wake_at = self._schedule.next_boundary_ms()
        if self._backlog.has_unsent():
            wake_at = min(wake_at, self._retry_at_ms)
        seconds = max(0, wake_at - now) / 1000.0
        if self._backlog.in_flight_rows:
            seconds = min(seconds, ACKNOWLEDGEMENT_POLL_SECONDS)
        return seconds

    def tick(self) -> None:
        """One round: close a window whose boundary passed, serve acknowledgements, send what is due."""
        now = self._clock.milliseconds()
        window = self._schedule.close_due(now)
        if window is not None:
            self._close(window, include_partitions=True)
        self._poll(0)
        if self._backlog.has_unsent() and now >= self._retry_at_ms:
            self._send_unsent(now)

    # ------------------------------------------------------------------ windows

    def _close(self, window: Window, *, include_partitions: bool) -> PendingWindow | None:
        traffic = self._counters.drain()
        partitions = self._partition_stats() if include_partitions else []
        rows = window_rows(node_id=self._node_id, incarnation=self._incarnation, sequence=self._sequence, window=window, traffic=traffic, partitions=partitions)
        if not rows:
            return None
        pending = PendingWindow(self._incarnation, self._sequence, window.start_ms, window.end_ms, tuple(encode(row) for row in rows))
        self._sequence += 1
        self._backlog.add(pending)
        self._retry_at_ms = 0  # a new window is sent at once (and __usage looked up again if it was missing)
        return pending

    # ------------------------------------------------------------------ sending

    def _sink_or_none(self) -> UsageSink | None:
        if self._sink is not None:
            return self._sink
        if self._open_sink is None:
            if not self._said_unwritable:
                logger.warning("this broker has no internal token, so it cannot write %s: usage windows are kept in its backlog", USAGE_TOPIC)
                self._said_unwritable = True
            return None
        try:
            self._sink = self._open_sink()
        except Exception as error:
            self._note_failure(f"cannot create the usage producer: {error}")
            return None
        return self._sink

    def _send_unsent(self, now: int) -> None:
        sink = self._sink_or_none()
        if sink is None:
            self._retry_at_ms = now + self._schedule.interval_ms
            return
        if not self._topic_ready and not self._look_up_topic(sink, now):
            return
        for window, index in list(self._backlog.unsent_rows()):
            self._backlog.start_sending(window, index)
            try:
                sink.send(self._key, window.values[index], now, functools.partial(self._answered, window, index))
            except Exception as error:
                self._backlog.failed(window, index)
                self._note_failure(f"cannot queue usage rows: {error}")
                self._retry_at_ms = now + self._retry_backoff_ms
                return

    def _look_up_topic(self, sink: UsageSink, now: int) -> bool:
        try:
            exists = sink.topic_exists()
        except Exception as error:
            self._note_failure(f"cannot look up {USAGE_TOPIC}: {error}")
            self._retry_at_ms = now + self._retry_backoff_ms
            return False
        if not exists:
            if not self._said_unwritable:
                logger.info(
                    "%s does not exist (a standalone broker has none; a cluster's controller creates it): usage windows are kept "
                    "in the backlog (%d rows now) until it does",
                    USAGE_TOPIC,
                    self._backlog.rows,
                )
                self._said_unwritable = True
            self._retry_at_ms = now + self._schedule.interval_ms
            return False
        if self._said_unwritable:
            logger.info("%s exists now: sending the %d usage rows kept meanwhile", USAGE_TOPIC, self._backlog.unacknowledged_rows)
            self._said_unwritable = False
        self._topic_ready = True
        return True

    def _answered(self, window: PendingWindow, index: int, failure: SinkFailure | None) -> None:
        if failure is None:
            self._backlog.acknowledge(window, index)
            if self._failure is not None:
                logger.info("usage rows are acknowledged by %s again", USAGE_TOPIC)
                self._failure = None
            return
        self._backlog.failed(window, index)
        if self._sink_closing:
            return  # the rows the closing producer gives up on: they stay on disk for the next start
        if failure.unknown_topic:
            self._topic_ready = False
        self._note_failure(failure.reason)
        self._retry_at_ms = self._clock.milliseconds() + self._retry_backoff_ms

    def _note_failure(self, reason: str) -> None:
        if self._failure is None:
            logger.warning(
                "cannot append usage rows to %s (%s): %d rows wait in the backlog and are sent again", USAGE_TOPIC, reason, self._backlog.unacknowledged_rows
            )
        self._failure = reason

    def _poll(self, timeout_seconds: float) -> None:
        if self._sink is not None:
            self._sink.poll(timeout_seconds)
        elif timeout_seconds > 0:
            time.sleep(timeout_seconds)

    # ------------------------------------------------------------------ shutdown

    def _stop_thread(self) -> bool:
        """Stop the loop; False when it did not stop in time (then nothing else may touch the state)."""
        self._stopping.set()
        thread = self._thread
        if thread is None or thread is threading.current_thread():
            return True
        thread.join(THREAD_STOP_SECONDS)
        if thread.is_alive():
            logger.warning("the usage emitter did not stop within %.0f s; its open window is not emitted", THREAD_STOP_SECONDS)
            return False
        return True

    def flush(self, timeout_seconds: float) -> bool:
        """Close the open window now and wait up to ``timeout_seconds`` until the backlog is acknowledged.

        For a clean shutdown, before leaderships move away. True when nothing is left
        unacknowledged; what is left stays on disk for the next start.
        """
        if self._flushed or self._shut_down or not self._stop_thread():
            return False
        self._flushed = True
        self._close(self._schedule.close_early(self._clock.milliseconds()), include_partitions=True)
        return self._wait_for_acknowledgements(timeout_seconds, may_look_up=True)

    def shutdown(self, timeout_seconds: float) -> None:
        """Emit the traffic that arrived since :meth:`flush` (or everything, without one), wait
        up to ``timeout_seconds``, close the sink. Idempotent."""
        if self._shut_down:
            return
        self._shut_down = True
        if not self._stop_thread():
            return
        last = self._close(self._schedule.close_early(self._clock.milliseconds()), include_partitions=not self._flushed)
        if self._backlog.unacknowledged_rows:
            # After flush() the server has stopped: no looking __usage up again (a lookup
            # could wait for brokers that are gone), only sending where it is known to be;
            # and what flush() reported is not reported again.
            self._wait_for_acknowledgements(timeout_seconds, may_look_up=not self._flushed, report=last is not None or not self._flushed)
        if self._sink is not None:
            self._sink_closing = True
            try:
                self._sink.close(min(timeout_seconds, 1.0))
            except Exception:
                logger.exception("closing the usage producer failed")

    def _wait_for_acknowledgements(self, timeout_seconds: float, *, may_look_up: bool, report: bool = True) -> bool:
        deadline = time.monotonic() + timeout_seconds
        self._retry_at_ms = 0
        while True:
            now = self._clock.milliseconds()
            self._poll(0)
            if self._backlog.has_unsent() and now >= self._retry_at_ms and (self._topic_ready or may_look_up):
                self._send_unsent(now)
                may_look_up = False  # once: a missing topic does not appear within a shutdown
            if not self._backlog.unacknowledged_rows:
                return True
            remaining = deadline - time.monotonic()
            # Nothing in flight and nowhere to send: no acknowledgement can come.
            hopeless = not self._backlog.in_flight_rows and (self._sink is None or not self._topic_ready)
            if hopeless or remaining <= 0:
                break
            self._poll(min(remaining, ACKNOWLEDGEMENT_POLL_SECONDS))
        if not report:
            return False
        logger.warning(
            "%d usage rows of %d windows are not acknowledged by %s at shutdown: kept%s and sent again at the next start",
            self._backlog.unacknowledged_rows,
            len(self._backlog.windows),
            USAGE_TOPIC,
            f" in {self._backlog_location}" if self._backlog_location is not None else "",
        )
        return False

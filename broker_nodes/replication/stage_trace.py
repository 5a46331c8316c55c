"""Stage stamps of the acks=all replication round trip, for ``python -m bench.replication_round_trip --stages``.

Off unless the broker process starts with the environment variable ``WEIR_REPLICATION_TRACE``
naming a file prefix: then each stamp site appends ``(stage, topic, partition, offset, replica,
monotonic ns)`` to a list in memory, and the list is written at exit to ``<prefix>.<pid>``, one
tab-separated line per stamp (the stage by name). The clock is ``time.monotonic_ns`` (Linux's
CLOCK_MONOTONIC, one clock for every process of the machine), so stamps of the leader and of
its followers line up. While off, a stamp site costs one test of :data:`ENABLED`.

The stages, keyed by the offset they concern (``offset``: the record's for the leader's append
and the followers' receipt of it, the next fetch offset for what follows it):

- leader: ``append`` (a produce's batch is in the log: its base offset), ``fetch_woke`` (a
  follower's parked fetch woke up: the follower's fetch offset), ``answer_built`` (that fetch's
  read found records from the fetch offset), ``answer_returned`` (the answer leaves the
  replication logic for the servicer and gRPC), ``fetch_arrived`` (a follower's fetch with
  ``offset`` as its fetch offset reached the leader), ``high_watermark`` (moved to ``offset``),
  ``acks_done`` (an acks=all wait for ``offset`` found it replicated);
- follower: ``answer_arrived`` (records from ``offset`` came back), ``appended`` (they are in the
  log: the new log end), ``fetch_sent`` (the next fetch from ``offset`` handed to the stream),
  ``fetch_dequeued`` (gRPC's sending thread of the stream took it).

Thread-safe: ``list.append`` is atomic. Diagnostics only: nothing reads the stamps in-process.
"""

from __future__ import annotations

import atexit
import os
import time

from log_formats.replication_trace import (  # noqa: F401 - the stage names, re-exported for the stamp sites
    ACKS_DONE,
    ANSWER_ARRIVED,
    ANSWER_BUILT,
    ANSWER_RETURNED,
    APPEND,
    APPENDED,
    FETCH_ARRIVED,
    FETCH_DEQUEUED,
    FETCH_SENT,
    FETCH_WOKE,
    HIGH_WATERMARK,
    TRACE_VARIABLE,
    format_line,
)

_prefix = os.environ.get(TRACE_VARIABLE, "")
ENABLED = bool(_prefix)
_stamps: list[tuple[str, str, int, int, int, int]] = []


def stamp(stage: str, topic: str, partition: int, offset: int, replica: int = -1) -> None:
    """Record one stage (call only when :data:`ENABLED`)."""
    _stamps.append((stage, topic, partition, offset, replica, time.monotonic_ns()))


def _write() -> None:
    with open(f"{_prefix}.{os.getpid()}", "w", encoding="utf-8") as out:
        for stage, topic, partition, offset, replica, nanoseconds in _stamps:
            out.write(format_line(stage, topic, partition, offset, replica, nanoseconds))


if ENABLED:
    atexit.register(_write)

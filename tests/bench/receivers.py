"""Receive functions for LatencyReceiver tests; importable by the spawned child process."""

from array import array
from collections.abc import Callable


def receive_counting(*, expected: int, deadline_ns: int, on_ready: Callable[[], None], latency_ns: int) -> array:
    on_ready()
    return array("q", [latency_ns] * expected)


def receive_failing(*, expected: int, deadline_ns: int, on_ready: Callable[[], None]) -> array:
    raise ConnectionRefusedError("nothing listens there")

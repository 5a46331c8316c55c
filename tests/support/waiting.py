"""Waiting for a condition in tests: poll it, bounded in time, instead of sleeping a fixed time.

A fixed sleep is either too short on a loaded machine (the test fails for no reason) or too long
on a quiet one (the suite is slow for no reason). :func:`wait_until` returns as soon as the
condition holds and fails with a message naming what never happened.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

Value = TypeVar("Value")

POLL_SECONDS = 0.02  # between two looks at the condition: short next to any timeout a test uses


def wait_until(condition: Callable[[], Value], what: str, timeout: float = 10.0, *, interval: float = POLL_SECONDS) -> Value:
    """The condition's first truthy value, polled every ``interval`` seconds for at most ``timeout``
    seconds; TimeoutError naming ``what`` (and the last value seen) otherwise."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise TimeoutError(f"{what}: not after {timeout:g} s (last seen: {value!r})")
        time.sleep(interval)

"""Loopback ports for the processes tests start, safe when pytest-xdist runs tests side by side.

A port found free by binding port 0 is only free "a moment ago": until the process under test
binds it, the kernel may hand it to anyone else, and it most likely does, because bind(0) and every
outgoing connection draw from the same ephemeral range (``ip_local_port_range``, 32768-60999 by
default). So :func:`free_port` draws instead from the ports *below* the ephemeral range, which no
outgoing connection takes, and gives every xdist worker its own stripe of them, so two workers never
pick the same port; within a stripe it picks at random (independent runs on one machine rarely meet)
and hands out no port twice in a row of :data:`REMEMBERED` picks. Each candidate is bound once to
check it is free now. What is left (another program binding the port before the process under test
does) is handled where it can be: :class:`tests.support.processes.BrokerProcess` starts again on a
new port when its first start finds the port taken.
"""

from __future__ import annotations

import os
import random
import socket
from collections import deque
from pathlib import Path

LOOPBACK = "127.0.0.1"
LOWEST_PORT = 10_000  # above the well-known and registered ports services on this machine may use
EPHEMERAL_RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")
DEFAULT_EPHEMERAL_LOW = 32_768  # Linux's default first ephemeral port
ATTEMPTS = 200  # candidates tried before giving up (a stripe of thousands of ports is almost all free)
REMEMBERED = 256  # recently handed-out ports not handed out again: their process may not have bound them yet

_recent: deque[int] = deque(maxlen=REMEMBERED)
_random = random.Random()  # seeded from the OS: independent of tests that seed the global generator


def _ephemeral_low() -> int:
    try:
        return int(EPHEMERAL_RANGE_FILE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return DEFAULT_EPHEMERAL_LOW


def _worker_index() -> tuple[int, int]:
    """(this xdist worker's index, the number of workers); (0, 1) outside xdist."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    count = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1") or 1)
    if not worker.startswith("gw") or not worker[2:].isdigit() or count < 1:
        return 0, 1
    return int(worker[2:]) % count, count


def port_stripe() -> range:
    """The ports this process draws from: its worker's share of [LOWEST_PORT, first ephemeral port)."""
    low, high = LOWEST_PORT, max(_ephemeral_low(), LOWEST_PORT + 1_000)
    index, count = _worker_index()
    width = (high - low) // count
    return range(low + index * width, low + (index + 1) * width)


def is_free(port: int, host: str = LOOPBACK) -> bool:
    """Whether ``host:port`` can be bound for listening right now (no SO_REUSEADDR: a port with
    connections in TIME_WAIT counts as taken, as it would for some servers)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            probe.bind((host, port))
        except OSError:
            return False
    return True


def free_port() -> int:
    """A loopback TCP port that is free now, outside the ephemeral range and this worker's alone."""
    stripe = port_stripe()
    for _ in range(ATTEMPTS):
        port = _random.choice(stripe)
        if port in _recent or not is_free(port):
            continue
        _recent.append(port)
        return port
    raise RuntimeError(f"no free loopback port in {stripe.start}-{stripe.stop - 1} after {ATTEMPTS} tries")

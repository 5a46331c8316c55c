"""Per-tenant byte-rate quotas: one token bucket per tenant and direction (produce, fetch).

A bucket refills at the quota's rate up to one second's worth of bytes (the burst). Every
response's bytes are taken from it even when that drives it below zero, as Kafka records
usage first and throttles after: a negative balance of ``d`` bytes means the tenant is
``d / rate`` seconds ahead of its quota, and that is the throttle time its response is
delayed by (at most ``max_throttle_ms``), reported as ``throttle_time_ms``. Tenants never
share a bucket, so one tenant's throttling never slows another.

Thread-safety: one lock guards the buckets; it is held only to update a balance, never while
a response is delayed.
"""

from __future__ import annotations

import enum
import threading
from dataclasses import dataclass

from broker_nodes.clock import Clock

DEFAULT_MAX_THROTTLE_MS = 5_000  # the longest a response is ever delayed
BURST_SECONDS = 1.0  # a bucket holds at most this many seconds of its rate


class Direction(enum.Enum):
    PRODUCE = "produce"
    FETCH = "fetch"


@dataclass
class _Bucket:
    rate: float  # bytes per second
    balance: float  # bytes; negative when the tenant is over its quota
    updated: float  # monotonic seconds of the last refill


class QuotaManager:
    """Token buckets keyed by (tenant, direction). See the module docstring."""

    def __init__(self, clock: Clock, *, max_throttle_ms: int = DEFAULT_MAX_THROTTLE_MS) -> None:
        self._clock = clock
        self._max_throttle_ms = max_throttle_ms
        self._lock = threading.Lock()
        self._buckets: dict[tuple[str, Direction], _Bucket] = {}

    def record(self, tenant_id: str, direction: Direction, size_bytes: int, rate_bytes_per_second: int) -> int:
        """Take ``size_bytes`` from the tenant's bucket; returns the throttle time in ms (0 within quota).

        A rate of 0 means unlimited (no bucket is kept). A changed rate applies from now on.
        """
        if rate_bytes_per_second <= 0 or not tenant_id:
            return 0
        now = self._clock.monotonic()
        burst = rate_bytes_per_second * BURST_SECONDS
        key = (tenant_id, direction)
        with self._lock:
            bucket = self._buckets.get(key)
            if bucket is None:
                bucket = self._buckets[key] = _Bucket(float(rate_bytes_per_second), burst, now)
            bucket.balance = min(burst, bucket.balance + (now - bucket.updated) * bucket.rate)
            bucket.rate = float(rate_bytes_per_second)
            bucket.updated = now
            bucket.balance -= size_bytes
            balance = bucket.balance
        if balance >= 0:
            return 0
        return min(self._max_throttle_ms, int(-balance * 1000 / rate_bytes_per_second) + 1)

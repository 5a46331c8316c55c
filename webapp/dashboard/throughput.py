"""Live throughput: records/s and bytes/s in and out per partition, from the brokers' own
counters.

Each broker counts its clients' traffic per partition since its process started and reports
the running totals in DescribeState (``webapp.provisioning.describe``: ``*_total`` fields,
``counted_by`` naming the process). Every time a page describes a topic's partitions, the
totals are kept here as a :class:`Reading`; two consecutive readings of a partition counted
by the same process give its rates over that interval. A restarted broker (another
``counted_by``) or a new leader starts from a new reading: no interval spans them.

Readings live in Django's cache (:class:`ThroughputHistory`; settings' ``CACHES``: Redis or
another shared backend when configured, so every web process reads and extends one history;
Django's default, one process's memory, otherwise), at most one per partition every
``MIN_INTERVAL`` and none older than ``KEEP``: the pages' refresh every few seconds fills them.
Each partition's readings are one cache entry expiring after ``KEEP``, so the history is bounded
in entries per partition and in time; a page reads and writes all its partitions in one
``get_many`` and one ``set_many``. Two processes recording the same partition at once may
lose one reading, which only thins the series: each rate is still exact over its interval.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.core.cache import caches

# How long readings are kept (the charts' window).
KEEP = timedelta(minutes=10)
# Readings closer than this to the previous one are not kept (a rate needs some time).
MIN_INTERVAL = timedelta(seconds=2)
# Cache keys of the shared history start with this (then a hash of the partition's key).
CACHE_PREFIX = "weir:throughput"
# A partition's entry outlives its newest reading by KEEP plus this, then the cache drops it.
EXPIRY_MARGIN_SECONDS = 60
# Readings per key when min_interval is zero (a bound all the same).
MAX_READINGS_PER_KEY = 600


@dataclass(frozen=True)
class Reading:
    """One partition's running totals at ``at``, as counted by broker process ``counted_by``."""

    at: datetime
    counted_by: str
    bytes_in: int
    records_in: int
    bytes_out: int
    records_out: int


@dataclass(frozen=True)
class Rates:
    """Per-second rates over the interval ending at ``at``."""

    at: datetime
    records_in: float
    records_out: float
    bytes_in: float
    bytes_out: float

    def __add__(self, other: Rates) -> Rates:
        return Rates(
            self.at,
            self.records_in + other.records_in,
            self.records_out + other.records_out,
            self.bytes_in + other.bytes_in,
            self.bytes_out + other.bytes_out,
        )


def rates_between(earlier: Reading, later: Reading) -> Rates | None:
    """The rates from ``earlier`` to ``later``; None when they cannot be compared (another
    broker process, totals that went back, no time between them)."""
    seconds = (later.at - earlier.at).total_seconds()
    if seconds <= 0 or earlier.counted_by != later.counted_by:
        return None
    deltas = (
        later.records_in - earlier.records_in,
        later.records_out - earlier.records_out,
        later.bytes_in - earlier.bytes_in,
        later.bytes_out - earlier.bytes_out,
    )
    if any(delta < 0 for delta in deltas):
        return None
    return Rates(later.at, *(delta / seconds for delta in deltas))


def rate_series(readings: Sequence[Reading]) -> list[Rates]:
    """The rates of each interval between consecutive readings (oldest first), skipping the
    intervals that cannot be compared."""
    series = []
    for earlier, later in zip(readings, readings[1:], strict=False):
        rates = rates_between(earlier, later)
        if rates is not None:
            series.append(rates)
    return series


def summed(series: Iterable[Sequence[Rates]]) -> list[Rates]:
    """Several partitions' rates added up per moment (readings of one description share it)."""
    by_moment: dict[datetime, Rates] = {}
    for one in series:
        for rates in one:
            by_moment[rates.at] = by_moment[rates.at] + rates if rates.at in by_moment else rates
    return [by_moment[moment] for moment in sorted(by_moment)]


class ThroughputHistory:
    """Recent readings per key (e.g. ``(topic id, partition)``), shared through Django's cache
    ``cache_alias`` under ``prefix``. Safe from any thread or process (each call is a few cache
    operations; concurrent writers of one key may drop a reading, never corrupt one)."""

    def __init__(self, keep: timedelta = KEEP, min_interval: timedelta = MIN_INTERVAL, cache_alias: str = "default", prefix: str = CACHE_PREFIX) -> None:
        self._keep = keep
        self._min_interval = min_interval
        self._alias = cache_alias
        self._prefix = prefix
        self._generation_key = f"{prefix}:generation"
        # At most this many readings per key (all within ``keep``, ``min_interval`` apart).
        self._max_readings = int(keep / min_interval) + 1 if min_interval > timedelta(0) else MAX_READINGS_PER_KEY
        self._timeout = keep.total_seconds() + EXPIRY_MARGIN_SECONDS

    def record(self, key: object, reading: Reading) -> None:
        """Keep ``reading`` unless the last one of ``key`` is less than ``min_interval`` older; drop those past ``keep``."""
        self.record_many([(key, reading)], reading.at)

    def record_many(self, readings: Sequence[tuple[object, Reading | None]], now: datetime) -> list[list[Reading]]:
        """Keep each ``(key, reading)`` as :meth:`record` does (None: nothing to keep) and return
        each key's readings from the last ``keep`` before ``now``, oldest first, in the same order.
        One ``get_many`` and at most one ``set_many`` whatever the number of keys."""
        cache = caches[self._alias]
        names = [self._cache_key(key) for key, _ in readings]
        stored = cache.get_many([*names, self._generation_key])
        generation = stored.get(self._generation_key, 0)
        current: dict[str, list[Reading]] = {}
        changed: dict[str, tuple[int, list[Reading]]] = {}
        for name, (_, reading) in zip(names, readings, strict=True):
            kept = current.get(name)
            if kept is None:
                entry = stored.get(name)
                kept = list(entry[1]) if isinstance(entry, tuple) and len(entry) == 2 and entry[0] == generation else []
                current[name] = kept
            if reading is None or (kept and reading.at - kept[-1].at < self._min_interval):
                continue
            kept.append(reading)
            while kept and (reading.at - kept[0].at > self._keep or len(kept) > self._max_readings):
                kept.pop(0)
            changed[name] = (generation, kept)
        if changed:
            cache.set_many(changed, timeout=self._timeout)
        return [[reading for reading in current[name] if now - reading.at <= self._keep] for name in names]

    def readings(self, key: object, now: datetime) -> list[Reading]:
        """The readings of ``key`` from the last ``keep`` before ``now``, oldest first."""
        return self.record_many([(key, None)], now)[0]

    def clear(self) -> None:
        """Forget every reading of this history (in every process): a new generation of keys."""
        cache = caches[self._alias]
        cache.set(self._generation_key, int(cache.get(self._generation_key, 0)) + 1, timeout=None)

    def _cache_key(self, key: object) -> str:
        # Short and free of spaces and control characters whatever the key (memcached's rules).
        return f"{self._prefix}:{hashlib.sha256(repr(key).encode('utf-8')).hexdigest()[:40]}"

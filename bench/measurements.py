"""What one benchmark run measured, and how several runs are summarised.

A run yields a ``ThroughputSample`` (produce, consume) or a ``LatencySample`` (end to end).
Every figure the report prints is the median over runs of the figure of each run, so that one
unlucky run (a page-cache flush, a garbage collection) neither lifts nor sinks the result.
"""

from __future__ import annotations

import math
import statistics
from array import array
from collections.abc import Sequence
from dataclasses import dataclass, field

# Megabytes in the report are mebibytes, as in Kafka's published benchmark figures
# (821,557 records/s of 100 bytes is the 78.3 MB/s they print).
BYTES_PER_MEBIBYTE = 1024 * 1024
NANOSECONDS_PER_MILLISECOND = 1_000_000


def percentile(sorted_values: Sequence[int], fraction: float) -> int:
    """The nearest-rank percentile of ``sorted_values`` (ascending, non-empty); ``fraction`` in (0, 1].

    Nearest rank rather than interpolation: the result is always a latency that some record
    really had, which is what a p99 promises to the reader.
    """
    if not sorted_values:
        raise ValueError("percentile of an empty sequence")
    if not 0.0 < fraction <= 1.0:
        raise ValueError(f"fraction must be in (0, 1], got {fraction}")
    rank = math.ceil(fraction * len(sorted_values))
    return sorted_values[rank - 1]


@dataclass(frozen=True)
class LatencySummary:
    """Percentiles of a set of latencies, in milliseconds."""

    count: int
    p50_ms: float
    p99_ms: float
    p999_ms: float
    max_ms: float

    @classmethod
    def from_nanoseconds(cls, latencies_ns: Sequence[int]) -> LatencySummary:
        """Summarise latencies given in nanoseconds (any order, non-empty)."""
        ordered = sorted(latencies_ns)
        return cls(
            count=len(ordered),
            p50_ms=percentile(ordered, 0.50) / NANOSECONDS_PER_MILLISECOND,
            p99_ms=percentile(ordered, 0.99) / NANOSECONDS_PER_MILLISECOND,
            p999_ms=percentile(ordered, 0.999) / NANOSECONDS_PER_MILLISECOND,
            max_ms=ordered[-1] / NANOSECONDS_PER_MILLISECOND,
        )


@dataclass(frozen=True)
class ThroughputSample:
    """One produce or consume run: ``records`` of ``record_size`` bytes moved in ``seconds``.

    ``latency`` is the sampled produce-to-acknowledgement latency when the scenario has one.
    """

    records: int
    record_size: int
    seconds: float
    latency: LatencySummary | None = None

    def __post_init__(self) -> None:
        if self.records <= 0 or self.seconds <= 0:
            raise ValueError(f"a throughput sample needs records > 0 and seconds > 0, got {self.records} in {self.seconds}s")

    @property
    def records_per_second(self) -> float:
        return self.records / self.seconds

    @property
    def mebibytes_per_second(self) -> float:
        return self.records * self.record_size / self.seconds / BYTES_PER_MEBIBYTE


@dataclass(frozen=True)
class LatencySample:
    """One end-to-end run: records sent at ``target_rate`` per second, and their latencies."""

    record_size: int
    target_rate: int
    seconds: float
    latencies_ns: array = field(repr=False)

    def __post_init__(self) -> None:
        if len(self.latencies_ns) == 0 or self.seconds <= 0:
            raise ValueError("a latency sample needs at least one received record and a positive duration")

    @property
    def records_per_second(self) -> float:
        return len(self.latencies_ns) / self.seconds

    @property
    def mebibytes_per_second(self) -> float:
        return self.records_per_second * self.record_size / BYTES_PER_MEBIBYTE

    def summary(self) -> LatencySummary:
        return LatencySummary.from_nanoseconds(self.latencies_ns)


@dataclass(frozen=True)
class Figures:
    """The medians over runs that one row of a report table shows."""

    record_size: int
    runs: int
    records_per_second: float
    mebibytes_per_second: float
    latency: LatencySummary | None


def _median_latency(summaries: Sequence[LatencySummary]) -> LatencySummary | None:
    if not summaries:
        return None
    return LatencySummary(
        count=int(statistics.median(summary.count for summary in summaries)),
        p50_ms=statistics.median(summary.p50_ms for summary in summaries),
        p99_ms=statistics.median(summary.p99_ms for summary in summaries),
        p999_ms=statistics.median(summary.p999_ms for summary in summaries),
        max_ms=statistics.median(summary.max_ms for summary in summaries),
    )


def median_figures(samples: Sequence[ThroughputSample | LatencySample]) -> Figures:
    """Medians of every figure over ``samples`` (non-empty, all of one record size)."""
    if not samples:
        raise ValueError("no samples to summarise")
    record_sizes = {sample.record_size for sample in samples}
    if len(record_sizes) != 1:
        raise ValueError(f"samples mix record sizes {sorted(record_sizes)}")
    latencies: list[LatencySummary] = []
    for sample in samples:
        if isinstance(sample, LatencySample):
            latencies.append(sample.summary())
        elif sample.latency is not None:
            latencies.append(sample.latency)
    return Figures(
        record_size=record_sizes.pop(),
        runs=len(samples),
        records_per_second=statistics.median(sample.records_per_second for sample in samples),
        mebibytes_per_second=statistics.median(sample.mebibytes_per_second for sample in samples),
        latency=_median_latency(latencies),
    )

from array import array

import pytest

from bench.measurements import LatencySample, LatencySummary, ThroughputSample, median_figures, percentile


def test_percentile_returns_nearest_rank_value() -> None:
    values = list(range(1, 101))
    assert percentile(values, 0.50) == 50
    assert percentile(values, 0.99) == 99
    assert percentile(values, 1.0) == 100


def test_percentile_of_single_value_is_that_value() -> None:
    assert percentile([7], 0.999) == 7


def test_percentile_rejects_empty_sequence() -> None:
    with pytest.raises(ValueError):
        percentile([], 0.5)


def test_latency_summary_converts_nanoseconds_to_milliseconds_in_any_input_order() -> None:
    summary = LatencySummary.from_nanoseconds([3_000_000, 1_000_000, 2_000_000])
    assert summary.count == 3
    assert summary.p50_ms == 2.0
    assert summary.max_ms == 3.0


def test_throughput_sample_computes_rates() -> None:
    sample = ThroughputSample(records=1_048_576, record_size=100, seconds=2.0)
    assert sample.records_per_second == 524_288
    assert sample.mebibytes_per_second == 50.0


def test_throughput_sample_rejects_zero_duration() -> None:
    with pytest.raises(ValueError):
        ThroughputSample(records=10, record_size=100, seconds=0.0)


def test_median_figures_takes_the_median_run_of_each_figure() -> None:
    samples = [ThroughputSample(1000, 100, seconds) for seconds in (1.0, 4.0, 2.0)]
    figures = median_figures(samples)
    assert figures.runs == 3
    assert figures.records_per_second == 500.0
    assert figures.latency is None


def test_median_figures_summarises_latency_samples() -> None:
    fast = LatencySample(100, 5000, 1.0, array("q", [1_000_000] * 10))
    slow = LatencySample(100, 5000, 1.0, array("q", [9_000_000] * 10))
    middle = LatencySample(100, 5000, 1.0, array("q", [4_000_000] * 10))
    figures = median_figures([fast, slow, middle])
    assert figures.latency is not None
    assert figures.latency.p99_ms == 4.0


def test_median_figures_rejects_mixed_record_sizes() -> None:
    with pytest.raises(ValueError):
        median_figures([ThroughputSample(10, 100, 1.0), ThroughputSample(10, 1024, 1.0)])

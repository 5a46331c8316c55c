import io

from rich.console import Console

from bench.measurements import Figures, LatencySummary
from bench.report import scenario_table, target_verdict
from bench.runner import Row, ScenarioResult


def figures(records_per_second: float, p99_ms: float | None = None) -> Figures:
    latency = None if p99_ms is None else LatencySummary(100, p99_ms / 2, p99_ms, p99_ms, p99_ms)
    return Figures(record_size=100, runs=3, records_per_second=records_per_second, mebibytes_per_second=records_per_second * 100 / 2**20, latency=latency)


def render(result: ScenarioResult) -> str:
    output = io.StringIO()
    Console(file=output, width=200).print(scenario_table(result))
    return output.getvalue()


def test_peer_row_shows_weir_throughput_ratio() -> None:
    result = ScenarioResult("produce", [Row("Weir", 100, 1000, figures(300_000)), Row("Redis Streams", 100, 1000, figures(100_000))])
    assert "3.00x" in render(result)


def test_e2e_ratio_compares_p99_latency() -> None:
    result = ScenarioResult("e2e", [Row("Weir", 100, 1000, figures(5000, p99_ms=2.0)), Row("NATS JetStream", 100, 1000, figures(5000, p99_ms=8.0))])
    assert "0.25x p99" in render(result)


def test_failed_row_shows_the_reason() -> None:
    result = ScenarioResult("consume", [Row("Weir", 100, 1000, failure="BenchmarkIntegrityError: lost 3 records")])
    assert "lost 3 records" in render(result)


def test_verdict_requires_target_rate_and_lead_over_every_peer() -> None:
    behind_a_peer = ScenarioResult("produce", [Row("Weir", 100, 1000, figures(350_000)), Row("Redis Streams", 100, 1000, figures(400_000))])
    ahead = ScenarioResult("produce", [Row("Weir", 100, 1000, figures(350_000)), Row("Redis Streams", 100, 1000, figures(100_000))])
    assert "NOT met" in target_verdict(behind_a_peer)
    assert ": met" in target_verdict(ahead)


def test_e2e_verdict_checks_p99_against_ten_milliseconds() -> None:
    result = ScenarioResult("e2e", [Row("Weir", 100, 1000, figures(5000, p99_ms=12.5))])
    assert "NOT met" in target_verdict(result)


def latency_figures(p99_ms: float, p999_ms: float) -> Figures:
    return Figures(
        record_size=100, runs=3, records_per_second=5000, mebibytes_per_second=0.5, latency=LatencySummary(100, p99_ms / 2, p99_ms, p999_ms, p999_ms)
    )


def test_e2e_latency_goal_needs_both_sdk_rows_and_ignores_the_kafka_door() -> None:
    both_fast = ScenarioResult(
        "e2e",
        [
            Row("Weir", 100, 1000, latency_figures(0.9, 2.5)),
            Row("Weir (Kafka protocol, librdkafka)", 100, 1000, latency_figures(20.0, 30.0)),
            Row("Weir, acks=all RF=3", 100, 1000, latency_figures(0.95, 2.9)),
        ],
    )
    replicated_slow = ScenarioResult(
        "e2e", [Row("Weir", 100, 1000, latency_figures(0.9, 2.5)), Row("Weir, acks=all RF=3", 100, 1000, latency_figures(4.0, 9.0))]
    )
    tail_too_long = ScenarioResult("e2e", [Row("Weir", 100, 1000, latency_figures(0.9, 3.5))])
    assert "p99.9 <= 3 ms: met (Weir: 0.90 / 2.50 ms; Weir, acks=all RF=3: 0.95 / 2.90 ms)" in target_verdict(both_fast)
    assert "p99.9 <= 3 ms: NOT met" in target_verdict(replicated_slow)
    assert "p99.9 <= 3 ms: NOT met" in target_verdict(tail_too_long)

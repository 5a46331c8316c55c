"""bench.replication_round_trip without a stack: one record at a time, failures named, the report's figures."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from bench.replication_round_trip import REPLICATED, UNREPLICATED, RoundTripError, Samples, report, sequential_round_trips


class FakeProducer:
    """Acknowledges each record at flush; ``fail_at`` (1-based) gets a delivery error, ``stuck_at`` is never acknowledged."""

    def __init__(self, fail_at: int = 0, stuck_at: int = 0) -> None:
        self.fail_at, self.stuck_at = fail_at, stuck_at
        self.pending: list[Callable[[object, object], None]] = []
        self.produced = 0
        self.most_pending = 0

    def produce(self, topic: str, value: bytes, on_delivery: Callable[[object, object], None]) -> None:
        self.produced += 1
        self.pending.append(on_delivery)
        self.most_pending = max(self.most_pending, len(self.pending))

    def flush(self, timeout: float) -> int:
        if self.produced == self.stuck_at:
            return len(self.pending)
        for callback in self.pending:
            callback("NOT_ENOUGH_REPLICAS" if self.produced == self.fail_at else None, None)
        self.pending.clear()
        return 0


def test_records_go_one_at_a_time_and_each_is_timed() -> None:
    producer = FakeProducer()
    latencies = sequential_round_trips(producer, "t", 5)  # type: ignore[arg-type]
    assert len(latencies) == 5 and all(latency > 0 for latency in latencies)
    assert producer.most_pending == 1  # the next record waits for the previous acknowledgement


@pytest.mark.parametrize(("producer", "message"), [(FakeProducer(fail_at=3), "NOT_ENOUGH_REPLICAS"), (FakeProducer(stuck_at=2), "not acknowledged")])
def test_a_failed_or_unacknowledged_record_stops_the_run(producer: FakeProducer, message: str) -> None:
    with pytest.raises(RoundTripError, match=message):
        sequential_round_trips(producer, "t", 5)  # type: ignore[arg-type]


def test_the_report_gives_percentiles_and_broker_cpu_per_record() -> None:
    samples = {
        REPLICATED: Samples(
            [2_000_000] * 99 + [9_000_000], broker_cpu_seconds=0.5, produced=1000, busiest_broker_cpu_seconds=0.3, busiest_broker_switches=64_500
        ),
        UNREPLICATED: Samples(),
    }
    text = report(samples, runs=1, records=100)
    row = next(line for line in text.splitlines() if line.startswith(REPLICATED.label))
    # p50, p99, p99.9 ms, records, us per record on all brokers and on the busiest, the busiest's context switches per record
    assert row.split()[-7:] == ["2.000", "2.000", "9.000", "100", "500", "300", "64.5"]
    assert UNREPLICATED.label not in text.split("\n", 2)[2]  # a workload without records has no row

"""bench.kafka_request_cost: both front doors of one broker measured per run, CPU divided by the Produce requests the broker counted."""

from __future__ import annotations

import pytest

from bench import kafka_request_cost
from bench.measurements import LatencySummary

LATENCY = LatencySummary(count=1, p50_ms=1.0, p99_ms=2.0, p999_ms=2.0, max_ms=2.0)


def test_each_client_gets_a_row_per_run_with_the_requests_the_broker_answered(capsys: pytest.CaptureFixture[str]) -> None:
    kafka_request_cost.main(["--records", "60", "--rate", "400", "--runs", "1"])
    rows = [line.split("│") for line in capsys.readouterr().out.splitlines() if line.startswith("│ ")]
    assert [row[1].strip() for row in rows] == ["librdkafka", "sdk"]
    requests = [float(row[3].strip().replace(",", "")) for row in rows]
    assert all(0 < count <= 60 for count in requests)  # at most one request per record; the broker's own counter


def test_a_row_divides_the_cpu_by_requests_and_by_records_and_takes_off_the_idle_share() -> None:
    row = kafka_request_cost.CostRow(
        "librdkafka", 1, 1000, 800, cpu_seconds=0.4, idle_cpu_per_second=0.01, seconds=2.0, latency=LATENCY, load_before=1, load_after=1
    )
    assert (round(row.cpu_us_per_request), round(row.cpu_us_per_record), round(row.net_cpu_us_per_request)) == (500, 400, 475)

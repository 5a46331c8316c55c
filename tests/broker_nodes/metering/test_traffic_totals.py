"""The traffic counters' running totals since the broker started: what DescribeState reports
for the dashboard's live throughput. Draining a window does not reset them."""

from __future__ import annotations

from broker_nodes.metering.counters import PartitionTraffic, TrafficCounters


def test_totals_add_up_across_drained_windows() -> None:
    counters = TrafficCounters()
    counters.add_produced([("t~orders", 0, 500, 5), ("t~orders", 1, 100, 1)], throttle_time_ms=0)
    assert counters.drain()[("t~orders", 0)].bytes_in == 500
    counters.add_produced([("t~orders", 0, 300, 3)], throttle_time_ms=0)
    counters.add_fetched([("t~orders", 0, 800, 8)], throttle_time_ms=2)

    totals = counters.totals()
    assert totals[("t~orders", 0)] == PartitionTraffic(
        bytes_in=800, records_in=8, bytes_out=800, records_out=8, produce_requests=2, fetch_requests=1, throttle_time_ms=2
    )
    assert totals[("t~orders", 1)].records_in == 1
    # The window still holds only what came after its last drain.
    assert counters.drain()[("t~orders", 0)].bytes_in == 300
    assert counters.totals() == totals

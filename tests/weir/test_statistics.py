"""librdkafka-shaped statistics: the emission timer (injected clock) and the shape built from counters."""

from __future__ import annotations

from weir.statistics import ClientCounters, StatisticsSource, StatisticsTimer, build_statistics


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_timer_is_due_once_per_interval_and_never_when_off() -> None:
    clock = _Clock()
    timer = StatisticsTimer(1000, clock)
    assert not timer.take_due() and timer.seconds_left() == 1.0
    clock.now += 1.0
    assert timer.take_due() and not timer.take_due()
    clock.now += 3.5  # a slow application: one emission, then the next a full interval later
    assert timer.take_due() and not timer.take_due()
    assert timer.seconds_left() == 1.0
    off = StatisticsTimer(0, clock)
    assert off.seconds_left() is None and not off.take_due()


def test_statistics_name_brokers_and_partitions_and_start_rtt_over_each_time() -> None:
    counters = ClientCounters()
    counters.request_sent("10.0.0.1:9092", 100)
    counters.response_received("10.0.0.1:9092", 40, 0.002)
    counters.request_sent("10.0.0.9:9092", 50)
    counters.request_failed("10.0.0.9:9092")
    counters.produced("orders", 1, 3, 300)
    source = StatisticsSource(
        name="app#producer-1",
        client_id="app",
        kind="producer",
        started=90.0,
        brokers={1: "10.0.0.1:9092"},
        leaders={"orders": (1, 1)},
        metadata_ages={"orders": 2.0},
    )
    stats = build_statistics(source, counters, now=100.0, wall=1_700_000_000.5)
    assert (stats["ts"], stats["time"], stats["age"]) == (100_000_000, 1_700_000_000, 10_000_000)
    assert (stats["tx"], stats["tx_bytes"], stats["rx"], stats["rx_bytes"], stats["txmsgs"], stats["txmsg_bytes"]) == (2, 150, 1, 40, 3, 300)
    known, bootstrap = stats["brokers"]["10.0.0.1:9092/1"], stats["brokers"]["10.0.0.9:9092/bootstrap"]
    assert (known["nodeid"], known["state"], known["rtt"]["avg"], known["rtt"]["cnt"]) == (1, "UP", 2000, 1)
    assert (bootstrap["nodeid"], bootstrap["state"], bootstrap["txerrs"]) == (-1, "DOWN", 1)
    partitions = stats["topics"]["orders"]["partitions"]
    assert (partitions["0"]["txmsgs"], partitions["1"]["txmsgs"], partitions["1"]["leader"]) == (0, 3, 1)
    assert stats["topics"]["orders"]["metadata_age"] == 2000
    again = build_statistics(source, counters, now=101.0, wall=1_700_000_001.0)
    assert again["brokers"]["10.0.0.1:9092/1"]["rtt"]["cnt"] == 0 and again["txmsgs"] == 3  # counters are totals, rtt per interval

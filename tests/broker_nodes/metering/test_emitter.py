import logging

import pytest

from broker_nodes.clock import ManualClock
from broker_nodes.metering.backlog import UsageBacklog
from broker_nodes.metering.counters import TrafficCounters
from broker_nodes.metering.emitter import UsageEmitter
from broker_nodes.metering.partition_stats import PartitionStats
from broker_nodes.metering.sink import SinkFailure
from log_formats.usage_records import PartitionRow, TrafficRow, decode, identity
from tests.broker_nodes.metering.fakes import FakeSink

INTERVAL = 1_000
START = 1_700_000_000_000 + 250  # a quarter into a window


class Harness:
    """An emitter on a manual clock with a fake sink; ``partitions`` is what the broker leads."""

    def __init__(self, directory, *, sink: FakeSink | None = None, incarnation: str = "inc1", max_rows: int = 1000, clock: ManualClock | None = None) -> None:
        self.clock = clock or ManualClock(START)
        self.counters = TrafficCounters()
        self.partitions: list[PartitionStats] = []
        self.sink = sink if sink is not None else FakeSink()
        self.sinks_opened = 0
        self.backlog = UsageBacklog(directory, max_rows)
        self.backlog.load()
        self.emitter = UsageEmitter(
            node_id=7,
            incarnation=incarnation,
            interval_ms=INTERVAL,
            clock=self.clock,
            counters=self.counters,
            partition_stats=lambda: list(self.partitions),
            backlog=self.backlog,
            open_sink=self._open,
        )

    def _open(self) -> FakeSink:
        self.sinks_opened += 1
        return self.sink

    def advance_to_next_boundary(self) -> None:
        now = self.clock.milliseconds()
        self.clock.advance(INTERVAL - now % INTERVAL)

    def window(self) -> None:
        """Let one window pass and the emitter run twice (close and send, then acknowledgements)."""
        self.advance_to_next_boundary()
        self.emitter.tick()
        self.emitter.tick()


@pytest.fixture
def harness(tmp_path) -> Harness:
    return Harness(tmp_path / "metering")


def test_nothing_is_emitted_before_the_first_boundary(harness):
    harness.counters.add_produced([("tn-a~orders", 0, 100, 2)], 0)
    harness.emitter.tick()
    assert harness.sink.sent == []


def test_each_window_emits_traffic_and_led_partitions_with_the_next_sequence(harness):
    harness.partitions = [PartitionStats("tn-a~orders", 0, 4096, 0, 10, 9, 3)]
    harness.counters.add_produced([("tn-a~orders", 0, 100, 2)], throttle_time_ms=4)
    harness.counters.add_fetched([("tn-b~orders", 1, 300, 6)], throttle_time_ms=0)
    harness.window()
    window_start = START - START % INTERVAL
    assert harness.sink.stored_rows() == [
        TrafficRow(
            7, "inc1", 0, window_start, window_start + INTERVAL, "tn-a", "orders", 0, bytes_in=100, records_in=2, produce_requests=1, throttle_time_ms=4
        ),
        TrafficRow(7, "inc1", 0, window_start, window_start + INTERVAL, "tn-b", "orders", 1, bytes_out=300, records_out=6, fetch_requests=1),
        PartitionRow(7, "inc1", 0, window_start, window_start + INTERVAL, "tn-a", "orders", 0, 4096, 0, 10, 9, 3),
    ]
    assert {key for key, _, _ in harness.sink.sent} == {b"7"}
    assert harness.backlog.windows == []
    harness.window()  # no traffic: only the partition row, in the next window
    [row] = harness.sink.stored_rows()[3:]
    assert (row.kind, row.sequence, row.window_start_ms) == ("partition", 1, window_start + INTERVAL)


def test_a_window_without_any_row_is_skipped_and_takes_no_sequence_number(harness):
    harness.window()
    assert harness.sink.sent == [] and harness.sinks_opened == 0
    harness.counters.add_produced([("orders", 0, 10, 1)], 0)
    harness.window()
    [row] = harness.sink.stored_rows()
    assert (row.sequence, row.tenant_id, row.topic) == (0, "", "orders")


def test_rows_that_fail_are_sent_again_with_the_same_bytes_and_identity(harness):
    harness.counters.add_produced([("tn-a~orders", 0, 100, 2), ("tn-a~orders", 1, 50, 1)], 0)
    harness.sink.failure = SinkFailure("NOT_ENOUGH_REPLICAS: broker down")
    harness.window()
    first_sent = [value for _, value, _ in harness.sink.sent]
    assert len(first_sent) == 2 and harness.sink.stored == []
    harness.sink.failure = None
    harness.clock.advance(INTERVAL // 2)  # past the retry backoff, before the next boundary
    harness.emitter.tick()
    harness.emitter.tick()
    assert harness.sink.stored == first_sent
    assert [identity(decode(value)) for value in harness.sink.stored] == [identity(decode(value)) for value in first_sent]
    assert harness.backlog.windows == []


def test_rows_are_not_sent_again_while_in_flight(harness):
    harness.counters.add_produced([("tn-a~orders", 0, 100, 2)], 0)
    harness.sink.answering = False
    harness.window()
    harness.clock.advance(INTERVAL // 2)
    harness.emitter.tick()
    assert len(harness.sink.sent) == 1


def test_while_usage_topic_is_missing_windows_are_kept_logged_once_and_sent_when_it_appears(tmp_path, caplog):
    harness = Harness(tmp_path / "metering", sink=FakeSink(exists=False))
    with caplog.at_level(logging.INFO, logger="broker_nodes.metering.emitter"):
        for partition in range(3):
            harness.counters.add_produced([("orders", partition, 10, 1)], 0)
            harness.window()
        assert harness.sink.sent == [] and len(harness.backlog.windows) == 3
        assert harness.sink.lookups == 3, "looked up once per window, not in a loop"
        assert caplog.text.count("does not exist") == 1
        harness.sink.exists = True
        harness.window()
    assert [(row.sequence, row.partition) for row in harness.sink.stored_rows()] == [(0, 0), (1, 1), (2, 2)]
    assert "exists now" in caplog.text and harness.backlog.windows == []


def test_an_unknown_topic_answer_makes_the_emitter_look_the_topic_up_again(harness):
    harness.counters.add_produced([("orders", 0, 10, 1)], 0)
    harness.sink.failure = SinkFailure("_UNKNOWN_TOPIC", unknown_topic=True)
    harness.window()
    lookups = harness.sink.lookups
    harness.sink.failure = None
    harness.window()
    assert harness.sink.lookups == lookups + 1
    assert len(harness.sink.stored) == 1


def test_without_a_sink_windows_stay_in_the_backlog(tmp_path, caplog):
    harness = Harness(tmp_path / "metering")
    harness.emitter._open_sink = None  # a broker without an internal token
    with caplog.at_level(logging.WARNING, logger="broker_nodes.metering.emitter"):
        for _ in range(2):
            harness.counters.add_produced([("orders", 0, 10, 1)], 0)
            harness.window()
    assert len(harness.backlog.windows) == 2
    assert caplog.text.count("no internal token") == 1


def test_flush_emits_the_open_window_early_and_waits_for_its_acknowledgement(harness):
    harness.partitions = [PartitionStats("tn-a~orders", 0, 10, 0, 1, 1, 0)]
    harness.counters.add_produced([("tn-a~orders", 0, 10, 1)], 0)
    harness.clock.advance(300)
    assert harness.emitter.flush(timeout_seconds=5) is True
    window_start = START - START % INTERVAL
    rows = harness.sink.stored_rows()
    assert {(row.kind, row.window_start_ms, row.window_end_ms) for row in rows} == {
        ("traffic", window_start, START + 300),
        ("partition", window_start, START + 300),
    }
    assert harness.backlog.windows == []


def test_shutdown_after_flush_emits_only_the_traffic_that_came_in_between(harness):
    harness.partitions = [PartitionStats("tn-a~orders", 0, 10, 0, 1, 1, 0)]
    harness.emitter.flush(timeout_seconds=5)
    harness.counters.add_fetched([("tn-a~orders", 0, 10, 1)], 0)  # a fetch answered during the controlled shutdown
    harness.clock.advance(100)
    harness.emitter.shutdown(timeout_seconds=5)
    rows = harness.sink.stored_rows()
    assert [(row.kind, row.sequence) for row in rows] == [("partition", 0), ("traffic", 1)]
    assert rows[1].window_start_ms == rows[0].window_end_ms and rows[1].window_end_ms == START + 100
    assert harness.sink.closed


def test_shutdown_without_flush_emits_the_open_window_with_partitions(harness):
    harness.partitions = [PartitionStats("orders", 0, 10, 0, 1, 1, 0)]
    harness.emitter.shutdown(timeout_seconds=5)
    assert [row.kind for row in harness.sink.stored_rows()] == ["partition"]


def test_what_is_not_acknowledged_at_shutdown_is_sent_after_a_restart_with_its_old_identity(tmp_path):
    directory = tmp_path / "metering"
    first = Harness(directory, incarnation="old")
    first.counters.add_produced([("tn-a~orders", 0, 100, 2)], 0)
    first.sink.answering = False  # the __usage leader does not answer before the process ends
    assert first.emitter.flush(timeout_seconds=0.2) is False
    first.emitter.shutdown(timeout_seconds=0.1)
    [lost_in_flight] = [decode(value) for _, value, _ in first.sink.sent]
    second = Harness(directory, incarnation="new", clock=first.clock)
    second.window()
    [resent] = second.sink.stored_rows()
    assert resent == lost_in_flight and identity(resent)[:3] == (7, "old", 0)
    assert list(directory.iterdir()) == []


def test_a_crash_loses_at_most_the_open_window(tmp_path):
    directory = tmp_path / "metering"
    crashed = Harness(directory, incarnation="crashed")
    crashed.sink.answering = False
    crashed.counters.add_produced([("orders", 0, 100, 2)], 0)
    crashed.advance_to_next_boundary()
    crashed.emitter.tick()  # the closed window is on disk and in flight
    crashed.counters.add_produced([("orders", 0, 999, 9)], 0)  # the open window when the process dies
    restarted = Harness(directory, incarnation="restarted", clock=crashed.clock)
    restarted.emitter.tick()
    restarted.emitter.tick()
    [row] = restarted.sink.stored_rows()
    assert (row.incarnation, row.bytes_in, row.records_in) == ("crashed", 100, 2)


def test_the_backlog_bound_applies_while_the_topic_is_unavailable(tmp_path, caplog):
    harness = Harness(tmp_path / "metering", sink=FakeSink(exists=False), max_rows=2)
    with caplog.at_level(logging.WARNING):
        for partition in range(4):
            harness.counters.add_produced([("orders", partition, 10, 1)], 0)
            harness.window()
    assert [window.sequence for window in harness.backlog.windows] == [2, 3]
    assert caplog.text.count("dropped 1 usage rows") == 2


def test_shutdown_after_a_flush_does_not_look_a_missing_topic_up_again(tmp_path):
    harness = Harness(tmp_path / "metering", sink=FakeSink(exists=False))
    harness.partitions = [PartitionStats("orders", 0, 10, 0, 1, 1, 0)]
    assert harness.emitter.flush(timeout_seconds=5) is False
    harness.counters.add_produced([("orders", 0, 10, 1)], 0)
    harness.emitter.shutdown(timeout_seconds=5)  # the brokers may be gone: a lookup could block
    assert harness.sink.lookups == 1
    assert [window.sequence for window in harness.backlog.windows] == [0, 1]

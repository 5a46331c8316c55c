"""The MarkerAppender appends every marker of a request before waiting for any to be replicated."""

from __future__ import annotations

from contextlib import nullcontext
from types import SimpleNamespace

from broker_nodes.clock import ManualClock
from broker_nodes.coordinator.offset_store import OFFSETS_TOPIC
from broker_nodes.coordinator.transactions.marker_appender import MarkerAppender
from broker_nodes.coordinator.transactions.markers import MarkerRequest
from broker_nodes.replication.errors import ReplicationTimedOutError


class RecordingLog:
    def __init__(self, name: str, events: list[tuple[str, str]]) -> None:
        self.name = name
        self.events = events
        self.log_end_offset = 0

    def append_marker(self, producer_id: int, producer_epoch: int, *, commit: bool, coordinator_epoch: int, leader_epoch: int, now_ms: int):  # type: ignore[no-untyped-def]
        self.events.append(("append", self.name))
        self.log_end_offset += 1
        return SimpleNamespace(last_offset=self.log_end_offset - 1, size_bytes=78)


class RecordingReplication:
    """A replicated leader of every partition; ``wait_for_replication`` records its call, or fails for ``failing``."""

    def __init__(self, events: list[tuple[str, str]], failing: frozenset[str] = frozenset()) -> None:
        self.events = events
        self.failing = failing

    def is_replicated_leader(self, topic: str, partition: int) -> bool:
        return True

    def check_enough_replicas(self, topic: str, partition: int) -> None:
        pass

    def after_leader_append(self, topic: str, partition: int, log: RecordingLog) -> None:
        pass

    def wait_slot(self):  # type: ignore[no-untyped-def]
        return nullcontext()

    def wait_for_replication(self, topic: str, partition: int, required_offset: int, deadline: float, timeout_ms: int) -> None:
        self.events.append(("wait", f"{topic}-{partition}"))
        if topic in self.failing:
            raise ReplicationTimedOutError(topic, partition, required_offset, required_offset - 1, timeout_ms)


class Completions:
    def __init__(self) -> None:
        self.partitions: list[int] = []

    def transaction_completed(self, partition: int, producer_id: int, producer_epoch: int, *, commit: bool) -> None:
        self.partitions.append(partition)


def _appender(events: list[tuple[str, str]], failing: frozenset[str] = frozenset(), listener: Completions | None = None) -> MarkerAppender:
    logs: dict[tuple[str, int], RecordingLog] = {}
    replica_manager = SimpleNamespace(
        replication=RecordingReplication(events, failing),
        leader_epoch=lambda topic, partition: 3,
        partition_log=lambda topic, partition: logs.setdefault((topic, partition), RecordingLog(f"{topic}-{partition}", events)),
    )
    return MarkerAppender(replica_manager, ManualClock(), notify_append=lambda topic, partition, size: None, timeout_ms=1000, listener=listener)  # type: ignore[arg-type]


def _request(*partitions: tuple[str, int]) -> MarkerRequest:
    return MarkerRequest("t~app", 7, 2, True, 0, list(partitions))


def test_every_marker_is_appended_before_any_replication_is_waited_for():
    events: list[tuple[str, str]] = []
    outcomes = _appender(events).write_markers(_request(("t~a", 0), ("t~b", 1), ("t~c", 2)))
    assert outcomes == {("t~a", 0): None, ("t~b", 1): None, ("t~c", 2): None}
    assert events == [
        ("append", "t~a-0"),
        ("append", "t~b-1"),
        ("append", "t~c-2"),
        ("wait", "t~a-0"),
        ("wait", "t~b-1"),
        ("wait", "t~c-2"),
    ]


def test_a_partition_whose_replicas_do_not_catch_up_gets_its_error_and_the_others_are_written():
    events: list[tuple[str, str]] = []
    listener = Completions()
    outcomes = _appender(events, failing=frozenset({"t~a"}), listener=listener).write_markers(_request(("t~a", 0), (OFFSETS_TOPIC, 4)))
    assert isinstance(outcomes[("t~a", 0)], ReplicationTimedOutError)
    assert outcomes[(OFFSETS_TOPIC, 4)] is None
    assert listener.partitions == [4]  # the group coordinator hears of a durable offsets marker only


class ProducerStateLog(RecordingLog):
    """A log whose producer 7 already holds ``epoch`` (by a marker or a later transaction's batch)."""

    def __init__(self, name: str, events: list[tuple[str, str]], epoch: int) -> None:
        super().__init__(name, events)
        self.log_end_offset = 40
        self.epoch = epoch

    def producer_state(self, producer_id: int):  # type: ignore[no-untyped-def]
        return SimpleNamespace(epoch=self.epoch) if producer_id == 7 else None


def _appender_over(log: RecordingLog, events: list[tuple[str, str]], listener: Completions | None = None) -> MarkerAppender:
    replica_manager = SimpleNamespace(
        replication=RecordingReplication(events), leader_epoch=lambda topic, partition: 3, partition_log=lambda topic, partition: log
    )
    return MarkerAppender(replica_manager, ManualClock(), notify_append=lambda topic, partition, size: None, timeout_ms=1000, listener=listener)  # type: ignore[arg-type]


def _above(epoch: int, topic: str = "t~a") -> MarkerRequest:
    return MarkerRequest("t~app", 7, epoch, True, 0, [(topic, 0)], above_batches=True)


def test_a_marker_above_its_batches_is_not_appended_where_the_producer_holds_its_epoch_already():
    """Written again by a coordinator that took over: the partition has it, or the next transaction's batches, which it must not end."""
    events: list[tuple[str, str]] = []
    listener = Completions()
    outcomes = _appender_over(ProducerStateLog(f"{OFFSETS_TOPIC}-0", events, epoch=2), events, listener).write_markers(_above(2, OFFSETS_TOPIC))
    assert outcomes == {(OFFSETS_TOPIC, 0): None}
    assert events == [("wait", f"{OFFSETS_TOPIC}-0")]  # answered once the log up to its end is replicated
    assert listener.partitions == []  # the next transaction's offsets are not the group coordinator's to apply


def test_a_marker_above_its_batches_is_appended_over_an_older_epoch_and_a_plain_marker_always():
    events: list[tuple[str, str]] = []
    assert _appender_over(ProducerStateLog("t~a-0", events, epoch=1), events).write_markers(_above(2)) == {("t~a", 0): None}
    assert events == [("append", "t~a-0"), ("wait", "t~a-0")]
    events.clear()
    plain = MarkerRequest("t~app", 7, 2, True, 0, [("t~a", 0)])
    assert _appender_over(ProducerStateLog("t~a-0", events, epoch=2), events).write_markers(plain) == {("t~a", 0): None}
    assert events == [("append", "t~a-0"), ("wait", "t~a-0")]  # transactions version 1: the marker keeps its batches' epoch

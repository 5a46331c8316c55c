"""Committed offsets go to the group's coordinator, found with FindCoordinator, cached, and looked up again when it moves.

Scripted brokers (tests/weir/scripted_broker.py) stand in for the cluster so that each answer
(NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, a broker gone) happens exactly when a test
wants it. Real brokers answering FindCoordinator are exercised by the end-to-end consumer
tests, whose commits go through the same path.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Iterator

import pytest

from grpc_protos.weir.v1 import broker_pb2
from tests.weir.scripted_broker import ScriptedBroker, committed, coordinator_at
from weir import Consumer, KafkaError, KafkaException, TopicPartition
from weir.errors import ErrorCode

GROUP = "billing"


@pytest.fixture
def brokers() -> Iterator[list[ScriptedBroker]]:
    started = [ScriptedBroker(node_id).start() for node_id in (1, 2, 3)]
    try:
        yield started
    finally:
        for broker in started:
            broker.stop()


def _consumer(bootstrap: ScriptedBroker, *, request_timeout_ms: int = 5000, **extra: object) -> Consumer:
    return Consumer(
        {
            "bootstrap.servers": bootstrap.address,
            "group.id": GROUP,
            "enable.auto.commit": False,
            "request.timeout.ms": request_timeout_ms,
            "retry.backoff.ms": 10,
            "retry.backoff.max.ms": 50,
            **extra,
        }
    )


def _answers_in_turn(*answers: broker_pb2.FindCoordinatorResponse) -> object:
    """An answer function giving ``answers`` one after the other, then the last one again."""
    sequence = itertools.chain(answers, itertools.repeat(answers[-1]))
    lock = threading.Lock()

    def answer(request: object) -> broker_pb2.FindCoordinatorResponse:
        with lock:
            return next(sequence)

    return answer


def _commit(consumer: Consumer, offset: int) -> list[TopicPartition]:
    result = consumer.commit(offsets=[TopicPartition("orders", 0, offset)], asynchronous=False)
    assert result is not None
    return result


def test_coordinator_is_looked_up_once_and_cached(brokers: list[ScriptedBroker]) -> None:
    bootstrap, coordinator, _ = brokers
    bootstrap.answers["FindCoordinator"] = lambda request: coordinator_at(coordinator, GROUP)
    coordinator.answers["OffsetCommit"] = lambda request: committed()
    with _consumer(bootstrap) as consumer:
        assert _commit(consumer, 5)[0].error is None
        assert _commit(consumer, 6)[0].error is None

    [lookup] = bootstrap.called("FindCoordinator")
    assert list(lookup.group_ids) == [GROUP]
    assert [request.topics[0].partitions[0].committed_offset for request in coordinator.called("OffsetCommit")] == [5, 6]
    assert bootstrap.called("OffsetCommit") == []


def test_not_coordinator_makes_the_client_look_the_coordinator_up_again(brokers: list[ScriptedBroker]) -> None:
    bootstrap, old, new = brokers
    bootstrap.answers["FindCoordinator"] = _answers_in_turn(coordinator_at(old, GROUP), coordinator_at(new, GROUP))  # type: ignore[assignment]
    old.answers["OffsetCommit"] = lambda request: committed(ErrorCode.NOT_COORDINATOR)  # type: ignore[attr-defined]
    new.answers["OffsetCommit"] = lambda request: committed()
    with _consumer(bootstrap) as consumer:
        assert _commit(consumer, 7)[0].error is None
        assert _commit(consumer, 8)[0].error is None  # straight to the new coordinator

    assert len(bootstrap.called("FindCoordinator")) == 2
    assert len(old.called("OffsetCommit")) == 1
    assert [request.topics[0].partitions[0].committed_offset for request in new.called("OffsetCommit")] == [7, 8]


def test_coordinator_loading_is_retried_at_the_same_coordinator(brokers: list[ScriptedBroker]) -> None:
    bootstrap, coordinator, _ = brokers
    bootstrap.answers["FindCoordinator"] = lambda request: coordinator_at(coordinator, GROUP)
    answers = iter(
        [
            broker_pb2.OffsetFetchResponse(error_code=ErrorCode.COORDINATOR_LOAD_IN_PROGRESS),  # type: ignore[attr-defined]
            broker_pb2.OffsetFetchResponse(error_code=ErrorCode.COORDINATOR_LOAD_IN_PROGRESS),  # type: ignore[attr-defined]
            broker_pb2.OffsetFetchResponse(
                topics=[
                    broker_pb2.OffsetFetchTopicResponse(topic="orders", partitions=[broker_pb2.OffsetFetchPartitionResponse(partition=0, committed_offset=42)])
                ]
            ),
        ]
    )
    coordinator.answers["OffsetFetch"] = lambda request: next(answers)
    with _consumer(bootstrap) as consumer:
        [result] = consumer.committed([TopicPartition("orders", 0)], timeout=5)

    assert result.offset == 42
    assert len(bootstrap.called("FindCoordinator")) == 1
    assert len(coordinator.called("OffsetFetch")) == 3


def test_unreachable_coordinator_is_looked_up_again(brokers: list[ScriptedBroker]) -> None:
    bootstrap, gone, new = brokers
    bootstrap.answers["FindCoordinator"] = _answers_in_turn(coordinator_at(gone, GROUP), coordinator_at(new, GROUP))  # type: ignore[assignment]
    new.answers["OffsetCommit"] = lambda request: committed()
    gone.stop()
    with _consumer(bootstrap) as consumer:
        assert _commit(consumer, 3)[0].error is None

    assert len(bootstrap.called("FindCoordinator")) == 2
    assert len(new.called("OffsetCommit")) == 1


def test_coordinator_not_available_yet_is_asked_again(brokers: list[ScriptedBroker]) -> None:
    bootstrap, coordinator, _ = brokers
    bootstrap.answers["FindCoordinator"] = _answers_in_turn(  # type: ignore[assignment]
        coordinator_at(None, GROUP, ErrorCode.COORDINATOR_NOT_AVAILABLE),  # type: ignore[attr-defined]
        coordinator_at(coordinator, GROUP),
    )
    coordinator.answers["OffsetCommit"] = lambda request: committed()
    with _consumer(bootstrap) as consumer:
        assert _commit(consumer, 1)[0].error is None

    assert len(bootstrap.called("FindCoordinator")) == 2


def test_a_coordinator_that_keeps_moving_fails_the_commit_after_its_timeout(brokers: list[ScriptedBroker]) -> None:
    bootstrap, coordinator, _ = brokers
    bootstrap.answers["FindCoordinator"] = lambda request: coordinator_at(coordinator, GROUP)
    coordinator.answers["OffsetCommit"] = lambda request: committed(ErrorCode.NOT_COORDINATOR)  # type: ignore[attr-defined]
    with _consumer(bootstrap, request_timeout_ms=500) as consumer:
        started = time.monotonic()
        with pytest.raises(KafkaException) as raised:
            _commit(consumer, 1)
        elapsed = time.monotonic() - started

    # The commit fails with the last answer (NOT_COORDINATOR) or, when the timeout ran out while an
    # attempt was on the wire (a loaded machine), as timed out: either way it gave up, bounded.
    assert raised.value.error.code() in (ErrorCode.NOT_COORDINATOR, KafkaError._TIMED_OUT)  # type: ignore[attr-defined]
    assert "gave up" in raised.value.error.str()
    assert elapsed < 10  # bounded by request.timeout.ms, with a wide margin for a loaded machine
    assert len(coordinator.called("OffsetCommit")) >= 2


def test_group_authorization_failure_is_not_retried(brokers: list[ScriptedBroker]) -> None:
    bootstrap, _, _ = brokers
    bootstrap.answers["FindCoordinator"] = lambda request: coordinator_at(None, GROUP, ErrorCode.GROUP_AUTHORIZATION_FAILED)  # type: ignore[attr-defined]
    with _consumer(bootstrap) as consumer, pytest.raises(KafkaException) as raised:
        _commit(consumer, 1)

    assert raised.value.error.code() == ErrorCode.GROUP_AUTHORIZATION_FAILED  # type: ignore[attr-defined]
    assert len(bootstrap.called("FindCoordinator")) == 1


def test_failed_asynchronous_commit_makes_the_next_call_look_up_again(brokers: list[ScriptedBroker]) -> None:
    bootstrap, old, new = brokers
    bootstrap.answers["FindCoordinator"] = _answers_in_turn(coordinator_at(old, GROUP), coordinator_at(new, GROUP))  # type: ignore[assignment]
    old.answers["OffsetCommit"] = lambda request: committed(ErrorCode.NOT_COORDINATOR)  # type: ignore[attr-defined]
    new.answers["OffsetCommit"] = lambda request: committed()
    results: list[KafkaError | None] = []
    with _consumer(bootstrap, on_commit=lambda error, partitions: results.append(partitions[0].error)) as consumer:
        assert consumer.commit(offsets=[TopicPartition("orders", 0, 4)], asynchronous=True) is None
        for _ in range(100):
            consumer.poll(0.05)
            if results:
                break
        assert _commit(consumer, 5)[0].error is None

    assert results[0] is not None and results[0].code() == ErrorCode.NOT_COORDINATOR  # type: ignore[attr-defined]
    assert len(old.called("OffsetCommit")) == 1  # asynchronous commits are not retried
    assert len(new.called("OffsetCommit")) == 1
    assert len(bootstrap.called("FindCoordinator")) == 2

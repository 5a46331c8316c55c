"""AdminClient requests against scripted brokers: items the controller could not take are sent again, and
list_offsets follows a leader that moved."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from grpc_protos.weir.v1 import broker_pb2
from tests.weir.scripted_broker import ScriptedBroker, metadata
from weir import TopicPartition
from weir.admin import AdminClient, NewTopic, OffsetSpec
from weir.errors import ErrorCode


@pytest.fixture
def brokers() -> Iterator[list[ScriptedBroker]]:
    started = [ScriptedBroker(node_id).start() for node_id in (1, 2)]
    try:
        yield started
    finally:
        for broker in started:
            broker.stop()


def _admin(broker: ScriptedBroker) -> AdminClient:
    return AdminClient({"bootstrap.servers": broker.address, "retry.backoff.ms": 10, "retry.backoff.max.ms": 50})


def test_topics_answered_not_controller_are_sent_again_alone(brokers: list[ScriptedBroker]) -> None:
    broker = brokers[0]
    answers = iter(
        [
            broker_pb2.CreateTopicsResponse(
                topics=[
                    broker_pb2.TopicResult(name="kept"),
                    broker_pb2.TopicResult(name="moved", error_code=ErrorCode.NOT_CONTROLLER, error_message="the controller moved"),  # type: ignore[attr-defined]
                ]
            ),
            broker_pb2.CreateTopicsResponse(topics=[broker_pb2.TopicResult(name="moved")]),
        ]
    )
    broker.answers["CreateTopics"] = lambda request: next(answers)
    admin = _admin(broker)
    try:
        futures = admin.create_topics([NewTopic("kept", 1), NewTopic("moved", 1)])
        assert futures["kept"].result(timeout=10) is None
        assert futures["moved"].result(timeout=10) is None
    finally:
        admin.close()
    assert [[topic.name for topic in request.topics] for request in broker.called("CreateTopics")] == [["kept", "moved"], ["moved"]]


def test_list_offsets_asks_the_new_leader_after_not_leader(brokers: list[ScriptedBroker]) -> None:
    old, new = brokers
    maps = iter([metadata(brokers, {"orders": [(1, 1)]})])
    old.answers["Metadata"] = lambda request: next(maps, metadata(brokers, {"orders": [(2, 2)]}))
    old.answers["ListOffsets"] = lambda request: broker_pb2.ListOffsetsResponse(
        topics=[
            broker_pb2.ListOffsetsTopicResponse(
                topic="orders",
                partitions=[
                    broker_pb2.ListOffsetsPartitionResponse(partition=0, error_code=ErrorCode.NOT_LEADER_OR_FOLLOWER, offset=-1, timestamp=-1, leader_epoch=-1)
                ],  # type: ignore[attr-defined]
            )
        ]
    )
    new.answers["ListOffsets"] = lambda request: broker_pb2.ListOffsetsResponse(
        topics=[
            broker_pb2.ListOffsetsTopicResponse(
                topic="orders",
                partitions=[broker_pb2.ListOffsetsPartitionResponse(partition=0, offset=42, timestamp=-1, leader_epoch=2)],
            )
        ]
    )
    admin = _admin(old)
    partition = TopicPartition("orders", 0)
    try:
        result = admin.list_offsets({partition: OffsetSpec.latest()}, request_timeout=10)[partition].result(timeout=15)
    finally:
        admin.close()
    assert (result.offset, result.leader_epoch) == (42, 2)
    assert len(old.called("ListOffsets")) == 1

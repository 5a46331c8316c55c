"""A group member speaking the raw ConsumerGroupHeartbeat protocol to a broker stub, for servicer-level tests."""

from __future__ import annotations

from collections.abc import Sequence

from grpc_protos.weir.v1 import broker_pb2, broker_pb2_grpc
from weir.errors import ErrorCode

Metadata = tuple[tuple[str, str], ...]


def as_set(partitions: broker_pb2.OwnedPartitions) -> set[tuple[str, int]]:
    return {(entry.topic, number) for entry in partitions.topics for number in entry.partitions}


def owned_message(owned: set[tuple[str, int]]) -> broker_pb2.OwnedPartitions:
    by_topic: dict[str, list[int]] = {}
    for topic, number in sorted(owned):
        by_topic.setdefault(topic, []).append(number)
    return broker_pb2.OwnedPartitions(topics=[broker_pb2.TopicPartitions(topic=topic, partitions=numbers) for topic, numbers in by_topic.items()])


class RawMember:
    """Joins, heartbeats and leaves; ``owned`` is what it owns, revoking at once what it is no longer assigned."""

    def __init__(
        self, stub: broker_pb2_grpc.BrokerStub, group: str, topics: Sequence[str] = (), *, regex: str = "", metadata: Metadata = (), **join: object
    ) -> None:
        self.stub = stub
        self.group = group
        self.metadata = metadata
        self.topics = list(topics)
        self.regex = regex
        self.join_options = join
        self.member_id = ""
        self.epoch = 0
        self.owned: set[tuple[str, int]] = set()
        self.last: broker_pb2.ConsumerGroupHeartbeatResponse | None = None

    def call(self, request: broker_pb2.ConsumerGroupHeartbeatRequest) -> broker_pb2.ConsumerGroupHeartbeatResponse:
        self.last = self.stub.ConsumerGroupHeartbeat(request, metadata=self.metadata, timeout=30)
        return self.last

    def join(self) -> broker_pb2.ConsumerGroupHeartbeatResponse:
        request = broker_pb2.ConsumerGroupHeartbeatRequest(
            group_id=self.group,
            member_id=self.member_id,
            member_epoch=0,
            subscription=broker_pb2.GroupSubscription(topic_names=self.topics, topic_regex=self.regex),
            owned=broker_pb2.OwnedPartitions(),
            **self.join_options,  # type: ignore[arg-type]
        )
        self.owned = set()
        return self._apply(self.call(request))

    def heartbeat(self, *, report: bool = True) -> broker_pb2.ConsumerGroupHeartbeatResponse:
        request = broker_pb2.ConsumerGroupHeartbeatRequest(group_id=self.group, member_id=self.member_id, member_epoch=self.epoch)
        if report:
            request.owned.CopyFrom(owned_message(self.owned))
        return self._apply(self.call(request))

    def leave(self, epoch: int = -1) -> broker_pb2.ConsumerGroupHeartbeatResponse:
        request = broker_pb2.ConsumerGroupHeartbeatRequest(
            group_id=self.group, member_id=self.member_id, member_epoch=epoch, instance_id=str(self.join_options.get("instance_id", ""))
        )
        answer = self.call(request)
        self.owned = set()
        return answer

    def _apply(self, answer: broker_pb2.ConsumerGroupHeartbeatResponse) -> broker_pb2.ConsumerGroupHeartbeatResponse:
        if answer.error_code != ErrorCode.NO_ERROR:
            return answer
        self.member_id = answer.member_id
        self.epoch = answer.member_epoch
        if answer.HasField("assignment"):
            self.owned = as_set(answer.assignment)  # revokes what it lost at once, takes what it got
        return answer


def settle(members: Sequence[RawMember], rounds: int = 10) -> None:
    """Heartbeat every member, reporting what it owns, until the group stops changing (bounded)."""
    for _ in range(rounds):
        before = [(member.epoch, frozenset(member.owned)) for member in members]
        for member in members:
            answer = member.heartbeat()
            assert answer.error_code == ErrorCode.NO_ERROR, answer.error_message
        if before == [(member.epoch, frozenset(member.owned)) for member in members]:
            return
    raise AssertionError(f"group did not settle in {rounds} rounds")

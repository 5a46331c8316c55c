"""An in-memory stand-in for ``weir.admin.AdminClient``'s consumer group calls.

It implements the calls the group tooling makes (list / describe / delete groups, list and
alter committed offsets, list_offsets, list_topics) with the SDK's result types and the
brokers' refusals (GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP, offsets of an active group), so the
CLI, REST and dashboard tests can set up any group state, member layout and lag at once,
and check that a dry run changes nothing. Tests with real brokers complement it.

``unreachable = True`` makes every call fail as the SDK does when no broker answers.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from weir import ConsumerGroupState, ConsumerGroupTopicPartitions, ConsumerGroupType
from weir.admin import (
    ConsumerGroupDescription,
    ConsumerGroupListing,
    ListConsumerGroupsResult,
    ListOffsetsResultInfo,
    MemberAssignment,
    MemberDescription,
    Node,
    OffsetSpec,
)
from weir.cluster import BrokerMetadata, ClusterMetadata, PartitionMetadata, TopicMetadata
from weir.errors import ErrorCode, KafkaError, KafkaException
from weir.message import TopicPartition

LEGAL_TOPIC_NAME = re.compile(r"[A-Za-z0-9._-]{1,249}")  # what a broker accepts as a topic name
# OffsetSpec values of the special specs (Kafka's ListOffsets timestamps).
EARLIEST, LATEST = OffsetSpec.earliest().value, OffsetSpec.latest().value
COORDINATOR_ID, COORDINATOR_HOST, COORDINATOR_PORT = 1, "127.0.0.1", 9092


@dataclass
class FakeMember:
    member_id: str
    client_id: str
    assignment: list[tuple[str, int]]
    host: str = "/127.0.0.1"
    instance_id: str | None = None
    target: list[tuple[str, int]] | None = None


@dataclass
class FakeGroup:
    offsets: dict[tuple[str, int], int] = field(default_factory=dict)
    members: list[FakeMember] = field(default_factory=list)
    assignor: str = "range"
    state: ConsumerGroupState | None = None  # None: EMPTY without members, STABLE with
    group_type: ConsumerGroupType = ConsumerGroupType.CONSUMER

    def current_state(self) -> ConsumerGroupState:
        if self.state is not None:
            return self.state
        return ConsumerGroupState.STABLE if self.members else ConsumerGroupState.EMPTY


@dataclass
class FakeTopic:
    """A topic's partitions: the timestamp (ms) of each record, by offset from 0."""

    timestamps: list[list[int]]


class FakeGroupAdmin:
    """The AdminClient group calls over in-memory topics and groups; ``calls`` logs each call by name."""

    def __init__(self) -> None:
        self.topics: dict[str, FakeTopic] = {}
        self.groups: dict[str, FakeGroup] = {}
        self.calls: list[str] = []
        self.unreachable = False
        self.closed = False

    # ------------------------------------------------------------------ set-up

    def add_topic(self, name: str, end_offsets: Iterable[int], *, first_timestamp_ms: int = 1_700_000_000_000) -> None:
        """A topic whose partition ``i`` holds offsets 0 to ``end_offsets[i]``; record ``o``
        has timestamp ``first_timestamp_ms + 1000 * o``."""
        self.topics[name] = FakeTopic([[first_timestamp_ms + 1000 * offset for offset in range(end)] for end in end_offsets])

    def add_group(self, group_id: str, offsets: Mapping[tuple[str, int], int] | None = None, members: Iterable[FakeMember] = (), **options: Any) -> FakeGroup:
        group = FakeGroup(offsets=dict(offsets or {}), members=list(members), **options)
        self.groups[group_id] = group
        return group

    # ------------------------------------------------------------------ plumbing

    def _futures(self, name: str, keys: Iterable[Any], outcome: Callable[[Any], Any]) -> dict[Any, Future]:
        self.calls.append(name)
        futures = {}
        for key in keys:
            future: Future = Future()
            try:
                if self.unreachable:
                    raise KafkaException(KafkaError(ErrorCode._TRANSPORT, f"{name}: none of the brokers answered within 5.0s (tried 127.0.0.1:9092)"))
                future.set_result(outcome(key))
            except KafkaException as error:
                future.set_exception(error)
            futures[key] = future
        return futures

    def _group(self, group_id: str) -> FakeGroup:
        group = self.groups.get(group_id)
        if group is None:
            raise KafkaException(KafkaError(ErrorCode.GROUP_ID_NOT_FOUND, f"group {group_id} does not exist"))
        return group

    # ------------------------------------------------------------------ the AdminClient calls

    def list_consumer_groups(
        self, request_timeout: float | None = None, states: set[ConsumerGroupState] | None = None, types: set[ConsumerGroupType] | None = None
    ) -> Future:
        def listing(_: Any) -> ListConsumerGroupsResult:
            valid = [
                ConsumerGroupListing(group_id, not group.members and group.state is None, group.current_state(), group.group_type)
                for group_id, group in sorted(self.groups.items())
                if (not states or group.current_state() in states) and (not types or group.group_type in types)
            ]
            return ListConsumerGroupsResult(valid=valid, errors=[])

        return self._futures("list_consumer_groups", [None], listing)[None]

    def describe_consumer_groups(self, group_ids: list[str], request_timeout: float | None = None) -> dict[str, Future]:
        def describe(group_id: str) -> ConsumerGroupDescription:
            group = self._group(group_id)
            members = [
                MemberDescription(
                    member.member_id,
                    member.client_id,
                    member.host,
                    MemberAssignment([TopicPartition(topic, partition) for topic, partition in member.assignment]),
                    group_instance_id=member.instance_id,
                    target_assignment=MemberAssignment(
                        [TopicPartition(topic, partition) for topic, partition in (member.target if member.target is not None else member.assignment)]
                    ),
                )
                for member in group.members
            ]
            return ConsumerGroupDescription(
                group_id,
                False,
                members,
                group.assignor,
                group.current_state(),
                Node(COORDINATOR_ID, COORDINATOR_HOST, COORDINATOR_PORT),
                type=group.group_type,
            )

        return self._futures("describe_consumer_groups", group_ids, describe)

    def delete_consumer_groups(self, group_ids: list[str], request_timeout: float | None = None) -> dict[str, Future]:
        def delete(group_id: str) -> None:
            group = self._group(group_id)
            if group.members:
                raise KafkaException(KafkaError(ErrorCode.NON_EMPTY_GROUP, f"group {group_id} has {len(group.members)} active members"))
            del self.groups[group_id]

        return self._futures("delete_consumer_groups", group_ids, delete)

    def list_consumer_group_offsets(
        self, requests: list[ConsumerGroupTopicPartitions], request_timeout: float | None = None, **options: Any
    ) -> dict[str, Future]:
        by_group = {request.group_id: request for request in requests}

        def offsets(group_id: str) -> ConsumerGroupTopicPartitions:
            group = self.groups.get(group_id, FakeGroup())
            wanted = by_group[group_id].topic_partitions
            keys = [(tp.topic, tp.partition) for tp in wanted] if wanted else sorted(group.offsets)
            return ConsumerGroupTopicPartitions(
                group_id, [TopicPartition(topic, partition, group.offsets.get((topic, partition), -1001)) for topic, partition in keys]
            )

        return self._futures("list_consumer_group_offsets", list(by_group), offsets)

    def alter_consumer_group_offsets(self, requests: list[ConsumerGroupTopicPartitions], request_timeout: float | None = None) -> dict[str, Future]:
        by_group = {request.group_id: request for request in requests}

        def alter(group_id: str) -> ConsumerGroupTopicPartitions:
            group = self.groups.setdefault(group_id, FakeGroup())
            results = []
            for tp in by_group[group_id].topic_partitions:
                result = TopicPartition(tp.topic, tp.partition, tp.offset)
                if group.members:
                    result.error = KafkaError(
                        ErrorCode.UNKNOWN_MEMBER_ID, f"group {group_id} has {len(group.members)} active members: stop them before altering its offsets"
                    )
                else:
                    group.offsets[(tp.topic, tp.partition)] = tp.offset
                results.append(result)
            return ConsumerGroupTopicPartitions(group_id, results)

        return self._futures("alter_consumer_group_offsets", list(by_group), alter)

    def list_offsets(
        self, topic_partition_offsets: Mapping[TopicPartition, OffsetSpec], isolation_level: Any = None, request_timeout: float | None = None
    ) -> dict[TopicPartition, Future]:
        specs = dict(topic_partition_offsets)

        def offset(tp: TopicPartition) -> ListOffsetsResultInfo:
            if not LEGAL_TOPIC_NAME.fullmatch(tp.topic):  # as a broker answers a name no topic may have
                raise KafkaException(KafkaError(ErrorCode.INVALID_TOPIC_EXCEPTION, f"{tp.topic!r} is not a valid topic name"))
            topic = self.topics.get(tp.topic)
            if topic is None or not 0 <= tp.partition < len(topic.timestamps):
                raise KafkaException(KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"{tp.topic} [{tp.partition}]: no such partition"))
            timestamps = topic.timestamps[tp.partition]
            spec = specs[tp].value
            if spec == EARLIEST:
                return ListOffsetsResultInfo(0, -1, None)
            if spec == LATEST:
                return ListOffsetsResultInfo(len(timestamps), -1, None)
            offset = bisect_left(timestamps, spec)
            return ListOffsetsResultInfo(offset, timestamps[offset], None) if offset < len(timestamps) else ListOffsetsResultInfo(-1, -1, None)

        return self._futures("list_offsets", list(specs), offset)

    def list_topics(self, topic: str | None = None, timeout: float = -1) -> ClusterMetadata:
        self.calls.append("list_topics")
        if self.unreachable:
            raise KafkaException(KafkaError(ErrorCode._TRANSPORT, "Metadata: none of the brokers answered within 5.0s (tried 127.0.0.1:9092)"))
        metadata = ClusterMetadata()
        metadata.brokers[COORDINATOR_ID] = BrokerMetadata(COORDINATOR_ID, COORDINATOR_HOST, COORDINATOR_PORT)
        for name, fake in self.topics.items():
            described = TopicMetadata()
            described.topic = name
            for number in range(len(fake.timestamps)):
                partition = PartitionMetadata()
                partition.id, partition.leader, partition.replicas, partition.isrs = number, COORDINATOR_ID, [COORDINATOR_ID], [COORDINATOR_ID]
                described.partitions[number] = partition
            metadata.topics[name] = described
        return metadata

    def close(self) -> None:
        self.closed = True

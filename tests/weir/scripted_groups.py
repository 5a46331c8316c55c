"""Scripted brokers for consumer-group tests: the group calls, and a coordinator whose assignments a test sets.

:class:`GroupBroker` adds the consumer-group calls (ConsumerGroupHeartbeat, describe, list,
delete) to :class:`~tests.weir.scripted_broker.ScriptedBroker`. :class:`ScriptedCoordinator`
answers heartbeats the way a KIP-848 coordinator does, except that the test decides each
member's assignment and epoch (``assign``) and may queue error answers (``fail_next``); it
records every request, and the test's event log, so that tests can check the order of
callbacks, commits and reports. :class:`RecordLog` serves Fetch and OffsetFetch from
in-memory partitions.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from grpc_protos.weir.v1 import broker_pb2
from tests.weir.scripted_broker import ScriptedBroker
from weir.records import assign_offsets, build_batch

Partition = tuple[str, int]


class GroupBroker(ScriptedBroker):
    """A scripted broker that also answers the consumer-group calls from ``answers``."""

    def ConsumerGroupHeartbeat(self, request, context):  # type: ignore[no-untyped-def]
        return self._answer("ConsumerGroupHeartbeat", request, context)

    def ConsumerGroupDescribe(self, request, context):  # type: ignore[no-untyped-def]
        return self._answer("ConsumerGroupDescribe", request, context)

    def ListGroups(self, request, context):  # type: ignore[no-untyped-def]
        return self._answer("ListGroups", request, context)

    def DeleteGroups(self, request, context):  # type: ignore[no-untyped-def]
        return self._answer("DeleteGroups", request, context)


def owned_set(message: broker_pb2.OwnedPartitions) -> frozenset[Partition]:
    return frozenset((item.topic, partition) for item in message.topics for partition in item.partitions)


def partitions_message(partitions: frozenset[Partition] | set[Partition]) -> broker_pb2.OwnedPartitions:
    by_topic: dict[str, list[int]] = {}
    for topic, partition in sorted(partitions):
        by_topic.setdefault(topic, []).append(partition)
    return broker_pb2.OwnedPartitions(topics=[broker_pb2.TopicPartitions(topic=topic, partitions=numbers) for topic, numbers in by_topic.items()])


class ScriptedCoordinator:
    """Heartbeat answers with test-chosen assignments (see the module docstring).

    New members get ids ``member-1``, ``member-2``... and epoch 1 with the assignment set by
    ``assign`` beforehand for that id (empty otherwise). An assignment is put in an answer
    when it differs from the last one that member was sent, or on a join.
    """

    def __init__(self, events: list[tuple[Any, ...]] | None = None, *, interval_ms: int = 50) -> None:
        self.events = events if events is not None else []
        self.interval_ms = interval_ms
        self.requests: list[broker_pb2.ConsumerGroupHeartbeatRequest] = []
        self._lock = threading.Lock()
        self._joined = 0
        self._assignments: dict[str, tuple[int, frozenset[Partition]]] = {}
        self._sent: dict[str, frozenset[Partition]] = {}
        self._failures: list[tuple[int, str]] = []

    def assign(self, member_id: str, partitions: set[Partition], epoch: int) -> None:
        with self._lock:
            self._assignments[member_id] = (epoch, frozenset(partitions))

    def fail_next(self, error_code: int, message: str = "") -> None:
        with self._lock:
            self._failures.append((error_code, message))

    def __call__(self, request: broker_pb2.ConsumerGroupHeartbeatRequest) -> broker_pb2.ConsumerGroupHeartbeatResponse:
        with self._lock:
            self.requests.append(request)
            if request.HasField("owned"):
                self.events.append(("owned", request.member_id, request.member_epoch, owned_set(request.owned)))
            if request.member_epoch < 0:
                self.events.append(("leave", request.member_id, request.member_epoch))
                return broker_pb2.ConsumerGroupHeartbeatResponse(member_id=request.member_id, member_epoch=request.member_epoch)
            if self._failures:
                code, message = self._failures.pop(0)
                return broker_pb2.ConsumerGroupHeartbeatResponse(error_code=code, error_message=message)
            member_id = request.member_id
            if not member_id:
                self._joined += 1
                member_id = f"member-{self._joined}"
            if request.member_epoch == 0:
                self.events.append(("join", member_id))
                self._sent.pop(member_id, None)
            epoch, target = self._assignments.get(member_id, (1, frozenset()))
            response = broker_pb2.ConsumerGroupHeartbeatResponse(member_id=member_id, member_epoch=epoch, heartbeat_interval_ms=self.interval_ms)
            if self._sent.get(member_id) != target:
                self._sent[member_id] = target
                response.assignment.CopyFrom(partitions_message(target))
                response.assignment.SetInParent()
            return response

    def called(self, predicate: Callable[[broker_pb2.ConsumerGroupHeartbeatRequest], bool]) -> list[broker_pb2.ConsumerGroupHeartbeatRequest]:
        with self._lock:
            return [request for request in self.requests if predicate(request)]


class RecordLog:
    """In-memory partitions answering Fetch (records at and after the fetch offset) and OffsetFetch (committed offsets).

    Fetch answers without new data wait ``idle_wait`` seconds first, as a long poll would,
    so that the consumer's fetcher does not spin. OffsetCommit requests are recorded in
    ``commits`` and added to ``events``.
    """

    def __init__(self, events: list[tuple[Any, ...]] | None = None, *, idle_wait: float = 0.05) -> None:
        self.events = events if events is not None else []
        self.idle_wait = idle_wait
        self.records: dict[Partition, int] = {}
        self.committed: dict[Partition, int] = {}
        self.committed_metadata: dict[Partition, str] = {}
        self.commits: list[broker_pb2.OffsetCommitRequest] = []
        self.commit_answer: Callable[[broker_pb2.OffsetCommitRequest], broker_pb2.OffsetCommitResponse | None] | None = None
        self._lock = threading.Lock()

    def fetch(self, request: broker_pb2.FetchRequest) -> broker_pb2.FetchResponse:
        topics = []
        any_data = False
        for topic in request.topics:
            answers = []
            for wanted in topic.partitions:
                with self._lock:
                    end = self.records.get((topic.topic, wanted.partition), 0)
                data = b""
                if wanted.fetch_offset < end:
                    batch = bytearray(
                        build_batch(
                            [
                                (1_700_000_000_000, None, b"%s-%d-%d" % (topic.topic.encode(), wanted.partition, offset), None)
                                for offset in range(wanted.fetch_offset, end)
                            ]
                        )
                    )
                    assign_offsets(batch, 0, wanted.fetch_offset, 1)
                    data = bytes(batch)
                    any_data = True
                answers.append(
                    broker_pb2.FetchPartitionResponse(partition=wanted.partition, high_watermark=end, last_stable_offset=end, log_start_offset=0, records=data)
                )
            topics.append(broker_pb2.FetchTopicResponse(topic=topic.topic, partitions=answers))
        if not any_data:
            time.sleep(self.idle_wait)
        return broker_pb2.FetchResponse(topics=topics)

    def offset_fetch(self, request: broker_pb2.OffsetFetchRequest) -> broker_pb2.OffsetFetchResponse:
        with self._lock:
            return broker_pb2.OffsetFetchResponse(
                topics=[
                    broker_pb2.OffsetFetchTopicResponse(
                        topic=topic.topic,
                        partitions=[
                            broker_pb2.OffsetFetchPartitionResponse(
                                partition=partition,
                                committed_offset=self.committed.get((topic.topic, partition), -1),
                                committed_leader_epoch=-1,
                                metadata=self.committed_metadata.get((topic.topic, partition), ""),
                            )
                            for partition in topic.partitions
                        ],
                    )
                    for topic in request.topics
                ]
            )

    def offset_commit(self, request: broker_pb2.OffsetCommitRequest) -> broker_pb2.OffsetCommitResponse:
        with self._lock:
            self.commits.append(request)
            offsets = {(topic.topic, partition.partition): partition.committed_offset for topic in request.topics for partition in topic.partitions}
            self.events.append(("commit", request.member_id, request.generation_id, offsets))
        custom = self.commit_answer(request) if self.commit_answer is not None else None
        if custom is not None:
            return custom
        with self._lock:
            self.committed.update(offsets)
            self.committed_metadata.update(
                {(topic.topic, partition.partition): partition.metadata for topic in request.topics for partition in topic.partitions}
            )
        return broker_pb2.OffsetCommitResponse(
            topics=[
                broker_pb2.OffsetCommitTopicResponse(
                    topic=topic.topic, partitions=[broker_pb2.OffsetCommitPartitionResponse(partition=partition.partition) for partition in topic.partitions]
                )
                for topic in request.topics
            ]
        )

    def list_offsets(self, request: broker_pb2.ListOffsetsRequest) -> broker_pb2.ListOffsetsResponse:
        with self._lock:
            return broker_pb2.ListOffsetsResponse(
                topics=[
                    broker_pb2.ListOffsetsTopicResponse(
                        topic=topic.topic,
                        partitions=[
                            broker_pb2.ListOffsetsPartitionResponse(
                                partition=item.partition,
                                timestamp=-1,
                                leader_epoch=1,
                                offset=0 if item.timestamp == -2 else self.records.get((topic.topic, item.partition), 0),
                            )
                            for item in topic.partitions
                        ],
                    )
                    for topic in request.topics
                ]
            )

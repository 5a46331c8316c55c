"""The coordinator's MarkerWriter in a broker: each partition's marker goes to that partition's leader.

Partitions this broker leads (and every partition of a standalone broker) are written by the
local :class:`MarkerAppender`; the others are sent, grouped by leader, to that broker's
``Replication.WriteTxnMarkers`` with the internal credential, as Kafka's coordinator sends
WriteTxnMarkers to each partition leader; every leader's call is started before the local markers
are written and before any answer is awaited. The leader is taken from the current cluster map;
a partition without a leader, or whose leader cannot be reached, gets a retriable error and
the coordinator tries again after its backoff (with the map then current).

Thread-safe: channels are opened once per leader address under a lock and kept until
:meth:`close`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

import grpc

from broker_nodes.cluster_state import NO_LEADER, ClusterSnapshot
from broker_nodes.coordinator.transactions.broker_stubs import BrokerStubs
from broker_nodes.coordinator.transactions.marker_appender import MarkerAppender
from broker_nodes.coordinator.transactions.markers import MarkerRequest, TopicPartition
from broker_nodes.security.authenticator import INTERNAL_TOKEN_HEADER
from broker_nodes.topic_registry import UnknownTopicOrPartitionError
from grpc_protos.weir.v1 import replication_pb2
from weir.errors import ErrorCode

if TYPE_CHECKING:
    pass

logger = logging.getLogger(__name__)

CALL_DEADLINE_MARGIN_SECONDS = 5.0  # beyond the leader's own acks=all bound (request.timeout.ms)


class MarkerNotWrittenError(Exception):
    """A partition's marker could not be written now (no leader, leader unreachable, or the leader's error); retried."""

    retriable = True

    def __init__(self, topic: str, partition: int, reason: str, error_code: int = ErrorCode.UNKNOWN_SERVER_ERROR) -> None:
        super().__init__(f"marker for partition {partition} of {topic!r} not written: {reason}")
        self.topic = topic
        self.partition = partition
        self.reason = reason
        self.error_code = error_code


class MarkerRouter:
    """Routes markers to partition leaders. See the module docstring."""

    def __init__(
        self,
        node_id: int,
        snapshot: Callable[[], ClusterSnapshot | None],
        appender: MarkerAppender,
        *,
        channel_factory: Callable[[str], grpc.Channel],
        internal_token: str,
        timeout_ms: int,
    ) -> None:
        self._node_id = node_id
        self._snapshot = snapshot
        self._appender = appender
        self._metadata = ((INTERNAL_TOKEN_HEADER, internal_token),)
        self._timeout_seconds = timeout_ms / 1000.0 + CALL_DEADLINE_MARGIN_SECONDS
        self._stubs = BrokerStubs(channel_factory)

    def write_markers(self, request: MarkerRequest) -> dict[TopicPartition, Exception | None]:
        outcomes: dict[TopicPartition, Exception | None] = {}
        by_leader: dict[str, list[TopicPartition]] = {}
        local: list[TopicPartition] = []
        snapshot = self._snapshot()
        for topic, partition in request.partitions:
            if snapshot is None:
                local.append((topic, partition))
                continue
            managed = snapshot.topics.get(topic)
            if managed is None or not 0 <= partition < len(managed.partitions):
                outcomes[(topic, partition)] = UnknownTopicOrPartitionError(topic, partition)
                continue
            leader_id = managed.partitions[partition].leader_id
            leader = snapshot.broker(leader_id) if leader_id != NO_LEADER else None
            if leader_id == self._node_id:
                local.append((topic, partition))
            elif leader is None:
                outcomes[(topic, partition)] = MarkerNotWrittenError(topic, partition, f"no reachable leader (leader id {leader_id})")
            else:
                by_leader.setdefault(f"{leader.host}:{leader.port}", []).append((topic, partition))
        # Every leader's call is on its way before the local markers are written and before any answer is awaited:
        # the markers' replication on each leader runs at once, not one leader after another.
        answers = [self._send(address, _with_partitions(request, partitions)) for address, partitions in by_leader.items()]
        if local:
            outcomes.update(self._appender.write_markers(_with_partitions(request, local)))
        for answer in answers:
            outcomes.update(answer())
        return outcomes

    def _send(self, address: str, request: MarkerRequest) -> Callable[[], dict[TopicPartition, Exception | None]]:
        """Start the leader's WriteTxnMarkers call; the returned function waits for its answer and gives each partition's outcome."""
        message = replication_pb2.WriteTxnMarkersRequest(
            transactional_id=request.transactional_id,
            producer_id=request.producer_id,
            producer_epoch=request.producer_epoch,
            commit=request.commit,
            coordinator_epoch=request.coordinator_epoch,
            partitions=[replication_pb2.TxnMarkerPartition(topic=topic, partition=partition) for topic, partition in request.partitions],
            above_batches=request.above_batches,
        )
        call = self._stubs.stub(address).WriteTxnMarkers.future(message, timeout=self._timeout_seconds, metadata=self._metadata)
        return lambda: _outcomes(address, request, call)

    def close(self) -> None:
        self._stubs.close()


def _outcomes(address: str, request: MarkerRequest, call: grpc.Future) -> dict[TopicPartition, Exception | None]:
    """Each partition's outcome of a leader's WriteTxnMarkers call, once it answered (or failed)."""
    try:
        response = call.result()
    except grpc.RpcError as error:
        reason = f"the leader at {address} did not answer ({error.code().name})"
        return {(topic, partition): MarkerNotWrittenError(topic, partition, reason) for topic, partition in request.partitions}
    outcomes: dict[TopicPartition, Exception | None] = {
        (topic, partition): MarkerNotWrittenError(topic, partition, f"the leader at {address} did not answer for it") for topic, partition in request.partitions
    }
    for result in response.partitions:
        key = (result.topic, result.partition)
        if result.error_code == ErrorCode.NO_ERROR:
            outcomes[key] = None
        elif result.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
            outcomes[key] = UnknownTopicOrPartitionError(result.topic, result.partition)
        else:
            outcomes[key] = MarkerNotWrittenError(result.topic, result.partition, result.error_message, result.error_code)
    return outcomes


def _with_partitions(request: MarkerRequest, partitions: list[TopicPartition]) -> MarkerRequest:
    return MarkerRequest(
        request.transactional_id, request.producer_id, request.producer_epoch, request.commit, request.coordinator_epoch, partitions, request.above_batches
    )

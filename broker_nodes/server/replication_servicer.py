"""The gRPC ``weir.v1.Replication`` service: followers fetch from this broker as leader, and
transaction coordinators have it append their markers (WriteTxnMarkers).

Every call must carry the internal token (metadata ``x-weir-internal-token``), like the Admin
service; anything else is refused with UNAUTHENTICATED. The logic lives in
``broker_nodes.replication.manager``; per-partition errors are mapped by ``server.errors``.
An OFFSET_OUT_OF_RANGE answer carries the leader's log start and log end offsets, which
tell the follower how to move its log into the leader's range.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

import grpc

from broker_nodes.coordinator.transactions.markers import MarkerRequest
from broker_nodes.metrics import record_bytes
from broker_nodes.replication.fetch_sessions import FetchSessionError
from broker_nodes.replication.manager import ReplicaFetchPartitionRequest, ReplicaFetchPartitionResult
from broker_nodes.security.authenticator import INTERNAL_TOKEN_HEADER, internal_token_matches
from broker_nodes.server.broker import Broker
from broker_nodes.server.errors import error_code_and_message
from broker_nodes.storage.errors import OffsetOutOfRangeError
from grpc_protos.weir.v1 import replication_pb2, replication_pb2_grpc

logger = logging.getLogger(__name__)


class ReplicationServicer(replication_pb2_grpc.ReplicationServicer):
    """Thin adapter from ``replication.proto`` to the broker's ReplicationManager. Thread-safe."""

    def __init__(self, broker: Broker) -> None:
        self.broker = broker

    def _check_call(self, context: grpc.ServicerContext) -> None:
        presented = next((value for key, value in context.invocation_metadata() if key == INTERNAL_TOKEN_HEADER and isinstance(value, str)), None)
        if presented is None or not internal_token_matches(presented, self.broker.config.internal_token):
            context.abort(grpc.StatusCode.UNAUTHENTICATED, "the Replication service needs the internal token (x-weir-internal-token)")
        if not self.broker.ready:
            context.abort(grpc.StatusCode.UNAVAILABLE, "the broker is starting (recovering its logs) or shutting down")

    def ReplicaFetch(self, request: replication_pb2.ReplicaFetchRequest, context: grpc.ServicerContext) -> replication_pb2.ReplicaFetchResponse:
        """A follower's fetch, within its fetch session (KIP-227) unless ``session_epoch`` is -1."""
        self._check_call(context)
        return self._replica_fetch(request)

    def ReplicaFetchStream(
        self, requests: Iterator[replication_pb2.ReplicaFetchRequest], context: grpc.ServicerContext
    ) -> Iterator[replication_pb2.ReplicaFetchResponse]:
        """A follower's fetches on one stream: each answered in order as ``ReplicaFetch`` answers it.

        The credential is checked once, when the stream opens; readiness before every fetch (a
        broker shutting down ends the stream with UNAVAILABLE, and its stop ends an idle one at
        once: ``server.open_streams``). The stream holds one pool thread
        for its life, as the follower's unary long polls held one for theirs.
        """
        self._check_call(context)
        for request in self.broker.streams.requests(requests, context):
            if not self.broker.ready:
                context.abort(grpc.StatusCode.UNAVAILABLE, "the broker is shutting down")
            yield self._replica_fetch(request)

    def _replica_fetch(self, request: replication_pb2.ReplicaFetchRequest) -> replication_pb2.ReplicaFetchResponse:
        requests = [
            ReplicaFetchPartitionRequest(item.topic, item.partition, item.fetch_offset, item.current_leader_epoch, item.log_start_offset)
            for item in request.partitions
        ]
        try:
            answer = self.broker.replication.replica_fetch_in_session(
                request.replica_id,
                requests,
                session_id=request.session_id,
                session_epoch=request.session_epoch,
                forgotten=[(item.topic, item.partition) for item in request.forgotten],
                max_wait_ms=request.max_wait_ms,
                min_bytes=request.min_bytes,
                max_bytes=max(request.max_bytes, 1),
            )
        except FetchSessionError as refusal:
            return replication_pb2.ReplicaFetchResponse(error_code=refusal.code, error_message=str(refusal))
        response = replication_pb2.ReplicaFetchResponse(session_id=answer.session_id)
        add = response.partitions.add
        answered_bytes = 0
        for result in answer.partitions:
            code, message = (0, "") if result.error is None else error_code_and_message(result.error)
            log_start_offset, log_end_offset = _leader_log_range(result)
            # Built in place: a list of messages handed to the constructor is merged by serializing and
            # parsing each one again (protobuf's upb), which copied a megabyte answer's records three more times.
            add(
                topic=result.topic,
                partition=result.partition,
                error_code=code,
                error_message=message,
                high_watermark=result.high_watermark,
                log_start_offset=log_start_offset,
                log_end_offset=log_end_offset,
                records=result.records,
            )
            answered_bytes += len(result.records)
        record_bytes.note(answered_bytes)  # for the request metrics, which would copy the records to count them
        return response

    def WriteTxnMarkers(self, request: replication_pb2.WriteTxnMarkersRequest, context: grpc.ServicerContext) -> replication_pb2.WriteTxnMarkersResponse:
        """A transaction coordinator's markers for partitions this broker leads (see ``coordinator.transactions.marker_appender``)."""
        self._check_call(context)
        outcomes = self.broker.marker_appender.write_markers(
            MarkerRequest(
                transactional_id=request.transactional_id,
                producer_id=request.producer_id,
                producer_epoch=request.producer_epoch,
                commit=request.commit,
                coordinator_epoch=request.coordinator_epoch,
                partitions=[(item.topic, item.partition) for item in request.partitions],
                above_batches=request.above_batches,
            )
        )
        results = []
        for (topic, partition), error in outcomes.items():
            code, message = (0, "") if error is None else error_code_and_message(error)
            results.append(replication_pb2.WriteTxnMarkersPartitionResult(topic=topic, partition=partition, error_code=code, error_message=message))
        return replication_pb2.WriteTxnMarkersResponse(partitions=results)

    def VerifyTxnPartitions(
        self, request: replication_pb2.VerifyTxnPartitionsRequest, context: grpc.ServicerContext
    ) -> replication_pb2.VerifyTxnPartitionsResponse:
        """KIP-890 part 1 for a partition leader: is each partition in the producer's ongoing transaction (this broker coordinates the id)."""
        self._check_call(context)
        partitions = [(item.topic, item.partition) for item in request.partitions]
        outcomes: dict[tuple[str, int], Exception | None]
        try:
            outcomes = self.broker.transaction_coordinator.verify_partitions(request.transactional_id, request.producer_id, request.producer_epoch, partitions)
        except Exception as refusal:  # not the coordinator (any more), still loading...: every partition's answer
            outcomes = dict.fromkeys(partitions, refusal)
        results = []
        for (topic, partition), outcome in outcomes.items():
            code, message = (0, "") if outcome is None else error_code_and_message(outcome)
            results.append(replication_pb2.WriteTxnMarkersPartitionResult(topic=topic, partition=partition, error_code=code, error_message=message))
        return replication_pb2.VerifyTxnPartitionsResponse(partitions=results)

    def OffsetForLeaderEpoch(
        self, request: replication_pb2.OffsetForLeaderEpochRequest, context: grpc.ServicerContext
    ) -> replication_pb2.OffsetForLeaderEpochResponse:
        self._check_call(context)
        partitions = []
        for item in request.partitions:
            try:
                epoch, end_offset = self.broker.replication.offset_for_leader_epoch(item.topic, item.partition, item.current_leader_epoch, item.leader_epoch)
                partitions.append(
                    replication_pb2.OffsetForLeaderEpochPartitionResponse(topic=item.topic, partition=item.partition, leader_epoch=epoch, end_offset=end_offset)
                )
            except Exception as error:
                code, message = error_code_and_message(error)
                partitions.append(
                    replication_pb2.OffsetForLeaderEpochPartitionResponse(
                        topic=item.topic, partition=item.partition, error_code=code, error_message=message, leader_epoch=-1, end_offset=-1
                    )
                )
        return replication_pb2.OffsetForLeaderEpochResponse(partitions=partitions)


def _leader_log_range(result: ReplicaFetchPartitionResult) -> tuple[int, int]:
    """(log start, log end) of the leader's log for one answer; -1 when the failure says nothing of it."""
    if isinstance(result.error, OffsetOutOfRangeError):
        return result.error.log_start_offset, result.error.log_end_offset
    return result.log_start_offset, result.log_end_offset

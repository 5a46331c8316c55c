"""The gRPC ``weir.v1.Admin`` service: the control plane pushes snapshots and reads what the broker holds.

Every call must carry the internal token (metadata ``x-weir-internal-token``); anything else
is refused with UNAUTHENTICATED before the request is looked at. A snapshot older than the
applied one is refused with FAILED_PRECONDITION, a contradictory one with INVALID_ARGUMENT
(nothing of it applied). A partition the broker cannot host does not fail the call: the
others are applied and the answer lists it in ``failed_partitions`` with Kafka's error code
(DescribeState lists it too). The logic lives in :class:`Broker`; this class only translates.
"""

from __future__ import annotations

import functools
import logging
from typing import Callable, TypeVar

import grpc

from broker_nodes import names
from broker_nodes.cluster_state import ClusterSnapshot, InvalidSnapshotError, NotLeaderOrFollowerError, PartitionFailure, StaleSnapshotError
from broker_nodes.security.authenticator import INTERNAL_TOKEN_HEADER, internal_token_matches
from broker_nodes.security.snapshot import SecuritySnapshot
from broker_nodes.server.broker import Broker
from broker_nodes.server.errors import BrokerNotReadyError, error_code, grpc_status
from grpc_protos.weir.v1 import admin_pb2, admin_pb2_grpc

logger = logging.getLogger(__name__)

Request = TypeVar("Request")
Response = TypeVar("Response")


def _admin_handler(method: Callable[["AdminServicer", Request], Response]) -> Callable[["AdminServicer", Request, grpc.ServicerContext], Response]:
    """Check the internal token and readiness, then map escaping errors to a gRPC status."""

    @functools.wraps(method)
    def handle(self: "AdminServicer", request: Request, context: grpc.ServicerContext) -> Response:
        presented = next((value for key, value in context.invocation_metadata() if key == INTERNAL_TOKEN_HEADER and isinstance(value, str)), None)
        if presented is None or not internal_token_matches(presented, self.broker.config.internal_token):
            context.abort(grpc.StatusCode.UNAUTHENTICATED, "the Admin service needs the internal token (x-weir-internal-token)")
        try:
            if not self.broker.ready:
                raise BrokerNotReadyError("the broker is starting (recovering its logs) or shutting down")
            return method(self, request)
        except (StaleSnapshotError, InvalidSnapshotError, BrokerNotReadyError) as error:
            context.abort(grpc_status(error), str(error))
        except Exception as error:
            logger.exception("Admin %s failed unexpectedly", method.__name__)
            context.abort(grpc.StatusCode.INTERNAL, f"unexpected server error: {type(error).__name__}: {error}")
        raise AssertionError("context.abort always raises")

    return handle


class AdminServicer(admin_pb2_grpc.AdminServicer):
    """Thin adapter from ``admin.proto`` to :class:`Broker`. Thread-safe (the broker serializes snapshots)."""

    def __init__(self, broker: Broker) -> None:
        self.broker = broker

    @_admin_handler
    def ApplyPartitions(self, request: admin_pb2.ApplyPartitionsRequest) -> admin_pb2.ApplyPartitionsResponse:
        change = self.broker.apply_partitions(ClusterSnapshot.from_request(request), controller_epoch=request.controller_epoch)
        return admin_pb2.ApplyPartitionsResponse(
            applied_version=self.broker.cluster_state.version,
            partitions_created=change.partitions_created,
            partitions_deleted=change.partitions_deleted,
            topics_reconfigured=change.topics_reconfigured,
            failed_partitions=[_failure_message(failure) for failure in change.failures],
        )

    @_admin_handler
    def ApplySecurity(self, request: admin_pb2.ApplySecurityRequest) -> admin_pb2.ApplySecurityResponse:
        self.broker.apply_security(SecuritySnapshot.from_request(request))
        return admin_pb2.ApplySecurityResponse(applied_version=self.broker.security.version)

    @_admin_handler
    def DescribeState(self, request: admin_pb2.DescribeStateRequest) -> admin_pb2.DescribeStateResponse:
        partitions = []
        snapshot = self.broker.cluster_state.snapshot
        for log in sorted(self.broker.log_manager.logs(), key=lambda log: (log.topic, log.partition)):
            topic = self.broker.registry.get(log.topic)
            if topic is None:
                continue
            try:
                leader_epoch = self.broker.replica_manager.leader_epoch(log.topic, log.partition)
                is_leader = True
            except NotLeaderOrFollowerError:
                leader_epoch, is_leader = -1, False
            tenant_id, name = names.split(log.topic)
            managed = snapshot.topics.get(log.topic) if snapshot is not None else None
            assignment = managed.partitions[log.partition] if managed is not None and log.partition < len(managed.partitions) else None
            node_id = self.broker.config.node_id
            replicas = list(assignment.replicas) if assignment is not None else [node_id]
            leader_id = assignment.leader_id if assignment is not None else node_id
            # The leader's own ISR is newer than the map's (changes confirmed since the last push).
            isr = self.broker.replication.isr(log.topic, log.partition) or (assignment.isr if assignment is not None else (node_id,))
            partitions.append(
                admin_pb2.HostedPartition(
                    tenant_id=tenant_id,
                    topic=name,
                    topic_id=topic.topic_id,
                    partition=log.partition,
                    is_leader=is_leader,
                    leader_epoch=leader_epoch,
                    log_start_offset=log.log_start_offset,
                    log_end_offset=log.log_end_offset,
                    high_watermark=log.high_watermark,
                    size_bytes=log.size_in_bytes,
                    segment_count=log.segment_count,
                    isr=list(isr),
                    replicas=replicas,
                    leader_id=leader_id,
                )
            )
        config = self.broker.config
        return admin_pb2.DescribeStateResponse(
            node_id=config.node_id,
            rack=config.rack,
            partitions_version=self.broker.cluster_state.version,
            security_version=self.broker.security.version,
            partitions=partitions,
            controller_epoch=self.broker.controller.controller_epoch if self.broker.controller is not None else 0,
            broker_epoch=self.broker.controller.broker_epoch if self.broker.controller is not None else 0,
            credential_uses=[
                admin_pb2.CredentialUse(api_key=api_key, last_used_ms=used_ms)
                for api_key, used_ms in sorted(self.broker.authenticator.last_used().items())
            ],
            failed_partitions=[_failure_message(failure) for failure in self.broker.cluster_state.failed_partitions],
        )


def _failure_message(failure: PartitionFailure) -> admin_pb2.PartitionFailure:
    tenant_id, name = names.split(failure.topic)
    return admin_pb2.PartitionFailure(
        tenant_id=tenant_id,
        topic=name,
        topic_id=failure.topic_id,
        partition=failure.partition,
        error_code=error_code(failure.error),
        error_message=str(failure.error),
        retriable=failure.retriable,
    )

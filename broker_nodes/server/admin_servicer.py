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
from collections.abc import Callable
from typing import Any, TypeVar

import grpc

from broker_nodes import names
from broker_nodes.cluster_state import ClusterSnapshot, InvalidSnapshotError, NotLeaderOrFollowerError, PartitionFailure, StaleSnapshotError
from broker_nodes.metering.counters import PartitionTraffic
from broker_nodes.security.authenticator import INTERNAL_TOKEN_HEADER, AuthenticationError, internal_token_matches
from broker_nodes.security.key_use import KeyUse
from broker_nodes.security.snapshot import SecuritySnapshot
from broker_nodes.server.broker import Broker
from broker_nodes.server.errors import BrokerNotReadyError, error_code, grpc_status
from grpc_protos.weir.v1 import admin_pb2, admin_pb2_grpc
from weir.tenant_tokens import TENANT_TOKEN_HEADER

logger = logging.getLogger(__name__)
# A partition no client reached since this broker started.
NO_TRAFFIC = PartitionTraffic()

Request = Any  # the admin.proto request message of the wrapped method
Response = TypeVar("Response")


def _admin_handler(method: Callable[..., Response]) -> Callable[[AdminServicer, Request, grpc.ServicerContext], Response]:
    """Check the internal token and readiness, then map escaping errors to a gRPC status."""
    return _guarded(method, tenant_readable=False)


def _tenant_readable_handler(method: Callable[..., Response]) -> Callable[[AdminServicer, Request, grpc.ServicerContext], Response]:
    """Like :func:`_admin_handler`, but a tenant token (``x-weir-tenant-token``) is accepted too:
    the method then gets ``tenant_id`` and answers about that tenant's partitions only. This is
    how the web process reads partition state without holding the all-tenant internal token."""
    return _guarded(method, tenant_readable=True)


def _guarded(method: Callable[..., Response], *, tenant_readable: bool) -> Callable[[AdminServicer, Request, grpc.ServicerContext], Response]:
    @functools.wraps(method)
    def handle(self: AdminServicer, request: Request, context: grpc.ServicerContext) -> Response:
        metadata = [(key, value) for key, value in context.invocation_metadata() if isinstance(value, str)]
        presented = next((value for key, value in metadata if key == INTERNAL_TOKEN_HEADER), None)
        scope: dict[str, str] = {}
        if tenant_readable and presented is None and any(key == TENANT_TOKEN_HEADER for key, _ in metadata):
            try:
                caller = self.broker.authenticator.authenticate(metadata, context.peer())
            except AuthenticationError as error:
                context.abort(grpc.StatusCode.UNAUTHENTICATED, str(error))
            if not caller.tenant_id:
                context.abort(grpc.StatusCode.UNAUTHENTICATED, "the tenant token names no tenant")
            scope["tenant_id"] = caller.tenant_id
        elif presented is None or not internal_token_matches(presented, self.broker.config.internal_token):
            context.abort(grpc.StatusCode.UNAUTHENTICATED, "the Admin service needs the internal token (x-weir-internal-token)")
        elif tenant_readable:
            scope["tenant_id"] = ""
        try:
            if not self.broker.ready:
                raise BrokerNotReadyError("the broker is starting (recovering its logs) or shutting down")
            return method(self, request, **scope)
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
        change = self.broker.apply_partitions(
            ClusterSnapshot.from_request(request, self.broker.cluster_state.snapshot), controller_epoch=request.controller_epoch
        )
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

    @_tenant_readable_handler
    def DescribeState(self, request: admin_pb2.DescribeStateRequest, tenant_id: str) -> admin_pb2.DescribeStateResponse:
        """This broker's partitions and versions. ``tenant_id`` (a tenant token's caller) limits the
        answer to that tenant's partitions and failures, without other tenants' key uses; empty
        (the internal token) answers everything."""
        partitions = []
        snapshot = self.broker.cluster_state.snapshot
        traffic = self.broker.metering.traffic_totals()
        for log in sorted(self.broker.log_manager.logs(), key=lambda log: (log.topic, log.partition)):
            topic = self.broker.registry.get(log.topic)
            if topic is None:
                continue
            try:
                leader_epoch = self.broker.replica_manager.leader_epoch(log.topic, log.partition)
                is_leader = True
            except NotLeaderOrFollowerError:
                leader_epoch, is_leader = -1, False
            partition_tenant, name = names.split(log.topic)
            if tenant_id and partition_tenant != tenant_id:
                continue
            managed = snapshot.topics.get(log.topic) if snapshot is not None else None
            assignment = managed.partitions[log.partition] if managed is not None and log.partition < len(managed.partitions) else None
            node_id = self.broker.config.node_id
            replicas = list(assignment.replicas) if assignment is not None else [node_id]
            leader_id = assignment.leader_id if assignment is not None else node_id
            # The leader's own ISR is newer than the map's (changes confirmed since the last push).
            isr = self.broker.replication.isr(log.topic, log.partition) or (assignment.isr if assignment is not None else (node_id,))
            counted = traffic.get((log.topic, log.partition), NO_TRAFFIC)
            partitions.append(
                admin_pb2.HostedPartition(
                    tenant_id=partition_tenant,
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
                    bytes_in_total=counted.bytes_in,
                    records_in_total=counted.records_in,
                    bytes_out_total=counted.bytes_out,
                    records_out_total=counted.records_out,
                )
            )
        config = self.broker.config
        return admin_pb2.DescribeStateResponse(
            node_id=config.node_id,
            rack=config.rack,
            partitions_version=self.broker.cluster_state.version,
            security_version=self.broker.security.version,
            partitions=partitions,
            incarnation=self.broker.metering.incarnation,
            controller_epoch=self.broker.controller.controller_epoch if self.broker.controller is not None else 0,
            broker_epoch=self.broker.controller.broker_epoch if self.broker.controller is not None else 0,
            credential_uses=[] if tenant_id else _credential_uses(self.broker.authenticator.key_use),
            failed_partitions=[
                _failure_message(failure)
                for failure in self.broker.cluster_state.failed_partitions
                if not tenant_id or names.split(failure.topic)[0] == tenant_id
            ],
        )


def _credential_uses(key_use: KeyUse) -> list[admin_pb2.CredentialUse]:
    """Each cluster key's last use here and its recent applications (for the control plane)."""
    return [
        admin_pb2.CredentialUse(
            api_key=api_key,
            last_used_ms=used_ms,
            applications=[
                admin_pb2.ClientApplication(
                    client_id=app.client_id,
                    software_name=app.software_name,
                    software_version=app.software_version,
                    address=app.address,
                    first_seen_ms=first,
                    last_seen_ms=last,
                )
                for app, first, last in key_use.applications(api_key)
            ],
        )
        for api_key, used_ms in sorted(key_use.last_used().items())
    ]


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

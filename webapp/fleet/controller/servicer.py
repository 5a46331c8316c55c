"""The gRPC ``Controller`` service: checks the internal token, calls ``ControllerService``.

``create_controller_server`` returns the started server and its port, so tests run it in-process.
"""

from __future__ import annotations

import hmac
from concurrent import futures

import grpc
from django.conf import settings
from django.db import close_old_connections

from grpc_protos.weir.v1 import controller_pb2, controller_pb2_grpc
from webapp.fleet.controller.service import STALE_BROKER_EPOCH, ControllerService
from webapp.fleet.registration import BrokerRegistrationError
from webapp.provisioning.broker_client import INTERNAL_TOKEN_METADATA
from weir.errors import ErrorCode

# Handler threads: brokers call rarely (a heartbeat every two seconds each).
SERVER_THREADS = 8


class ControllerServicer(controller_pb2_grpc.ControllerServicer):
    """Each call is one request for Django's connection handling: connections of handler
    threads are closed after a call when they are too old (CONN_MAX_AGE) or broken."""

    def __init__(self, service: ControllerService, internal_token: str) -> None:
        self._service = service
        self._token = internal_token.encode("utf-8")

    def _authenticate(self, context: grpc.ServicerContext) -> None:
        presented = dict(context.invocation_metadata()).get(INTERNAL_TOKEN_METADATA, "")
        if not hmac.compare_digest(str(presented).encode("utf-8"), self._token):
            context.abort(grpc.StatusCode.UNAUTHENTICATED, "the Controller service needs the internal token")

    def RegisterBroker(self, request: controller_pb2.RegisterBrokerRequest, context: grpc.ServicerContext) -> controller_pb2.RegisterBrokerResponse:
        try:
            return self._register(request, context)
        finally:
            close_old_connections()

    def BrokerHeartbeat(self, request: controller_pb2.BrokerHeartbeatRequest, context: grpc.ServicerContext) -> controller_pb2.BrokerHeartbeatResponse:
        try:
            return self._heartbeat(request, context)
        finally:
            close_old_connections()

    def AlterPartition(self, request: controller_pb2.AlterPartitionRequest, context: grpc.ServicerContext) -> controller_pb2.AlterPartitionResponse:
        try:
            return self._alter_partition(request, context)
        finally:
            close_old_connections()

    def _register(self, request: controller_pb2.RegisterBrokerRequest, context: grpc.ServicerContext) -> controller_pb2.RegisterBrokerResponse:
        self._authenticate(context)
        try:
            registered = self._service.register(request.node_id, request.host, request.port, request.rack)
        except BrokerRegistrationError as error:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(error))
        return controller_pb2.RegisterBrokerResponse(broker_epoch=registered.broker_epoch, session_timeout_ms=registered.session_timeout_ms)

    def _heartbeat(self, request: controller_pb2.BrokerHeartbeatRequest, context: grpc.ServicerContext) -> controller_pb2.BrokerHeartbeatResponse:
        self._authenticate(context)
        if self._service.heartbeat(request.node_id, request.broker_epoch):
            return controller_pb2.BrokerHeartbeatResponse(error_code=ErrorCode.NO_ERROR, fenced=False)
        return controller_pb2.BrokerHeartbeatResponse(error_code=STALE_BROKER_EPOCH, fenced=True)

    def _alter_partition(self, request: controller_pb2.AlterPartitionRequest, context: grpc.ServicerContext) -> controller_pb2.AlterPartitionResponse:
        self._authenticate(context)
        result = self._service.alter_partition(
            request.topic, request.partition, request.leader_id, request.leader_epoch, list(request.new_isr), request.broker_epoch
        )
        return controller_pb2.AlterPartitionResponse(error_code=result.error_code, isr=result.isr, leader_id=result.leader, leader_epoch=result.leader_epoch)


def create_controller_server(service: ControllerService, listen: str, *, internal_token: str | None = None) -> tuple[grpc.Server, int]:
    """Start serving ``service`` on ``listen`` (``HOST:PORT``, port 0 for any); (server, port)."""
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=SERVER_THREADS, thread_name_prefix="controller"))
    controller_pb2_grpc.add_ControllerServicer_to_server(ControllerServicer(service, internal_token or settings.WEIR_INTERNAL_TOKEN), server)
    port = server.add_insecure_port(listen)
    if port == 0:
        raise OSError(f"cannot listen on {listen}")
    server.start()
    return server, port

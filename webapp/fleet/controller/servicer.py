"""The gRPC ``Controller`` service: checks the internal token, calls ``ControllerService``.

A controller that has been superseded by a newer controller epoch answers every call with
NOT_CONTROLLER, so that brokers turn to another controller address.

``create_controller_server`` returns the started server and its port, so tests run it in-process;
given a certificate and key it serves TLS only (brokers verify it with their --tls-ca).
"""

from __future__ import annotations

import hmac
from collections.abc import Callable
from concurrent import futures
from pathlib import Path
from typing import Any

import grpc
from django.conf import settings
from django.db import close_old_connections

from grpc_protos.weir.v1 import broker_pb2, controller_pb2, controller_pb2_grpc
from webapp.fleet.controller.epoch import ControllerFencedError
from webapp.fleet.controller.service import STALE_BROKER_EPOCH, ControllerService
from webapp.fleet.registration import BrokerRegistrationError
from webapp.provisioning.broker_client import INTERNAL_TOKEN_METADATA
from weir.errors import ErrorCode
from weir.pem import PemFileError, read_pem

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

    def ControlledShutdown(
        self, request: controller_pb2.ControlledShutdownRequest, context: grpc.ServicerContext
    ) -> controller_pb2.ControlledShutdownResponse:
        try:
            return self._controlled_shutdown(request, context)
        finally:
            close_old_connections()

    def _register(self, request: controller_pb2.RegisterBrokerRequest, context: grpc.ServicerContext) -> controller_pb2.RegisterBrokerResponse:
        self._authenticate(context)
        try:
            registered = self._service.register(request.node_id, request.host, request.port, request.rack)
        except BrokerRegistrationError as error:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(error))
        except ControllerFencedError:
            return controller_pb2.RegisterBrokerResponse(error_code=ErrorCode.NOT_CONTROLLER, controller_epoch=self._service.controller_epoch)
        return controller_pb2.RegisterBrokerResponse(
            broker_epoch=registered.broker_epoch, session_timeout_ms=registered.session_timeout_ms, controller_epoch=self._service.controller_epoch
        )

    def _heartbeat(self, request: controller_pb2.BrokerHeartbeatRequest, context: grpc.ServicerContext) -> controller_pb2.BrokerHeartbeatResponse:
        self._authenticate(context)
        epoch = self._service.controller_epoch
        try:
            alive = self._service.heartbeat(request.node_id, request.broker_epoch)
        except ControllerFencedError:
            return controller_pb2.BrokerHeartbeatResponse(error_code=ErrorCode.NOT_CONTROLLER, controller_epoch=epoch)
        if alive:
            return controller_pb2.BrokerHeartbeatResponse(error_code=ErrorCode.NO_ERROR, fenced=False, controller_epoch=epoch)
        return controller_pb2.BrokerHeartbeatResponse(error_code=STALE_BROKER_EPOCH, fenced=True, controller_epoch=epoch)

    def _alter_partition(self, request: controller_pb2.AlterPartitionRequest, context: grpc.ServicerContext) -> controller_pb2.AlterPartitionResponse:
        self._authenticate(context)
        try:
            result = self._service.alter_partition(
                request.topic, request.partition, request.leader_id, request.leader_epoch, list(request.new_isr), request.broker_epoch
            )
        except ControllerFencedError:
            return controller_pb2.AlterPartitionResponse(error_code=ErrorCode.NOT_CONTROLLER)
        return controller_pb2.AlterPartitionResponse(error_code=result.error_code, isr=result.isr, leader_id=result.leader, leader_epoch=result.leader_epoch)

    def _controlled_shutdown(
        self, request: controller_pb2.ControlledShutdownRequest, context: grpc.ServicerContext
    ) -> controller_pb2.ControlledShutdownResponse:
        self._authenticate(context)
        try:
            result = self._service.controlled_shutdown(request.node_id, request.broker_epoch)
        except ControllerFencedError:
            return controller_pb2.ControlledShutdownResponse(error_code=ErrorCode.NOT_CONTROLLER)
        return controller_pb2.ControlledShutdownResponse(
            error_code=result.error_code,
            remaining_partitions=[controller_pb2.PartitionRef(topic=ref.topic, partition=ref.partition) for ref in result.remaining],
        )

    # ------------------------------------------------------------ forwarded topic administration

    def CreateTopics(self, request: controller_pb2.ForwardedCreateTopicsRequest, context: grpc.ServicerContext) -> broker_pb2.CreateTopicsResponse:
        names = [topic.name for topic in request.request.topics]
        return self._forwarded(self._service.create_topics, request, context, lambda message: broker_pb2.CreateTopicsResponse(topics=_not_controller(names, message)))

    def DeleteTopics(self, request: controller_pb2.ForwardedDeleteTopicsRequest, context: grpc.ServicerContext) -> broker_pb2.DeleteTopicsResponse:
        names = list(request.request.topics)
        return self._forwarded(self._service.delete_topics, request, context, lambda message: broker_pb2.DeleteTopicsResponse(topics=_not_controller(names, message)))

    def CreatePartitions(
        self, request: controller_pb2.ForwardedCreatePartitionsRequest, context: grpc.ServicerContext
    ) -> broker_pb2.CreatePartitionsResponse:
        names = [topic.name for topic in request.request.topics]
        return self._forwarded(
            self._service.create_partitions, request, context, lambda message: broker_pb2.CreatePartitionsResponse(topics=_not_controller(names, message))
        )

    def AlterConfigs(self, request: controller_pb2.ForwardedAlterConfigsRequest, context: grpc.ServicerContext) -> broker_pb2.AlterConfigsResponse:
        def not_controller(message: str) -> broker_pb2.AlterConfigsResponse:
            return broker_pb2.AlterConfigsResponse(
                resources=[
                    broker_pb2.ConfigResourceResult(type=resource.type, name=resource.name, error_code=ErrorCode.NOT_CONTROLLER, error_message=message)
                    for resource in request.request.resources
                ]
            )

        return self._forwarded(self._service.alter_configs, request, context, not_controller)

    def _forwarded(self, handle: Callable[[Any], Any], request: Any, context: grpc.ServicerContext, not_controller: Callable[[str], Any]) -> Any:
        """Run a forwarded topic request; a superseded controller answers NOT_CONTROLLER for every entry."""
        try:
            self._authenticate(context)
            try:
                return handle(request)
            except ControllerFencedError as error:
                return not_controller(str(error))
        finally:
            close_old_connections()


def _not_controller(names: list[str], message: str) -> list[broker_pb2.TopicResult]:
    return [broker_pb2.TopicResult(name=name, error_code=ErrorCode.NOT_CONTROLLER, error_message=message) for name in names]


# The controller's TLS certificate or key cannot be read (the controller does not start).
ControllerTlsError = PemFileError


def create_controller_server(
    service: ControllerService, listen: str, *, internal_token: str | None = None, tls: tuple[Path | str, Path | str] | None = None
) -> tuple[grpc.Server, int]:
    """Start serving ``service`` on ``listen`` (``HOST:PORT``, port 0 for any); (server, port).

    ``tls`` is (PEM certificate chain, PEM private key): the port then speaks TLS only and
    plaintext callers are refused. Raises ControllerTlsError when either cannot be read.
    """
    credentials = None
    if tls is not None:
        certificate_chain, private_key = (Path(path) for path in tls)
        credentials = grpc.ssl_server_credentials([(read_pem(private_key, what="controller TLS"), read_pem(certificate_chain, what="controller TLS"))])
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=SERVER_THREADS, thread_name_prefix="controller"))
    controller_pb2_grpc.add_ControllerServicer_to_server(ControllerServicer(service, internal_token or settings.WEIR_INTERNAL_TOKEN), server)
    port = server.add_secure_port(listen, credentials) if credentials is not None else server.add_insecure_port(listen)
    if port == 0:
        raise OSError(f"cannot listen on {listen}")
    server.start()
    return server, port

"""The gRPC ``Controller`` service: checks the internal token, calls ``ControllerService``.

A controller that has been superseded by a newer controller epoch answers every call with
NOT_CONTROLLER, so that brokers turn to another controller address; so does a standby.

``start_controller_server`` listens at once, as a standby: the gRPC health service says
SERVING for "" (the process runs) and NOT_SERVING for "weir.v1.Controller" until
:meth:`ControllerServer.activate` hands it the service of the active controller, and every
Controller call is answered NOT_CONTROLLER until then. ``create_controller_server`` starts an
active one and returns the server and its port, so tests run it in-process. Given a
certificate and key the server speaks TLS only (brokers verify it with their --tls-ca).
"""

from __future__ import annotations

import hmac
import logging
import threading
from collections.abc import Callable, Iterator
from concurrent import futures
from pathlib import Path
from typing import Any

import grpc
from django.conf import settings
from django.db import close_old_connections
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from grpc_protos.weir.v1 import broker_pb2, controller_pb2, controller_pb2_grpc
from server_runtime.pem import PemFileError, read_pem
from server_runtime.request_ids import RequestIdServerInterceptor
from webapp.audit.facade import Door, audit_source
from webapp.controller import metrics
from webapp.controller.epoch import ControllerFencedError
from webapp.controller.registration import BrokerRegistrationError
from webapp.controller.schema_lookup import lookup_schema_subjects
from webapp.controller.service import STALE_BROKER_EPOCH, ControllerService
from webapp.provisioning.facade import INTERNAL_TOKEN_METADATA
from weir.errors import ErrorCode, error_name

logger = logging.getLogger(__name__)

# Handler threads: brokers call rarely (a heartbeat every two seconds each), but each also holds
# one thread with its lease stream (BrokerLease): up to MAX_LEASES of them. Threads start on demand.
CALL_THREADS = 8
MAX_LEASES = 64
SERVER_THREADS = CALL_THREADS + MAX_LEASES
# How often a held lease checks that its session is still the live one (a replaced or ended
# session's stream is ended, so that the broker opens one for its new session).
LEASE_CHECK_SECONDS = 0.5
CONTROLLER_SERVICE_NAME = controller_pb2.DESCRIPTOR.services_by_name["Controller"].full_name  # "weir.v1.Controller"


class ControllerStandbyError(ControllerFencedError):
    """This process is not the active controller (a standby, or one stepping down): NOT_CONTROLLER."""

    def __init__(self) -> None:
        Exception.__init__(self, "this controller is a standby: it does not hold the controller lock")
        self.epoch = 0
        self.current_epoch = 0
        self.holder = ""


class _Standby:
    """Stands in for the service while this process is not the active controller: every call refuses."""

    controller_epoch = 0

    def __getattr__(self, name: str) -> Callable[..., Any]:
        def refuse(*_args: object, **_kwargs: object) -> Any:
            raise ControllerStandbyError()

        return refuse


class ControllerServicer(controller_pb2_grpc.ControllerServicer):
    """Each call is one request for Django's connection handling: connections of handler
    threads are closed after a call when they are too old (CONN_MAX_AGE) or broken."""

    def __init__(self, service: ControllerService | None, internal_token: str) -> None:
        self._service: Any = service if service is not None else _Standby()
        self._token = internal_token.encode("utf-8")
        self._lease_slots = threading.Lock()
        self._leases_held = 0

    def activate(self, service: ControllerService | None) -> None:
        """Serve as the active controller ``service``; None: answer as a standby again."""
        previous = self._service if hasattr(self, "_service") else None
        if isinstance(previous, ControllerService) and previous is not service:
            previous.close_leases()  # the streams that end as this controller stops fence nobody
        self._service = service if service is not None else _Standby()

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

    def BrokerLease(self, request: controller_pb2.BrokerLeaseRequest, context: grpc.ServicerContext) -> Iterator[controller_pb2.BrokerLeaseEvent]:
        """Hold the broker's lease stream until its session is replaced or ends (the stream ends
        here), or until the broker's end closes (``ControllerService.lease_lost``, on a thread of
        its own: gRPC stops iterating a stream whose client went away, so the loss is handled from
        the call's termination callback, which always runs)."""
        self._authenticate(context)
        with self._lease_slots:
            full = self._leases_held >= MAX_LEASES
            if not full:
                self._leases_held += 1
        if full:
            # The broker goes on with heartbeats alone (and asks again later): calls keep their threads.
            context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, f"this controller holds {MAX_LEASES} leases already")
        watch = _LeaseWatch(self._service, request.node_id, request.broker_epoch, self._release_lease_slot)
        if not context.add_callback(watch.terminated):
            watch.terminated()  # the call ended already
            return
        try:
            watch.lease = watch.service.open_lease(request.node_id, request.broker_epoch)
        except ControllerFencedError:
            yield controller_pb2.BrokerLeaseEvent(error_code=ErrorCode.NOT_CONTROLLER)
            return
        finally:
            close_old_connections()
        if watch.lease is None:
            yield controller_pb2.BrokerLeaseEvent(error_code=STALE_BROKER_EPOCH, controller_epoch=watch.service.controller_epoch)
            return
        yield controller_pb2.BrokerLeaseEvent(error_code=ErrorCode.NO_ERROR, controller_epoch=watch.service.controller_epoch)
        while not watch.ended.wait(LEASE_CHECK_SECONDS):
            if not watch.service.holds_lease(request.node_id, request.broker_epoch, watch.lease):
                watch.closed_here = True  # replaced or ended here: not a loss
                return

    def _release_lease_slot(self) -> None:
        with self._lease_slots:
            self._leases_held -= 1

    def AlterPartition(self, request: controller_pb2.AlterPartitionRequest, context: grpc.ServicerContext) -> controller_pb2.AlterPartitionResponse:
        try:
            return self._alter_partition(request, context)
        finally:
            close_old_connections()

    def ControlledShutdown(self, request: controller_pb2.ControlledShutdownRequest, context: grpc.ServicerContext) -> controller_pb2.ControlledShutdownResponse:
        try:
            return self._controlled_shutdown(request, context)
        finally:
            close_old_connections()

    def _register(self, request: controller_pb2.RegisterBrokerRequest, context: grpc.ServicerContext) -> controller_pb2.RegisterBrokerResponse:
        self._authenticate(context)
        try:
            registered = self._service.register(request.node_id, request.host, request.port, request.rack, request.kafka_port)
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
            metrics.ALTER_PARTITIONS.labels("NOT_CONTROLLER").inc()
            return controller_pb2.AlterPartitionResponse(error_code=ErrorCode.NOT_CONTROLLER)
        if result.error_code != ErrorCode.NO_ERROR:
            metrics.ALTER_PARTITIONS.labels(error_name(result.error_code)).inc()
        else:
            metrics.ALTER_PARTITIONS.labels("stored" if result.changed else "unchanged").inc()
            if result.changed:
                metrics.PARTITION_CHANGES.labels("alter_partition").inc()
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
        return self._forwarded(
            self._service.create_topics, request, context, lambda message: broker_pb2.CreateTopicsResponse(topics=_not_controller(names, message))
        )

    def DeleteTopics(self, request: controller_pb2.ForwardedDeleteTopicsRequest, context: grpc.ServicerContext) -> broker_pb2.DeleteTopicsResponse:
        names = list(request.request.topics)
        return self._forwarded(
            self._service.delete_topics, request, context, lambda message: broker_pb2.DeleteTopicsResponse(topics=_not_controller(names, message))
        )

    def CreatePartitions(self, request: controller_pb2.ForwardedCreatePartitionsRequest, context: grpc.ServicerContext) -> broker_pb2.CreatePartitionsResponse:
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

    def CreateAcls(self, request: controller_pb2.ForwardedCreateAclsRequest, context: grpc.ServicerContext) -> controller_pb2.CreateAclsResponse:
        def not_controller(message: str) -> controller_pb2.CreateAclsResponse:
            failed = controller_pb2.AclCreationResult(error_code=ErrorCode.NOT_CONTROLLER, error_message=message)
            return controller_pb2.CreateAclsResponse(results=[failed for _ in request.creations])

        return self._forwarded(self._service.create_acls, request, context, not_controller)

    def DescribeAcls(self, request: controller_pb2.ForwardedDescribeAclsRequest, context: grpc.ServicerContext) -> controller_pb2.DescribeAclsResponse:
        return self._forwarded(
            self._service.describe_acls,
            request,
            context,
            lambda message: controller_pb2.DescribeAclsResponse(error_code=ErrorCode.NOT_CONTROLLER, error_message=message),
        )

    def DeleteAcls(self, request: controller_pb2.ForwardedDeleteAclsRequest, context: grpc.ServicerContext) -> controller_pb2.DeleteAclsResponse:
        def not_controller(message: str) -> controller_pb2.DeleteAclsResponse:
            failed = controller_pb2.DeleteAclsFilterResult(error_code=ErrorCode.NOT_CONTROLLER, error_message=message)
            return controller_pb2.DeleteAclsResponse(results=[failed for _ in request.filters])

        return self._forwarded(self._service.delete_acls, request, context, not_controller)

    def AlterUserScramCredentials(
        self, request: controller_pb2.ForwardedAlterUserScramCredentialsRequest, context: grpc.ServicerContext
    ) -> broker_pb2.AlterUserScramCredentialsResponse:
        def not_controller(message: str) -> broker_pb2.AlterUserScramCredentialsResponse:
            users = dict.fromkeys([*(item.user for item in request.request.deletions), *(item.user for item in request.request.upsertions)])
            return broker_pb2.AlterUserScramCredentialsResponse(
                results=[broker_pb2.AlterUserScramCredentialsResult(user=user, error_code=ErrorCode.NOT_CONTROLLER, error_message=message) for user in users]
            )

        return self._forwarded(self._service.alter_user_scram_credentials, request, context, not_controller)

    def ElectLeaders(self, request: controller_pb2.ForwardedElectLeadersRequest, context: grpc.ServicerContext) -> broker_pb2.ElectLeadersResponse:
        def not_controller(message: str) -> broker_pb2.ElectLeadersResponse:
            return broker_pb2.ElectLeadersResponse(error_code=ErrorCode.NOT_CONTROLLER, error_message=message)

        return self._forwarded(self._service.elect_leaders, request, context, not_controller)

    def SchemaSubjects(self, request: controller_pb2.SchemaSubjectsRequest, context: grpc.ServicerContext) -> controller_pb2.SchemaSubjectsResponse:
        """A read of the registry for a broker's schema validation (``schema_lookup``); a standby answers NOT_CONTROLLER."""
        try:
            self._authenticate(context)
            if isinstance(self._service, _Standby):
                return controller_pb2.SchemaSubjectsResponse(error_code=ErrorCode.NOT_CONTROLLER, error_message="this controller is a standby")
            return lookup_schema_subjects(request)
        finally:
            close_old_connections()

    def _forwarded(self, handle: Callable[[Any], Any], request: Any, context: grpc.ServicerContext, not_controller: Callable[[str], Any]) -> Any:
        """Run a forwarded topic request; a superseded controller answers NOT_CONTROLLER for every entry."""
        try:
            self._authenticate(context)
            caller = request.caller
            try:
                # What the handler changes is audited as coming through the broker's door, from the client's address.
                with audit_source(caller.door or Door.SDK, caller.client_host):
                    return handle(request)
            except ControllerFencedError as error:
                return not_controller(str(error))
        finally:
            close_old_connections()


class _LeaseWatch:
    """One lease stream: set up by ``BrokerLease``, ended by gRPC's termination callback."""

    def __init__(self, service: Any, node_id: int, broker_epoch: int, release: Callable[[], None]) -> None:
        self.service = service
        self.node_id = node_id
        self.broker_epoch = broker_epoch
        self.lease: int | None = None
        self.closed_here = False  # the controller ended the stream (the session was replaced or ended)
        self.ended = threading.Event()
        self._release = release

    def terminated(self) -> None:
        """The call ended (on gRPC's thread: nothing slow here)."""
        self.ended.set()
        self._release()
        if self.lease is not None and not self.closed_here:
            threading.Thread(target=self._lost, name=f"lease-lost-{self.node_id}", daemon=True).start()

    def _lost(self) -> None:
        assert self.lease is not None
        try:
            self.service.lease_lost(self.node_id, self.broker_epoch, self.lease)
        except ControllerFencedError:
            pass
        except Exception:
            logger.exception("broker %d: handling its closed lease failed", self.node_id)
        finally:
            close_old_connections()


def _not_controller(names: list[str], message: str) -> list[broker_pb2.TopicResult]:
    return [broker_pb2.TopicResult(name=name, error_code=ErrorCode.NOT_CONTROLLER, error_message=message) for name in names]


# The controller's TLS certificate or key cannot be read (the controller does not start).
ControllerTlsError = PemFileError


class ControllerServer:
    """A listening controller: standby until :meth:`activate`; see the module docstring. Not thread-safe (one owner)."""

    def __init__(self, server: grpc.Server, port: int, servicer: ControllerServicer, health_servicer: health.HealthServicer) -> None:
        self.server = server
        self.port = port
        self._servicer = servicer
        self._health = health_servicer

    def activate(self, service: ControllerService) -> None:
        """Serve as the active controller: calls go to ``service``, "weir.v1.Controller" is SERVING."""
        self._servicer.activate(service)
        metrics.ACTIVE.set(service)
        self._health.set(CONTROLLER_SERVICE_NAME, health_pb2.HealthCheckResponse.SERVING)

    def deactivate(self) -> None:
        """Step down: NOT_SERVING for "weir.v1.Controller", and calls are answered NOT_CONTROLLER."""
        self._health.set(CONTROLLER_SERVICE_NAME, health_pb2.HealthCheckResponse.NOT_SERVING)
        metrics.ACTIVE.set(None)
        self._servicer.activate(None)

    def stop(self, grace_seconds: float | None) -> None:
        """NOT_SERVING for everything, then stop (running calls get ``grace_seconds``, None: none)."""
        self.deactivate()
        self._health.enter_graceful_shutdown()
        self.server.stop(grace_seconds).wait()


def start_controller_server(listen: str, *, internal_token: str | None = None, tls: tuple[Path | str, Path | str] | None = None) -> ControllerServer:
    """Listen on ``listen`` (``HOST:PORT``, port 0 for any) as a standby; activate it with the service once active.

    ``tls`` is (PEM certificate chain, PEM private key): the port then speaks TLS only and
    plaintext callers are refused. Raises ControllerTlsError when either cannot be read.
    """
    credentials = None
    if tls is not None:
        certificate_chain, private_key = (Path(path) for path in tls)
        credentials = grpc.ssl_server_credentials([(read_pem(private_key, what="controller TLS"), read_pem(certificate_chain, what="controller TLS"))])
    # Calls carrying x-weir-request-id (forwarded topic admin) log it with every line (server_runtime.request_ids);
    # every Controller call is counted by method and outcome (metrics).
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=SERVER_THREADS, thread_name_prefix="controller"),
        interceptors=[RequestIdServerInterceptor(), metrics.RequestCounter()],
    )
    servicer = ControllerServicer(None, internal_token or settings.WEIR_INTERNAL_TOKEN)
    controller_pb2_grpc.add_ControllerServicer_to_server(servicer, server)
    health_servicer = health.HealthServicer()
    health_servicer.set("", health_pb2.HealthCheckResponse.SERVING)
    health_servicer.set(CONTROLLER_SERVICE_NAME, health_pb2.HealthCheckResponse.NOT_SERVING)
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    port = server.add_secure_port(listen, credentials) if credentials is not None else server.add_insecure_port(listen)
    if port == 0:
        raise OSError(f"cannot listen on {listen}")
    server.start()
    return ControllerServer(server, port, servicer, health_servicer)


def create_controller_server(
    service: ControllerService, listen: str, *, internal_token: str | None = None, tls: tuple[Path | str, Path | str] | None = None
) -> tuple[ControllerServer, int]:
    """Start serving ``service`` as the active controller on ``listen``; (server, port). See :func:`start_controller_server`.

    Stop it with ``ControllerServer.stop``, which also clears this process's "active" metrics slot."""
    running = start_controller_server(listen, internal_token=internal_token, tls=tls)
    running.activate(service)
    return running, running.port

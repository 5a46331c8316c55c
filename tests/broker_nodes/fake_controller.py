"""A scriptable gRPC Controller for broker-side tests: records every call, answers as told.

The real controller needs the control-plane database; these tests are about what the broker
does with the answers (sessions, epochs, ISR proposals, forwarding), so the answers are set
by the test: ``accept_isr_changes`` False leaves AlterPartition unanswered-by-success
(the controller keeps the ISR it had), ``not_controller`` makes it answer NOT_CONTROLLER.
"""

from __future__ import annotations

import threading
from concurrent import futures

import grpc

from grpc_protos.weir.v1 import broker_pb2, controller_pb2, controller_pb2_grpc
from weir.errors import ErrorCode

TOKEN_HEADER = "x-weir-internal-token"


class FakeController(controller_pb2_grpc.ControllerServicer):
    def __init__(self, token: str, *, controller_epoch: int = 7) -> None:
        self.token = token
        self.controller_epoch = controller_epoch
        self.lock = threading.Lock()
        self.registrations: list[controller_pb2.RegisterBrokerRequest] = []
        self.heartbeats: list[controller_pb2.BrokerHeartbeatRequest] = []
        self.alter_partitions: list[controller_pb2.AlterPartitionRequest] = []
        self.controlled_shutdowns: list[controller_pb2.ControlledShutdownRequest] = []
        self.created: list[controller_pb2.ForwardedCreateTopicsRequest] = []
        self.epochs: dict[int, int] = {}
        self.next_epoch = 100
        self.accept_isr_changes = True
        self.not_controller = False
        self.fence_node: int | None = None  # the next heartbeat of this node is answered as fenced
        self.server: grpc.Server | None = None
        self.port = 0

    def start(self) -> FakeController:
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
        controller_pb2_grpc.add_ControllerServicer_to_server(self, self.server)
        self.port = self.server.add_insecure_port("127.0.0.1:0")
        self.server.start()
        return self

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop(None)

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def _check(self, context: grpc.ServicerContext) -> None:
        if dict(context.invocation_metadata()).get(TOKEN_HEADER) != self.token:
            context.abort(grpc.StatusCode.UNAUTHENTICATED, "token")

    def RegisterBroker(self, request, context):  # type: ignore[no-untyped-def]
        self._check(context)
        with self.lock:
            if self.not_controller:
                return controller_pb2.RegisterBrokerResponse(error_code=ErrorCode.NOT_CONTROLLER)
            self.registrations.append(request)
            self.next_epoch += 1
            self.epochs[request.node_id] = self.next_epoch
            return controller_pb2.RegisterBrokerResponse(broker_epoch=self.next_epoch, session_timeout_ms=9000, controller_epoch=self.controller_epoch)

    def BrokerHeartbeat(self, request, context):  # type: ignore[no-untyped-def]
        self._check(context)
        with self.lock:
            if self.not_controller:
                return controller_pb2.BrokerHeartbeatResponse(error_code=ErrorCode.NOT_CONTROLLER)
            self.heartbeats.append(request)
            if self.fence_node == request.node_id or self.epochs.get(request.node_id) != request.broker_epoch:
                self.fence_node = None
                self.epochs.pop(request.node_id, None)
                return controller_pb2.BrokerHeartbeatResponse(error_code=ErrorCode.STALE_BROKER_EPOCH, fenced=True, controller_epoch=self.controller_epoch)
            return controller_pb2.BrokerHeartbeatResponse(controller_epoch=self.controller_epoch)

    def AlterPartition(self, request, context):  # type: ignore[no-untyped-def]
        self._check(context)
        with self.lock:
            self.alter_partitions.append(request)
            if not self.accept_isr_changes:
                return controller_pb2.AlterPartitionResponse(error_code=ErrorCode.NOT_CONTROLLER)
            return controller_pb2.AlterPartitionResponse(isr=list(request.new_isr), leader_id=request.leader_id, leader_epoch=request.leader_epoch)

    def ControlledShutdown(self, request, context):  # type: ignore[no-untyped-def]
        self._check(context)
        with self.lock:
            self.controlled_shutdowns.append(request)
        return controller_pb2.ControlledShutdownResponse()

    def CreateTopics(self, request, context):  # type: ignore[no-untyped-def]
        self._check(context)
        with self.lock:
            self.created.append(request)
        return broker_pb2.CreateTopicsResponse(
            topics=[
                broker_pb2.TopicResult(
                    name=topic.name, topic_id="00000000-0000-0000-0000-000000000001", num_partitions=topic.num_partitions, replication_factor=3
                )
                for topic in request.request.topics
            ]
        )

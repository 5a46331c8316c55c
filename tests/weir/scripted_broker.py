"""A Broker gRPC service on 127.0.0.1 whose answers a test scripts, for SDK routing and retry tests.

Each call is recorded (method name and request) and answered by the function the test put in
``answers[method]``: it returns the response, or a ``grpc.StatusCode`` to fail the call with
(UNAVAILABLE stands for a broker that died mid-request). A method without an answer aborts
with UNIMPLEMENTED. Answers run on the server's threads; ``called`` reads the record safely.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent import futures
from typing import Any

import grpc

from grpc_protos.weir.v1 import broker_pb2, broker_pb2_grpc

Answer = Callable[[Any], Any]


class ScriptedBroker(broker_pb2_grpc.BrokerServicer):
    """One scripted broker: ``start()``, set ``answers``, read ``calls``, ``stop()``."""

    def __init__(self, node_id: int) -> None:
        self.node_id = node_id
        self.answers: dict[str, Answer] = {}
        self.calls: list[tuple[str, Any]] = []
        self._lock = threading.Lock()
        self._server: grpc.Server | None = None
        self.port = -1

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> ScriptedBroker:
        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        broker_pb2_grpc.add_BrokerServicer_to_server(self, self._server)
        self.port = self._server.add_insecure_port("127.0.0.1:0")
        self._server.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop(grace=None).wait(5)
            self._server = None

    def called(self, method: str) -> list[Any]:
        """The requests of ``method`` received so far."""
        with self._lock:
            return [request for name, request in self.calls if name == method]

    def _answer(self, method: str, request: Any, context: grpc.ServicerContext) -> Any:
        with self._lock:
            self.calls.append((method, request))
            answer = self.answers.get(method)
        if answer is None:
            context.abort(grpc.StatusCode.UNIMPLEMENTED, f"{method} is not scripted")
        response = answer(request)
        if isinstance(response, grpc.StatusCode):
            context.abort(response, f"{method}: scripted failure")
        return response

    def Metadata(self, request, context):  # type: ignore[no-untyped-def]
        return self._answer("Metadata", request, context)

    def FindCoordinator(self, request, context):  # type: ignore[no-untyped-def]
        return self._answer("FindCoordinator", request, context)

    def OffsetCommit(self, request, context):  # type: ignore[no-untyped-def]
        return self._answer("OffsetCommit", request, context)

    def OffsetFetch(self, request, context):  # type: ignore[no-untyped-def]
        return self._answer("OffsetFetch", request, context)

    def Produce(self, request, context):  # type: ignore[no-untyped-def]
        return self._answer("Produce", request, context)

    def InitProducerId(self, request, context):  # type: ignore[no-untyped-def]
        return self._answer("InitProducerId", request, context)

    def Fetch(self, request, context):  # type: ignore[no-untyped-def]
        return self._answer("Fetch", request, context)

    def ListOffsets(self, request, context):  # type: ignore[no-untyped-def]
        return self._answer("ListOffsets", request, context)

    def CreateTopics(self, request, context):  # type: ignore[no-untyped-def]
        return self._answer("CreateTopics", request, context)


def metadata(
    brokers: list[ScriptedBroker], topics: dict[str, list[tuple[int, int]]] | None = None, *, topic_id: str = "topic-id-1"
) -> broker_pb2.MetadataResponse:
    """A Metadata answer listing ``brokers`` and ``topics``: {name: [(leader node id, leader epoch) per partition]}."""
    return broker_pb2.MetadataResponse(
        cluster_id="scripted",
        controller_id=-1,
        brokers=[broker_pb2.BrokerNode(node_id=broker.node_id, host="127.0.0.1", port=broker.port) for broker in brokers],
        topics=[
            broker_pb2.TopicMetadata(
                name=name,
                topic_id=topic_id,
                partitions=[
                    broker_pb2.PartitionMetadata(partition=index, leader_id=leader, leader_epoch=epoch, replicas=[leader], isr=[leader])
                    for index, (leader, epoch) in enumerate(partitions)
                ],
            )
            for name, partitions in (topics or {}).items()
        ],
    )


def coordinator_at(broker: ScriptedBroker | None, group_id: str, error_code: int = 0) -> broker_pb2.FindCoordinatorResponse:
    """A FindCoordinator answer naming ``broker`` (None: no coordinator, with ``error_code``)."""
    if broker is None:
        return broker_pb2.FindCoordinatorResponse(coordinators=[broker_pb2.Coordinator(group_id=group_id, node_id=-1, host="", port=-1, error_code=error_code)])
    return broker_pb2.FindCoordinatorResponse(
        coordinators=[broker_pb2.Coordinator(group_id=group_id, node_id=broker.node_id, host="127.0.0.1", port=broker.port)]
    )


def committed(error_code: int = 0, *, topic: str = "orders", partition: int = 0) -> broker_pb2.OffsetCommitResponse:
    """An OffsetCommit answer for one partition (``error_code`` 0: committed)."""
    return broker_pb2.OffsetCommitResponse(
        topics=[
            broker_pb2.OffsetCommitTopicResponse(topic=topic, partitions=[broker_pb2.OffsetCommitPartitionResponse(partition=partition, error_code=error_code)])
        ]
    )

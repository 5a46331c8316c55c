"""The interceptors on the data path build their wrapping handler once per method, not per call,
and still measure and admit every call; and the caller's address is filled in field for field."""

from __future__ import annotations

import dataclasses
from typing import Any

import grpc
from prometheus_client import CollectorRegistry

from broker_nodes.metrics.requests import MetricsInterceptor, RequestMetrics
from broker_nodes.security.access import CallContext, CallerKind
from broker_nodes.security.authorizer import AclEntry, Operation, PatternType, Permission, ResourceType
from broker_nodes.server.admission import RequestBudgetInterceptor
from broker_nodes.server.request_budget import RequestBudget
from grpc_protos.weir.v1 import broker_pb2, replication_pb2

PRODUCE = "/weir.v1.Broker/Produce"


class Details:
    def __init__(self, method: str) -> None:
        self.method = method
        self.invocation_metadata = ()


class Context:
    def code(self) -> None:
        return None


def registered(answer: Any) -> grpc.RpcMethodHandler:
    return grpc.unary_unary_rpc_method_handler(
        lambda request, context: answer,
        request_deserializer=broker_pb2.ProduceRequest.FromString,
        response_serializer=broker_pb2.ProduceResponse.SerializeToString,
    )


def test_the_metrics_interceptor_hands_out_one_measuring_handler_per_registered_handler() -> None:
    registry = CollectorRegistry()
    interceptor = MetricsInterceptor(RequestMetrics(registry))
    first, second = registered(broker_pb2.ProduceResponse()), registered(broker_pb2.ProduceResponse())
    handlers = [interceptor.intercept_service(lambda details: first, Details(PRODUCE)) for _ in range(3)]
    assert handlers[0] is handlers[1] is handlers[2]
    assert handlers[0] is not first
    # Another inner handler (a request id wrapper, a refusal) gets its own measuring handler.
    other = interceptor.intercept_service(lambda details: second, Details(PRODUCE))
    assert other is not handlers[0]
    for handler in (*handlers, other):
        assert handler is not None
        handler.unary_unary(broker_pb2.ProduceRequest(), Context())
    assert registry.get_sample_value("weir_broker_requests_total", {"service": "weir.v1.Broker", "method": "Produce", "code": "OK"}) == 4
    assert registry.get_sample_value("weir_broker_request_duration_seconds_count", {"service": "weir.v1.Broker", "method": "Produce"}) == 4


def test_each_fetch_on_a_replica_fetch_stream_is_counted_as_a_replica_fetch_call_with_its_bytes() -> None:
    registry = CollectorRegistry()
    interceptor = MetricsInterceptor(RequestMetrics(registry))

    def answer_each(requests: Any, context: Any) -> Any:
        for request in requests:
            yield replication_pb2.ReplicaFetchResponse(partitions=[replication_pb2.ReplicaFetchPartitionResponse(records=b"x" * request.max_bytes)])

    stream = grpc.stream_stream_rpc_method_handler(answer_each)
    handler = interceptor.intercept_service(lambda details: stream, Details("/weir.v1.Replication/ReplicaFetchStream"))
    assert handler is not None and handler is not stream
    assert handler is interceptor.intercept_service(lambda details: stream, Details("/weir.v1.Replication/ReplicaFetchStream"))
    answers = list(handler.stream_stream(iter([replication_pb2.ReplicaFetchRequest(max_bytes=size) for size in (3, 4)]), Context()))
    assert [len(answer.partitions[0].records) for answer in answers] == [3, 4]
    labels = {"service": "weir.v1.Replication", "method": "ReplicaFetch"}
    assert registry.get_sample_value("weir_broker_requests_total", {**labels, "code": "OK"}) == 2
    assert registry.get_sample_value("weir_broker_request_duration_seconds_count", labels) == 2
    assert registry.get_sample_value("weir_broker_replication_bytes_out_total") == 7


def test_the_budget_interceptor_hands_out_one_admitting_handler_per_registered_handler() -> None:
    budget = RequestBudget(1000, max_wait_seconds=0.0, max_waiters=0)
    interceptor = RequestBudgetInterceptor(budget)
    inner = registered(broker_pb2.ProduceResponse(throttle_time_ms=7))
    handlers = [interceptor.intercept_service(lambda details: inner, Details(PRODUCE)) for _ in range(2)]
    assert handlers[0] is handlers[1]
    handler = handlers[0]
    assert handler is not None and handler.request_deserializer is not None and handler.unary_unary is not None
    request = handler.request_deserializer(broker_pb2.ProduceRequest(acks=1).SerializeToString())
    assert handler.unary_unary(request, Context()).throttle_time_ms == 7
    assert budget.state().in_use == 0  # taken while the handler ran, given back after


def test_with_client_host_changes_the_address_and_keeps_every_other_field() -> None:
    acl = AclEntry("User:sa-1", ResourceType.TOPIC, "orders", PatternType.LITERAL, Operation.WRITE, Permission.ALLOW)
    call = CallContext("tn-1", "User:sa-1", "", CallerKind.CLIENT, (acl,), door="sdk", api_key="KEY1", cluster_admin=True, scram_user="")
    assert call.with_client_host("10.0.0.7") == dataclasses.replace(call, client_host="10.0.0.7")
    assert [field.name for field in dataclasses.fields(CallContext)] == [
        "tenant_id",
        "principal",
        "client_host",
        "kind",
        "acls",
        "door",
        "api_key",
        "cluster_admin",
        "scram_user",
    ], "a new CallContext field must be copied by with_client_host too"


def test_a_replica_fetch_answer_counts_the_record_bytes_its_handler_noted_and_a_stale_note_never_counts() -> None:
    """The replication servicer notes the size of the records it answers with (reading the field back would copy
    them); a note left by an exchange that was never accounted does not count for the next one."""
    from broker_nodes.metrics import record_bytes

    registry = CollectorRegistry()
    interceptor = MetricsInterceptor(RequestMetrics(registry))

    def answer_each(requests: Any, context: Any) -> Any:
        for request in requests:
            answer = replication_pb2.ReplicaFetchResponse(partitions=[replication_pb2.ReplicaFetchPartitionResponse(records=b"x" * request.max_bytes)])
            if request.max_bytes != 4:  # the answer of 4 bytes is not noted: the message is read instead
                record_bytes.note(request.max_bytes * 10)  # noted by the handler: what counts (10x, to tell it apart)
            yield answer

    stream = grpc.stream_stream_rpc_method_handler(answer_each)
    handler = interceptor.intercept_service(lambda details: stream, Details("/weir.v1.Replication/ReplicaFetchStream"))
    record_bytes.note(1000)  # left over on this thread by an exchange never accounted
    list(handler.stream_stream(iter([replication_pb2.ReplicaFetchRequest(max_bytes=size) for size in (3, 4)]), Context()))
    assert registry.get_sample_value("weir_broker_replication_bytes_out_total") == 30 + 4

"""ProduceStream: Produce requests on one stream, appended and answered in the order sent; a
broker serving as many streams as a quarter of its num.io.threads refuses one more with the trailer
that sends the client to unary Produce (weir.produce_streams); each request on a stream holds
its size in the request budget until its answer."""

from __future__ import annotations

import queue
from collections.abc import Iterator

import grpc
import pytest

from broker_nodes.server.admission import RequestBudgetInterceptor
from broker_nodes.server.request_budget import RequestBudget
from grpc_protos.weir.v1 import broker_pb2
from tests.broker_nodes.server.helpers import batch, create_topic
from weir.cluster import ERROR_CODE_TRAILER
from weir.errors import ErrorCode
from weir.produce_streams import STREAM_REFUSED_TRAILER

WAIT_SECONDS = 10.0


def _request(topic: str, value: bytes) -> broker_pb2.ProduceRequest:
    data = broker_pb2.ProducePartitionData(partition=0, records=batch([value]))
    return broker_pb2.ProduceRequest(acks=1, timeout_ms=1000, topics=[broker_pb2.ProduceTopicData(topic=topic, partitions=[data])])


class OpenStream:
    """One ProduceStream whose requests the test sends one by one."""

    def __init__(self, stub) -> None:  # type: ignore[no-untyped-def]
        self._outgoing: queue.SimpleQueue[broker_pb2.ProduceRequest | None] = queue.SimpleQueue()
        self.responses = stub.ProduceStream(self._requests())

    def _requests(self) -> Iterator[broker_pb2.ProduceRequest]:
        while (request := self._outgoing.get()) is not None:
            yield request

    def exchange(self, request: broker_pb2.ProduceRequest) -> broker_pb2.ProducePartitionResponse:
        self._outgoing.put(request)
        response: broker_pb2.ProduceResponse = next(self.responses)
        return response.topics[0].partitions[0]

    def close(self) -> None:
        self._outgoing.put(None)
        self.responses.cancel()


def test_requests_on_a_produce_stream_are_appended_and_answered_in_the_order_sent(server, stub) -> None:
    create_topic(stub, "orders")
    stream = OpenStream(stub)
    try:
        answers = [stream.exchange(_request("orders", value)) for value in (b"a", b"b", b"c")]
    finally:
        stream.close()
    assert [(answer.error_code, answer.base_offset) for answer in answers] == [(0, 0), (0, 1), (0, 2)]


def test_a_broker_refuses_streams_beyond_a_quarter_of_its_io_threads_with_the_trailer(broker_server_factory) -> None:
    broker = broker_server_factory(num_io_threads="2")  # one stream at a time
    create_topic(broker.stub, "orders")
    first = OpenStream(broker.stub)
    try:
        assert first.exchange(_request("orders", b"a")).error_code == 0
        second = OpenStream(broker.stub)
        with pytest.raises(grpc.RpcError) as refused:
            second.exchange(_request("orders", b"b"))
        assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED  # type: ignore[attr-defined]
        assert any(key == STREAM_REFUSED_TRAILER for key, _ in refused.value.trailing_metadata())  # type: ignore[attr-defined]
        second.close()
    finally:
        first.close()


class _Details:
    def __init__(self, method: str) -> None:
        self.method = method
        self.invocation_metadata = ()


def test_each_request_on_a_produce_stream_holds_its_size_in_the_request_budget_until_its_answer() -> None:
    budget = RequestBudget(1000, max_wait_seconds=0.0, max_waiters=0)
    interceptor = RequestBudgetInterceptor(budget)
    in_use: list[int] = []

    def answer_each(requests: Iterator[broker_pb2.ProduceRequest], context: object) -> Iterator[broker_pb2.ProduceResponse]:
        for request in requests:
            in_use.append(budget.state().in_use)
            yield broker_pb2.ProduceResponse(throttle_time_ms=request.acks)

    stream = grpc.stream_stream_rpc_method_handler(
        answer_each, request_deserializer=broker_pb2.ProduceRequest.FromString, response_serializer=broker_pb2.ProduceResponse.SerializeToString
    )
    handler = interceptor.intercept_service(lambda details: stream, _Details("/weir.v1.Broker/ProduceStream"))
    assert handler is not None and handler is not stream and handler.stream_stream is not None and handler.request_deserializer is not None
    raw = [broker_pb2.ProduceRequest(acks=acks, timeout_ms=1000).SerializeToString() for acks in (1, -1)]
    answers = list(handler.stream_stream(iter([handler.request_deserializer(data) for data in raw]), object()))
    assert [answer.throttle_time_ms for answer in answers] == [1, -1]
    assert in_use == [len(raw[0]), len(raw[1])]  # one request held at a time, each its own size
    assert budget.state().in_use == 0


class _AbortingContext:
    """What a refusal sets on a real ServicerContext: trailers, then abort (which raises)."""

    def __init__(self) -> None:
        self.trailers: tuple[tuple[str, str], ...] = ()
        self.aborted: tuple[grpc.StatusCode, str] | None = None

    def set_trailing_metadata(self, trailers: tuple[tuple[str, str], ...]) -> None:
        self.trailers = trailers

    def abort(self, code: grpc.StatusCode, details: str) -> None:
        self.aborted = (code, details)
        raise RuntimeError("aborted")


def test_a_request_finding_no_room_ends_the_stream_resource_exhausted_outside_the_handler() -> None:
    budget = RequestBudget(1000, max_wait_seconds=0.0, max_waiters=0)
    interceptor = RequestBudgetInterceptor(budget)
    seen: list[int] = []
    others: list[int] = []
    handler_errors: list[BaseException] = []

    def answer_each(requests: Iterator[broker_pb2.ProduceRequest], context: object) -> Iterator[broker_pb2.ProduceResponse]:
        # Like the servicer: any exception out of the requests would be its "unexpected" error.
        try:
            for request in requests:
                seen.append(request.acks)
                if not others:  # another client's request takes the rest of the budget meanwhile
                    others.append(budget.acquire(1000 - budget.state().in_use))
                yield broker_pb2.ProduceResponse(throttle_time_ms=request.acks)
        except Exception as error:
            handler_errors.append(error)
            raise

    stream = grpc.stream_stream_rpc_method_handler(
        answer_each, request_deserializer=broker_pb2.ProduceRequest.FromString, response_serializer=broker_pb2.ProduceResponse.SerializeToString
    )
    handler = interceptor.intercept_service(lambda details: stream, _Details("/weir.v1.Broker/ProduceStream"))
    assert handler is not None and handler.stream_stream is not None and handler.request_deserializer is not None
    first = broker_pb2.ProduceRequest(acks=1).SerializeToString()
    second = broker_pb2.ProduceRequest(acks=-1, transactional_id="x" * 50).SerializeToString()  # more than the first gives back
    context = _AbortingContext()
    answers: list[broker_pb2.ProduceResponse] = []
    with pytest.raises(RuntimeError, match="aborted"):
        for answer in handler.stream_stream(iter([handler.request_deserializer(first), handler.request_deserializer(second)]), context):
            answers.append(answer)
    assert [answer.throttle_time_ms for answer in answers] == [1]
    assert seen == [1] and handler_errors == []
    assert context.aborted is not None and context.aborted[0] == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert context.trailers == ((ERROR_CODE_TRAILER, str(int(ErrorCode.THROTTLING_QUOTA_EXCEEDED))),)
    budget.release(others.pop())
    assert budget.state().in_use == 0

"""Request metrics of a broker, counted by a gRPC server interceptor around every call.

Per call: ``weir_broker_requests_total{service, method, code}`` (the gRPC status code name:
OK, UNAVAILABLE, ...) and ``weir_broker_request_duration_seconds{service, method}`` (the
time in the handler, long-polling fetches and acks=all waits included, which is what a
client sees of the broker). Produce, Fetch and ReplicaFetch also count their record bytes,
the Kafka error code of every partition answered with one, and the time their responses
were held back for a tenant over its quota (``throttle_time_ms`` of the response). The
fetches a follower sends on ``ReplicaFetchStream`` count as ReplicaFetch calls, and the requests
a producer sends on ``ProduceStream`` as Produce calls, and a consumer's on ``FetchStream`` as
Fetch calls, one per answer (the time from the request's arrival to its answer).

The interceptor reads requests and responses only; it never changes a call. Record bytes are
counted from what the servicers noted (:mod:`broker_nodes.metrics.record_bytes`) where they did:
reading a bytes field of a message copies it. Methods of the
services are fixed by the protos, so the label values are bounded; unknown methods (answered
UNIMPLEMENTED by gRPC itself) are not counted.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import grpc
from prometheus_client import CollectorRegistry, Counter, Histogram

from broker_nodes.metrics import record_bytes
from weir.errors import error_name

# Seconds: sub-millisecond metadata calls up to long polls capped by max.wait and acks=all
# waits capped by request.timeout.ms.
LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
PRODUCE = "/weir.v1.Broker/Produce"
FETCH = "/weir.v1.Broker/Fetch"
REPLICA_FETCH = "/weir.v1.Replication/ReplicaFetch"
# Streams of requests answered one by one: each request counts as a call of the unary method named.
MEASURED_STREAMS = {
    "/weir.v1.Replication/ReplicaFetchStream": REPLICA_FETCH,
    "/weir.v1.Broker/ProduceStream": PRODUCE,
    "/weir.v1.Broker/FetchStream": FETCH,
}


class RequestMetrics:
    """The request counters and histograms of one broker, registered in ``registry``. Thread-safe."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.requests = Counter(
            "weir_broker_requests", "gRPC calls answered, by service, method and gRPC status code.", ["service", "method", "code"], registry=registry
        )
        self.duration = Histogram(
            "weir_broker_request_duration_seconds",
            "Time from a call's arrival in its handler to its answer (long polls and acks=all waits included).",
            ["service", "method"],
            buckets=LATENCY_BUCKETS,
            registry=registry,
        )
        self.bytes_in = Counter("weir_broker_bytes_in", "Record bytes received in Produce requests (before authorization).", registry=registry)
        self.bytes_out = Counter("weir_broker_bytes_out", "Record bytes sent to consumers in Fetch responses.", registry=registry)
        self.replication_bytes_out = Counter(
            "weir_broker_replication_bytes_out", "Record bytes sent to follower brokers in ReplicaFetch responses.", registry=registry
        )
        self.partition_errors = Counter(
            "weir_broker_partition_errors", "Partitions answered with a Kafka error code, by method and error name.", ["method", "error"], registry=registry
        )
        self.throttle_time = Counter(
            "weir_broker_throttle_time_seconds",
            "Time Produce and Fetch responses were delayed for tenants over their byte-rate quota.",
            ["method"],
            registry=registry,
        )
        self.throttled_responses = Counter(
            "weir_broker_throttled_responses", "Produce and Fetch responses delayed for a tenant over its byte-rate quota.", ["method"], registry=registry
        )


def _split_method(full_method: str) -> tuple[str, str]:
    """``/weir.v1.Broker/Produce`` -> (``weir.v1.Broker``, ``Produce``)."""
    service, _, method = full_method.lstrip("/").partition("/")
    return service, method


class _MethodMeter:
    """The label children of one method, bound once (``labels()`` per call is needlessly slow).

    ``answered(code)`` is the call counter of one status code, bound at its first use (the
    codes are gRPC's, a bounded set). Thread-safe: a lost race binds the same child twice.
    """

    __slots__ = ("service", "method", "duration", "account", "_requests", "_answered")

    def __init__(self, requests: Counter, service: str, method: str, duration: Any, account: Callable[[object, object], None]) -> None:
        self.service = service
        self.method = method
        self.duration = duration
        self.account = account
        self._requests = requests
        self._answered: dict[str, Any] = {}

    def answered(self, code: str) -> Any:
        counter = self._answered.get(code)
        if counter is None:
            counter = self._answered[code] = self._requests.labels(self.service, self.method, code)
        return counter


class MetricsInterceptor(grpc.ServerInterceptor):
    """Counts every unary call of the server it is installed in. ``clock`` returns seconds.

    The measuring handler of a method is built once and handed out again while the handler it
    wraps is the same object (the service's registered handler, as the interceptors inside
    pass it through on the data path): building handlers per call cost a few microseconds of
    every Produce and Fetch.
    """

    def __init__(self, metrics: RequestMetrics, *, clock: Callable[[], float] = time.perf_counter) -> None:
        self._metrics = metrics
        self._clock = clock
        self._meters: dict[str, _MethodMeter] = {}
        # method -> (the handler wrapped, its measuring handler)
        self._measured: dict[str, tuple[grpc.RpcMethodHandler, grpc.RpcMethodHandler]] = {}
        self._lock = threading.Lock()

    def intercept_service(
        self, continuation: Callable[[grpc.HandlerCallDetails], grpc.RpcMethodHandler | None], handler_call_details: grpc.HandlerCallDetails
    ) -> grpc.RpcMethodHandler | None:
        handler = continuation(handler_call_details)
        if handler is not None and handler.unary_unary is None and handler.stream_unary is not None:
            # A call refused before its message was read (server.admission) is still counted.
            return self._counted_refusal(handler, handler.stream_unary, self._meter(handler_call_details.method))
        method: str = handler_call_details.method
        if handler is not None and handler.stream_stream is not None and method in MEASURED_STREAMS:
            cached = self._measured.get(method)
            if cached is not None and cached[0] is handler:
                return cached[1]
            measuring = self._measuring_stream(handler, handler.stream_stream, self._meter(MEASURED_STREAMS[method]))
            self._measured[method] = (handler, measuring)
            return measuring
        if handler is None or handler.unary_unary is None:
            return handler
        cached = self._measured.get(method)
        if cached is not None and cached[0] is handler:
            return cached[1]
        measuring = self._measuring(handler, handler.unary_unary, self._meter(method))
        self._measured[method] = (handler, measuring)
        return measuring

    def _measuring(self, handler: grpc.RpcMethodHandler, inner: Callable[[Any, grpc.ServicerContext], object], meter: _MethodMeter) -> grpc.RpcMethodHandler:
        """``handler`` with its unary behaviour ``inner`` wrapped to time and count each call."""
        clock = self._clock

        def measured(request: object, context: grpc.ServicerContext) -> object:
            started = clock()
            code = "UNKNOWN"
            record_bytes.clear()
            try:
                response = inner(request, context)
                code = _code_name(context) or "OK"
                meter.account(request, response)
                return response
            except Exception:
                # context.abort raises after setting the status; anything else is UNKNOWN.
                code = _code_name(context) or "UNKNOWN"
                raise
            finally:
                meter.duration.observe(clock() - started)
                meter.answered(code).inc()

        return grpc.unary_unary_rpc_method_handler(measured, request_deserializer=handler.request_deserializer, response_serializer=handler.response_serializer)

    def _measuring_stream(
        self, handler: grpc.RpcMethodHandler, inner: Callable[[Iterator[Any], grpc.ServicerContext], Iterator[Any]], meter: _MethodMeter
    ) -> grpc.RpcMethodHandler:
        """``handler`` with its one-answer-per-request stream behaviour ``inner`` wrapped to time and count each exchange as a call."""
        clock = self._clock

        def measured(requests: Iterator[Any], context: grpc.ServicerContext) -> Iterator[Any]:
            latest: list[Any] = [None, 0.0]  # the request being answered and when it arrived
            record_bytes.clear()

            def received() -> Iterator[Any]:
                for request in requests:
                    latest[0], latest[1] = request, clock()
                    yield request

            try:
                for response in inner(received(), context):
                    meter.account(latest[0], response)
                    meter.duration.observe(clock() - latest[1])
                    meter.answered("OK").inc()
                    yield response
            except Exception:
                meter.answered(_code_name(context) or "UNKNOWN").inc()  # the exchange the stream ended on
                raise

        return grpc.stream_stream_rpc_method_handler(
            measured, request_deserializer=handler.request_deserializer, response_serializer=handler.response_serializer
        )

    def _counted_refusal(
        self, handler: grpc.RpcMethodHandler, inner: Callable[[Iterator[Any], grpc.ServicerContext], object], meter: _MethodMeter
    ) -> grpc.RpcMethodHandler:
        """``handler`` with its stream-unary behaviour ``inner`` wrapped to count the call."""

        def counted(requests: Iterator[Any], context: grpc.ServicerContext) -> object:
            try:
                return inner(requests, context)
            finally:
                meter.answered(_code_name(context) or "UNKNOWN").inc()

        return grpc.stream_unary_rpc_method_handler(counted, request_deserializer=handler.request_deserializer, response_serializer=handler.response_serializer)

    def _meter(self, full_method: str) -> _MethodMeter:
        meter = self._meters.get(full_method)
        if meter is None:
            with self._lock:
                meter = self._meters.get(full_method)
                if meter is None:
                    service, method = _split_method(full_method)
                    meter = _MethodMeter(
                        self._metrics.requests, service, method, self._metrics.duration.labels(service, method), _accounting(self._metrics, full_method, method)
                    )
                    self._meters[full_method] = meter
        return meter


def _code_name(context: grpc.ServicerContext) -> str | None:
    code = context.code()  # type: ignore[attr-defined]  # grpc-stubs lacks ServicerContext.code(), which grpcio has had since 1.38
    if code is None:
        return None
    return code.name if isinstance(code, grpc.StatusCode) else str(code)


def _accounting(metrics: RequestMetrics, full_method: str, method: str) -> Callable[[object, object], None]:
    """What a successful answer of ``full_method`` adds besides the call count."""
    if full_method == PRODUCE:

        def produce(request: Any, response: Any) -> None:
            noted = record_bytes.take()  # the servicer notes what it received: reading the field copies it
            metrics.bytes_in.inc(sum(len(partition.records) for topic in request.topics for partition in topic.partitions) if noted is None else noted)
            _count_partition_errors(metrics, method, (partition for topic in response.topics for partition in topic.partitions))
            _count_throttle(metrics, method, response.throttle_time_ms)

        return produce
    if full_method == FETCH:

        def fetch(request: Any, response: Any) -> None:
            partitions = [partition for topic in response.topics for partition in topic.partitions]
            noted = record_bytes.take()  # the servicer notes what it answers with: reading the field copies it
            metrics.bytes_out.inc(sum(len(partition.records) for partition in partitions) if noted is None else noted)
            _count_partition_errors(metrics, method, partitions)
            _count_throttle(metrics, method, response.throttle_time_ms)

        return fetch
    if full_method == REPLICA_FETCH:

        def replica_fetch(request: Any, response: Any) -> None:
            noted = record_bytes.take()  # the replication servicer notes what it answers with: reading the field copies it
            metrics.replication_bytes_out.inc(sum(len(partition.records) for partition in response.partitions) if noted is None else noted)
            _count_partition_errors(metrics, method, response.partitions)

        return replica_fetch
    return lambda request, response: None


def _count_partition_errors(metrics: RequestMetrics, method: str, partitions: Any) -> None:
    for partition in partitions:
        if partition.error_code:
            metrics.partition_errors.labels(method, error_name(partition.error_code)).inc()


def _count_throttle(metrics: RequestMetrics, method: str, throttle_time_ms: int) -> None:
    if throttle_time_ms > 0:
        metrics.throttle_time.labels(method).inc(throttle_time_ms / 1000.0)
        metrics.throttled_responses.labels(method).inc()

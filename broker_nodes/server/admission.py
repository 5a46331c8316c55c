"""What a call must pass before its handler runs: credentials first, then room in the request budget.

Two gRPC server interceptors, installed by ``server.app``:

- :class:`AuthenticationInterceptor` authenticates every ``Broker`` call from its metadata as
  the call arrives, before its request message is read (gRPC calls interceptors with the
  method and metadata only). A call without valid credentials is answered UNAUTHENTICATED
  (UNAVAILABLE while no credentials have arrived from the control plane) by a handler that
  never reads the message, so an unauthenticated caller cannot make the broker buffer its
  request. The resulting :class:`CallContext` is handed to the servicer through a context
  variable (:func:`current_call`): gRPC runs interceptors and the handler of one call in the
  same ``contextvars.Context``, one per call, so the call is authenticated once. Calls to
  the internal services (``Admin``, ``Replication``) without the internal token header are
  refused the same way; the services still check the token themselves.
- :class:`RequestBudgetInterceptor` makes every ``Broker`` request take its size from the
  broker's :class:`RequestBudget` before its handler runs and give it back when the handler
  ends. The size is known as soon as the message is: gRPC hands the raw bytes to the request
  deserializer, which parses them as before and notes their length. A request that finds no
  room in time is answered RESOURCE_EXHAUSTED with the Kafka error code
  THROTTLING_QUOTA_EXCEEDED in the trailing metadata (``weir.cluster.ERROR_CODE_TRAILER``),
  which the SDK retries, unlike a message over the size limit (MESSAGE_TOO_LARGE). The
  requests on a ``ProduceStream`` or a ``FetchStream`` take their size from the budget one by one,
  each until its answer: a request that finds no room ends the stream the same way.

gRPC's peer address is not available to interceptors, so the interceptor authenticates with
no peer and the servicer fills in the client's address (``CallContext.client_host``, which
ACLs with a host match) from the call's context.
"""

from __future__ import annotations

import contextvars
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import grpc

from broker_nodes.security.access import CallContext
from broker_nodes.security.authenticator import INTERNAL_TOKEN_HEADER, AuthenticationError, Authenticator, CredentialsUnavailableError
from broker_nodes.server.errors import grpc_status
from broker_nodes.server.request_budget import RequestBudget, RequestBudgetExhaustedError
from grpc_protos.weir.v1 import admin_pb2, broker_pb2, replication_pb2
from weir.cluster import ERROR_CODE_TRAILER
from weir.errors import ErrorCode
from weir.tenant_tokens import TENANT_TOKEN_HEADER

logger = logging.getLogger(__name__)

# "/weir.v1.Broker/" and friends: the prefix of every method of a service.
BROKER_METHOD_PREFIX = f"/{broker_pb2.DESCRIPTOR.services_by_name['Broker'].full_name}/"
INTERNAL_METHOD_PREFIXES = (
    f"/{admin_pb2.DESCRIPTOR.services_by_name['Admin'].full_name}/",
    f"/{replication_pb2.DESCRIPTOR.services_by_name['Replication'].full_name}/",
)

# The one Admin method a tenant token may call (the web process reading its tenant's partitions).
DESCRIBE_STATE_METHOD = f"{INTERNAL_METHOD_PREFIXES[0]}DescribeState"
# Broker streams of requests answered one by one: each request is admitted like a unary call's.
BUDGETED_STREAMS = frozenset({f"{BROKER_METHOD_PREFIX}ProduceStream", f"{BROKER_METHOD_PREFIX}FetchStream"})

_current_call: contextvars.ContextVar[CallContext | None] = contextvars.ContextVar("weir_broker_call", default=None)

Continuation = Callable[[grpc.HandlerCallDetails], "grpc.RpcMethodHandler | None"]


def current_call() -> CallContext | None:
    """The caller the interceptor authenticated for the call this thread serves; None outside one."""
    return _current_call.get()


def refusal(code: grpc.StatusCode, details: str) -> grpc.RpcMethodHandler:
    """A handler that answers ``code`` without reading the request message.

    It is a stream-request handler on purpose: gRPC reads a unary request before calling its
    handler, while a stream's messages are read only when the handler iterates them.
    """

    def refuse(requests: Any, context: grpc.ServicerContext) -> None:
        context.abort(code, details)

    return grpc.stream_unary_rpc_method_handler(refuse)


class AuthenticationInterceptor(grpc.ServerInterceptor):
    """Authenticates ``Broker`` calls before their message is read; see the module docstring. Thread-safe."""

    def __init__(self, authenticator: Authenticator) -> None:
        self._authenticator = authenticator

    def intercept_service(self, continuation: Continuation, handler_call_details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler | None:
        method: str = handler_call_details.method
        metadata = handler_call_details.invocation_metadata or ()
        if method.startswith(BROKER_METHOD_PREFIX):
            try:
                _current_call.set(self._authenticator.authenticate(metadata, ""))
            except (AuthenticationError, CredentialsUnavailableError) as error:
                return refusal(grpc_status(error), str(error))
            except Exception as error:
                logger.exception("authenticating a call to %s failed unexpectedly", method)
                return refusal(grpc.StatusCode.INTERNAL, f"unexpected server error: {type(error).__name__}: {error}")
        elif method.startswith(INTERNAL_METHOD_PREFIXES) and not any(
            key == INTERNAL_TOKEN_HEADER or (key == TENANT_TOKEN_HEADER and method == DESCRIBE_STATE_METHOD) for key, _ in metadata
        ):
            service = method.split("/")[1].rpartition(".")[2]
            return refusal(grpc.StatusCode.UNAUTHENTICATED, f"the {service} service needs the internal token ({INTERNAL_TOKEN_HEADER})")
        return continuation(handler_call_details)


@dataclass(frozen=True, slots=True)
class _SizedRequest:
    """A parsed request and the size of the bytes it was parsed from."""

    message: Any
    size: int


class RequestBudgetInterceptor(grpc.ServerInterceptor):
    """Holds every ``Broker`` request's bytes in ``budget`` while its handler runs; see the module docstring.

    The admitting handler of a method is built once and handed out again while the handler it
    wraps is the same object (as on the data path), instead of per call. Thread-safe.
    """

    def __init__(self, budget: RequestBudget) -> None:
        self._budget = budget
        # method -> (the handler wrapped, its admitting handler)
        self._admitting: dict[str, tuple[grpc.RpcMethodHandler, grpc.RpcMethodHandler]] = {}

    def intercept_service(self, continuation: Continuation, handler_call_details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler | None:
        handler = continuation(handler_call_details)
        method: str = handler_call_details.method
        streamed = handler is not None and handler.stream_stream is not None and method in BUDGETED_STREAMS
        if handler is None or (handler.unary_unary is None and not streamed) or not method.startswith(BROKER_METHOD_PREFIX):
            return handler  # refusals (stream handlers) and other services pass unchanged
        cached = self._admitting.get(method)
        if cached is not None and cached[0] is handler:
            return cached[1]
        if handler.unary_unary is not None:
            admitting = grpc.unary_unary_rpc_method_handler(
                self._admitted(handler.unary_unary),
                request_deserializer=_sized(handler.request_deserializer),
                response_serializer=handler.response_serializer,
            )
        else:
            assert handler.stream_stream is not None  # streamed
            admitting = grpc.stream_stream_rpc_method_handler(
                self._admitted_stream(handler.stream_stream),
                request_deserializer=_sized(handler.request_deserializer),
                response_serializer=handler.response_serializer,
            )
        self._admitting[method] = (handler, admitting)
        return admitting

    def _admitted(self, behaviour: Callable[[Any, grpc.ServicerContext], Any]) -> Callable[[_SizedRequest, grpc.ServicerContext], Any]:
        budget = self._budget

        def serve(request: _SizedRequest, context: grpc.ServicerContext) -> Any:
            try:
                taken = budget.acquire(request.size)
            except RequestBudgetExhaustedError as error:
                context.set_trailing_metadata(((ERROR_CODE_TRAILER, str(int(ErrorCode.THROTTLING_QUOTA_EXCEEDED))),))
                context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, str(error))
            try:
                return behaviour(request.message, context)
            finally:
                budget.release(taken)

        return serve

    def _admitted_stream(
        self, behaviour: Callable[[Iterator[Any], grpc.ServicerContext], Iterator[Any]]
    ) -> Callable[[Iterator[_SizedRequest], grpc.ServicerContext], Iterator[Any]]:
        """``behaviour`` (one answer per request, in order) with each request holding its size in the budget until its answer."""
        budget = self._budget

        def serve(requests: Iterator[_SizedRequest], context: grpc.ServicerContext) -> Iterator[Any]:
            held: list[int] = []  # what the request being answered took (at most one: answers come in order)
            refused: list[RequestBudgetExhaustedError] = []

            def admitted() -> Iterator[Any]:
                for request in requests:
                    try:
                        held.append(budget.acquire(request.size))
                    except RequestBudgetExhaustedError as error:
                        # The requests end here, so the behaviour ends as for a closed stream; the
                        # refusal is made below, outside it, and no handler's error path sees it.
                        refused.append(error)
                        return
                    yield request.message

            try:
                for response in behaviour(admitted(), context):
                    if held:
                        budget.release(held.pop())
                    yield response
            finally:
                while held:
                    budget.release(held.pop())
            if refused:
                context.set_trailing_metadata(((ERROR_CODE_TRAILER, str(int(ErrorCode.THROTTLING_QUOTA_EXCEEDED))),))
                context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, str(refused[0]))

        return serve


def _sized(deserializer: Callable[[bytes], Any] | None) -> Callable[[bytes], _SizedRequest]:
    def parse(raw: bytes) -> _SizedRequest:
        return _SizedRequest(deserializer(raw) if deserializer is not None else raw, len(raw))

    return parse

"""Request ids: one id follows a piece of work across processes so that its log lines can be found.

The id of the work the current thread (or task) does lives in a context variable. Every
process sets it where work enters and clears it when the work is done:

* the web process from the ``X-Request-ID`` header, or a new uuid4 hex
  (``webapp.request_ids.RequestIdMiddleware``), returned in the response header;
* a Celery task from its message header ``weir_request_id`` (``webapp.request_ids``);
* a gRPC server (brokers, the controller) from the call metadata ``x-weir-request-id``
  (:class:`RequestIdServerInterceptor`), for the thread that serves the call.

Clients that call on behalf of such work add the metadata with :func:`with_request_id`.
Log formatters read the id with :func:`current_request_id` (``server_runtime.logging_setup``).

This module lives in ``server_runtime`` because it is a package the brokers (which never import
Django), the control plane and the controller all may import; it needs only the standard
library and grpc.

An id from outside (a header, call metadata) is accepted only when it is 1 to 64 characters of
letters, digits and ``. _ - : = + /``: anything else is ignored, so that a caller cannot write
line breaks or control characters into logs or response headers, and the id always fits the
provisioning job's ``request_id`` column.
"""

from __future__ import annotations

import contextvars
import functools
import re
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

import grpc

# gRPC metadata key of the request id (keys are lower case on the wire).
REQUEST_ID_METADATA = "x-weir-request-id"
# The longest id accepted from outside; the provisioning job stores ids of this length.
MAX_REQUEST_ID_LENGTH = 64
_ACCEPTED_ID = re.compile(rf"[A-Za-z0-9._:=+/-]{{1,{MAX_REQUEST_ID_LENGTH}}}")

_current: contextvars.ContextVar[str | None] = contextvars.ContextVar("weir_request_id", default=None)

T = TypeVar("T")


def new_request_id() -> str:
    """A fresh id: 32 lower-case hex digits (uuid4)."""
    return uuid.uuid4().hex


def accepted_request_id(value: object) -> str | None:
    """``value`` when it is an acceptable id from outside (see the module docstring), else None."""
    if isinstance(value, bytes):
        try:
            value = value.decode("ascii")
        except UnicodeDecodeError:
            return None
    if not isinstance(value, str) or not _ACCEPTED_ID.fullmatch(value):
        return None
    return value


def current_request_id() -> str | None:
    """The id of the work this thread or task is doing, None when none is known."""
    return _current.get()


def set_request_id(request_id: str | None) -> contextvars.Token[str | None]:
    """Make ``request_id`` current; give the token to :func:`reset_request_id` when the work ends.

    For hooks that start and end work in separate callbacks (Celery's task signals); code
    that can use a ``with`` block uses :func:`request_id_scope` instead.
    """
    return _current.set(request_id or None)


def reset_request_id(token: contextvars.Token[str | None]) -> None:
    """Restore the id that was current before the :func:`set_request_id` that gave ``token``."""
    _current.reset(token)


@contextmanager
def request_id_scope(request_id: str | None) -> Iterator[str | None]:
    """Make ``request_id`` current inside the block (None: no id), and restore the previous one after."""
    token = _current.set(request_id or None)
    try:
        yield request_id or None
    finally:
        _current.reset(token)


def carrying_request_id(function: Callable[..., T]) -> Callable[..., T]:
    """``function`` wrapped to run with the id current now, for another thread (a pool's worker
    threads do not inherit context variables)."""
    request_id = _current.get()

    @functools.wraps(function)
    def run(*args: Any, **kwargs: Any) -> T:
        with request_id_scope(request_id):
            return function(*args, **kwargs)

    return run


def with_request_id(metadata: Sequence[tuple[str, str]] = ()) -> tuple[tuple[str, str], ...]:
    """gRPC call metadata: ``metadata`` plus ``x-weir-request-id`` when an id is current."""
    request_id = _current.get()
    if request_id is None:
        return tuple(metadata)
    return (*metadata, (REQUEST_ID_METADATA, request_id))


def request_id_from_metadata(metadata: Sequence[tuple[str, str | bytes]] | None) -> str | None:
    """The acceptable ``x-weir-request-id`` of a call's invocation metadata, None without one."""
    for key, value in metadata or ():
        if key == REQUEST_ID_METADATA:
            return accepted_request_id(value)
    return None


class RequestIdServerInterceptor(grpc.ServerInterceptor):
    """Serve every call that carries ``x-weir-request-id`` with that id current in its thread.

    gRPC picks the handler on its polling thread and runs it on a pool thread, so the id is set
    by a wrapper around the handler's behaviour, not here. Calls without the metadata get their
    handler unchanged: the data plane's produce and fetch calls pay one metadata scan.
    """

    def intercept_service(
        self, continuation: Callable[[grpc.HandlerCallDetails], grpc.RpcMethodHandler | None], handler_call_details: grpc.HandlerCallDetails
    ) -> grpc.RpcMethodHandler | None:
        handler = continuation(handler_call_details)
        request_id = request_id_from_metadata(handler_call_details.invocation_metadata)
        if handler is None or request_id is None:
            return handler
        return _handler_with_request_id(handler, request_id)


def _handler_with_request_id(handler: grpc.RpcMethodHandler, request_id: str) -> grpc.RpcMethodHandler:
    options = {"request_deserializer": handler.request_deserializer, "response_serializer": handler.response_serializer}
    if handler.unary_unary is not None:
        return grpc.unary_unary_rpc_method_handler(_returning(handler.unary_unary, request_id), **options)
    if handler.unary_stream is not None:
        return grpc.unary_stream_rpc_method_handler(_streaming(handler.unary_stream, request_id), **options)
    if handler.stream_unary is not None:
        return grpc.stream_unary_rpc_method_handler(_returning(handler.stream_unary, request_id), **options)
    if handler.stream_stream is not None:
        return grpc.stream_stream_rpc_method_handler(_streaming(handler.stream_stream, request_id), **options)
    return handler


def _returning(behaviour: Callable[[Any, grpc.ServicerContext], Any], request_id: str) -> Callable[[Any, grpc.ServicerContext], Any]:
    def serve(request: Any, context: grpc.ServicerContext) -> Any:
        with request_id_scope(request_id):
            return behaviour(request, context)

    return serve


def _streaming(behaviour: Callable[[Any, grpc.ServicerContext], Iterator[Any]], request_id: str) -> Callable[[Any, grpc.ServicerContext], Iterator[Any]]:
    # The responses are produced lazily while gRPC iterates, so the id is current around each step.
    def serve(request: Any, context: grpc.ServicerContext) -> Iterator[Any]:
        with request_id_scope(request_id):
            responses = iter(behaviour(request, context))
        while True:
            with request_id_scope(request_id):
                try:
                    response = next(responses)
                except StopIteration:
                    return
            yield response

    return serve

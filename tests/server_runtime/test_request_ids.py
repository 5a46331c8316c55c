"""Request ids: which ids are accepted, how the current one is scoped, and how gRPC carries it."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent import futures

import grpc
import pytest

from server_runtime.request_ids import (
    REQUEST_ID_METADATA,
    RequestIdServerInterceptor,
    accepted_request_id,
    carrying_request_id,
    current_request_id,
    new_request_id,
    request_id_from_metadata,
    request_id_scope,
    reset_request_id,
    set_request_id,
    with_request_id,
)


@pytest.mark.parametrize("value", ["abc", "0f" * 16, "Root=1-5e1b4151-5ac6c58f:req/42+x_y.z", "a" * 64, b"bytes-id"])
def test_accepted_ids_are_kept(value: str | bytes) -> None:
    assert accepted_request_id(value) == (value.decode() if isinstance(value, bytes) else value)


@pytest.mark.parametrize("value", ["", "a" * 65, "line\nbreak", "has space", "ünicode", 'quote"', None, 42, b"\xff"])
def test_unacceptable_ids_are_refused(value: object) -> None:
    assert accepted_request_id(value) is None


def test_new_ids_are_uuid4_hex_and_acceptable() -> None:
    first, second = new_request_id(), new_request_id()
    assert first != second and len(first) == 32 and int(first, 16) >= 0
    assert accepted_request_id(first) == first


def test_scope_nests_and_restores_the_previous_id() -> None:
    assert current_request_id() is None
    with request_id_scope("outer"):
        with request_id_scope("inner"):
            assert current_request_id() == "inner"
        assert current_request_id() == "outer"
        with request_id_scope(None):
            assert current_request_id() is None
    assert current_request_id() is None


def test_set_and_reset_restore_the_previous_id() -> None:
    token = set_request_id("task-id")
    assert current_request_id() == "task-id"
    reset_request_id(token)
    assert current_request_id() is None


def test_another_thread_sees_the_id_only_when_carried() -> None:
    seen: dict[str, str | None] = {}
    with request_id_scope("carried"):
        plain = threading.Thread(target=lambda: seen.__setitem__("plain", current_request_id()))
        carried = threading.Thread(target=carrying_request_id(lambda: seen.__setitem__("carried", current_request_id())))
    for thread in (plain, carried):
        thread.start()
        thread.join(timeout=10)
    assert seen == {"plain": None, "carried": "carried"}


def test_metadata_gets_the_id_only_when_one_is_current() -> None:
    token = (("x-weir-internal-token", "secret"),)
    assert with_request_id(token) == token
    with request_id_scope("r-1"):
        assert with_request_id(token) == (*token, (REQUEST_ID_METADATA, "r-1"))
    assert request_id_from_metadata([("other", "x"), (REQUEST_ID_METADATA, "r-2")]) == "r-2"
    assert request_id_from_metadata([(REQUEST_ID_METADATA, "bad id")]) is None
    assert request_id_from_metadata(None) is None


def _identity(payload: bytes) -> bytes:
    return payload


@pytest.fixture(scope="module")
def echo_channel() -> Iterator[grpc.Channel]:
    """A server whose two methods answer the request id current in the thread serving them."""

    def unary(_request: bytes, _context: grpc.ServicerContext) -> bytes:
        return (current_request_id() or "-").encode()

    def streaming(_request: bytes, _context: grpc.ServicerContext) -> Iterator[bytes]:
        for _ in range(2):
            yield (current_request_id() or "-").encode()

    handlers = {
        "Unary": grpc.unary_unary_rpc_method_handler(unary, request_deserializer=_identity, response_serializer=_identity),
        "Streaming": grpc.unary_stream_rpc_method_handler(streaming, request_deserializer=_identity, response_serializer=_identity),
    }
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2), interceptors=[RequestIdServerInterceptor()])
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler("test.Echo", handlers),))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    try:
        yield channel
    finally:
        channel.close()
        server.stop(None)


def test_interceptor_makes_the_metadata_id_current_while_the_call_is_served(echo_channel: grpc.Channel) -> None:
    unary = echo_channel.unary_unary("/test.Echo/Unary", request_serializer=_identity, response_deserializer=_identity)
    streaming = echo_channel.unary_stream("/test.Echo/Streaming", request_serializer=_identity, response_deserializer=_identity)
    assert unary(b"", metadata=[(REQUEST_ID_METADATA, "call-1")], timeout=10) == b"call-1"
    assert list(streaming(b"", metadata=[(REQUEST_ID_METADATA, "call-2")], timeout=10)) == [b"call-2", b"call-2"]
    # The serving threads keep nothing from earlier calls, and an unacceptable id is ignored.
    assert unary(b"", timeout=10) == b"-"
    assert unary(b"", metadata=[(REQUEST_ID_METADATA, "not acceptable")], timeout=10) == b"-"
    assert list(streaming(b"", timeout=10)) == [b"-", b"-"]

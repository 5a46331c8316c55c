"""The admission interceptors in a real in-process server: one authentication per call, the
caller's address still reaching the handler, and the internal services' early refusal."""

from __future__ import annotations

import grpc
import pytest

from broker_nodes.security.access import CallContext
from broker_nodes.server import servicer as servicer_module
from grpc_protos.weir.v1 import admin_pb2, admin_pb2_grpc
from tests.broker_nodes.server.helpers import batch, create_topic, produce


def test_a_call_is_authenticated_once_and_its_handler_sees_the_callers_address(server, stub, monkeypatch) -> None:
    authenticate = server.broker.authenticator.authenticate
    authenticated: list[str] = []
    seen: list[CallContext] = []

    def counting(metadata, peer):  # type: ignore[no-untyped-def]
        authenticated.append(peer)
        return authenticate(metadata, peer)

    caller = servicer_module.BrokerServicer._caller

    def recording(self, context):  # type: ignore[no-untyped-def]
        call = caller(self, context)
        seen.append(call)
        return call

    monkeypatch.setattr(server.broker.authenticator, "authenticate", counting)
    monkeypatch.setattr(servicer_module.BrokerServicer, "_caller", recording)
    create_topic(stub, "orders")
    assert produce(stub, "orders", batch([b"once"])).error_code == 0
    assert len(authenticated) == 2  # CreateTopics and Produce, each once (before the message was read)
    assert [call.client_host for call in seen] == ["127.0.0.1", "127.0.0.1"]


def test_an_internal_service_call_without_the_internal_token_is_refused(server) -> None:
    with pytest.raises(grpc.RpcError) as refused:
        admin_pb2_grpc.AdminStub(server.channel).DescribeState(admin_pb2.DescribeStateRequest(), timeout=10)
    assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED
    assert "x-weir-internal-token" in refused.value.details()


def test_an_unknown_broker_method_is_still_unimplemented(server) -> None:
    call = server.channel.unary_unary("/weir.v1.Broker/NoSuchMethod", request_serializer=lambda message: message, response_deserializer=lambda data: data)
    with pytest.raises(grpc.RpcError) as refused:
        call(b"", timeout=10)
    assert refused.value.code() == grpc.StatusCode.UNIMPLEMENTED

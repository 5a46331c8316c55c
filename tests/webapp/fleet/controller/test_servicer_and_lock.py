"""The gRPC face (token, register, heartbeat) and the one-active-controller lock."""

from __future__ import annotations

import threading

import grpc
import pytest
from django.db import connection

from grpc_protos.weir.v1 import controller_pb2, controller_pb2_grpc
from webapp.controller.leadership import ControllerLock
from webapp.controller.service import STALE_BROKER_EPOCH, ControllerService
from webapp.controller.servicer import create_controller_server
from weir.errors import ErrorCode

TOKEN = "controller-test-token"


@pytest.fixture
def stub(transactional_db):  # type: ignore[no-untyped-def]
    # The service takes a controller epoch in the database, which its handler threads share.
    service = ControllerService(session_timeout_ms=9000, first_epoch=10, push=lambda: None)
    server, port = create_controller_server(service, "127.0.0.1:0", internal_token=TOKEN)
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    yield controller_pb2_grpc.ControllerStub(channel)
    channel.close()
    server.stop(None)


@pytest.mark.django_db(transaction=True)
def test_register_then_heartbeat_and_a_stale_epoch_is_fenced(stub) -> None:  # type: ignore[no-untyped-def]
    metadata = (("x-weir-internal-token", TOKEN),)
    first = stub.RegisterBroker(controller_pb2.RegisterBrokerRequest(node_id=1, host="127.0.0.1", port=9092), metadata=metadata, timeout=10)
    assert first.session_timeout_ms == 9000
    second = stub.RegisterBroker(controller_pb2.RegisterBrokerRequest(node_id=1, host="127.0.0.1", port=9092), metadata=metadata, timeout=10)
    assert second.broker_epoch > first.broker_epoch
    current = stub.BrokerHeartbeat(controller_pb2.BrokerHeartbeatRequest(node_id=1, broker_epoch=second.broker_epoch), metadata=metadata, timeout=10)
    assert (current.error_code, current.fenced) == (ErrorCode.NO_ERROR, False)
    stale = stub.BrokerHeartbeat(controller_pb2.BrokerHeartbeatRequest(node_id=1, broker_epoch=first.broker_epoch), metadata=metadata, timeout=10)
    assert (stale.error_code, stale.fenced) == (STALE_BROKER_EPOCH, True)


def test_call_without_the_internal_token_is_unauthenticated(stub) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(grpc.RpcError) as raised:
        stub.BrokerHeartbeat(controller_pb2.BrokerHeartbeatRequest(node_id=1, broker_epoch=1), metadata=(("x-weir-internal-token", "wrong"),), timeout=10)
    assert raised.value.code() == grpc.StatusCode.UNAUTHENTICATED


@pytest.mark.django_db(transaction=True)
def test_second_controller_waits_while_the_first_holds_the_lock() -> None:
    active = ControllerLock()
    assert active.try_acquire()
    outcomes: list[bool] = []

    def standby() -> None:
        lock = ControllerLock()
        try:
            outcomes.append(lock.try_acquire())
        finally:
            lock.release()
            connection.close()

    thread = threading.Thread(target=standby)
    thread.start()
    thread.join(10)
    active.release()
    taker: list[bool] = []

    def successor() -> None:
        lock = ControllerLock()
        try:
            taker.append(lock.try_acquire())
        finally:
            lock.release()
            connection.close()

    thread = threading.Thread(target=successor)
    thread.start()
    thread.join(10)
    assert outcomes == [False]
    assert taker == [True]

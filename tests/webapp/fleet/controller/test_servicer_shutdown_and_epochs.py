"""The gRPC face of controlled shutdown and controller epochs: STALE_BROKER_EPOCH,
NOT_CONTROLLER from a superseded controller, UNAUTHENTICATED without the internal token."""

from __future__ import annotations

import grpc
import pytest

from grpc_protos.weir.v1 import controller_pb2, controller_pb2_grpc
from webapp.accounts.models import Tenant
from webapp.catalog.models import Partition, Topic
from webapp.controller.epoch import become_active
from webapp.controller.service import STALE_BROKER_EPOCH, ControllerService
from webapp.controller.servicer import create_controller_server
from webapp.fleet.models import BrokerNode, BrokerState
from weir.errors import ErrorCode

TOKEN = "controller-test-token"
METADATA = (("x-weir-internal-token", TOKEN),)

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def controller():  # type: ignore[no-untyped-def]
    service = ControllerService(session_timeout_ms=9000, first_epoch=10, push=lambda: None)
    server, port = create_controller_server(service, "127.0.0.1:0", internal_token=TOKEN)
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    yield controller_pb2_grpc.ControllerStub(channel), service
    channel.close()
    server.stop(None)


def _register(stub, node_id: int) -> controller_pb2.RegisterBrokerResponse:  # type: ignore[no-untyped-def]
    request = controller_pb2.RegisterBrokerRequest(node_id=node_id, host="127.0.0.1", port=9000 + node_id)
    return stub.RegisterBroker(request, metadata=METADATA, timeout=10)


def test_register_and_heartbeat_carry_the_controller_epoch(controller) -> None:  # type: ignore[no-untyped-def]
    stub, service = controller
    registered = _register(stub, 1)
    assert (registered.error_code, registered.controller_epoch) == (ErrorCode.NO_ERROR, service.controller_epoch)
    beat = stub.BrokerHeartbeat(controller_pb2.BrokerHeartbeatRequest(node_id=1, broker_epoch=registered.broker_epoch), metadata=METADATA, timeout=10)
    assert beat.controller_epoch == service.controller_epoch > 0


def test_controlled_shutdown_hands_over_and_reports_what_remains(controller) -> None:  # type: ignore[no-untyped-def]
    stub, _ = controller
    epochs = {node_id: _register(stub, node_id).broker_epoch for node_id in (1, 2)}
    Topic.objects.filter(tenant__isnull=True).delete()  # this test follows its own topics only
    tenant = Tenant.objects.create(name="Acme", slug="acme")
    for name, isr in (("orders", [1, 2]), ("solo", [1])):
        topic = Topic.objects.create(tenant=tenant, name=name, partition_count=1, replication_factor=2)
        Partition.objects.create(topic=topic, index=0, replicas=[1, 2], isr=isr, leader=1, leader_epoch=0)

    request = controller_pb2.ControlledShutdownRequest(node_id=1, broker_epoch=epochs[1])
    first = stub.ControlledShutdown(request, metadata=METADATA, timeout=10)
    assert first.error_code == ErrorCode.NO_ERROR
    assert [(ref.topic, ref.partition) for ref in first.remaining_partitions] == [(f"{tenant.public_id}~solo", 0)]
    assert Partition.objects.get(topic__name="orders").leader == 2

    # The last partition gets another in-sync replica; the retry completes the shutdown.
    Partition.objects.filter(topic__name="solo").update(isr=[1, 2])
    second = stub.ControlledShutdown(request, metadata=METADATA, timeout=10)
    assert (second.error_code, list(second.remaining_partitions)) == (ErrorCode.NO_ERROR, [])
    assert BrokerNode.objects.get(node_id=1).state == BrokerState.STOPPED
    beat = stub.BrokerHeartbeat(controller_pb2.BrokerHeartbeatRequest(node_id=1, broker_epoch=epochs[1]), metadata=METADATA, timeout=10)
    assert (beat.error_code, beat.fenced) == (STALE_BROKER_EPOCH, True)


def test_controlled_shutdown_with_a_stale_broker_epoch(controller) -> None:  # type: ignore[no-untyped-def]
    stub, _ = controller
    old = _register(stub, 1).broker_epoch
    _register(stub, 1)
    reply = stub.ControlledShutdown(controller_pb2.ControlledShutdownRequest(node_id=1, broker_epoch=old), metadata=METADATA, timeout=10)
    assert (reply.error_code, list(reply.remaining_partitions)) == (STALE_BROKER_EPOCH, [])
    assert BrokerNode.objects.get(node_id=1).state == BrokerState.ONLINE


def test_controlled_shutdown_without_the_internal_token_is_unauthenticated(controller) -> None:  # type: ignore[no-untyped-def]
    stub, _ = controller
    epoch = _register(stub, 1).broker_epoch
    with pytest.raises(grpc.RpcError) as raised:
        stub.ControlledShutdown(
            controller_pb2.ControlledShutdownRequest(node_id=1, broker_epoch=epoch), metadata=(("x-weir-internal-token", "wrong"),), timeout=10
        )
    assert raised.value.code() == grpc.StatusCode.UNAUTHENTICATED
    assert BrokerNode.objects.get(node_id=1).state == BrokerState.ONLINE


def test_a_superseded_controller_answers_not_controller(controller) -> None:  # type: ignore[no-untyped-def]
    stub, service = controller
    epoch = _register(stub, 1).broker_epoch
    become_active("successor:1")
    shutdown = stub.ControlledShutdown(controller_pb2.ControlledShutdownRequest(node_id=1, broker_epoch=epoch), metadata=METADATA, timeout=10)
    assert shutdown.error_code == ErrorCode.NOT_CONTROLLER
    assert service.fenced
    assert BrokerNode.objects.get(node_id=1).state == BrokerState.ONLINE
    beat = stub.BrokerHeartbeat(controller_pb2.BrokerHeartbeatRequest(node_id=1, broker_epoch=epoch), metadata=METADATA, timeout=10)
    assert (beat.error_code, beat.fenced) == (ErrorCode.NOT_CONTROLLER, False)
    assert _register(stub, 2).error_code == ErrorCode.NOT_CONTROLLER
    assert not BrokerNode.objects.filter(node_id=2).exists()
    altered = stub.AlterPartition(
        controller_pb2.AlterPartitionRequest(topic="tn-x~orders", partition=0, leader_id=1, leader_epoch=0, new_isr=[1]), metadata=METADATA, timeout=10
    )
    assert altered.error_code == ErrorCode.NOT_CONTROLLER

"""A broker whose lease stream closed is fenced after the disconnect grace when its address
refuses connections; not when it re-opened a lease, heartbeated, or still accepts connections
(a live broker: its session timeout decides); never by a controller that stopped serving."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import grpc
import pytest

from grpc_protos.weir.v1 import controller_pb2, controller_pb2_grpc
from webapp.accounts.models import Tenant
from webapp.catalog.models import Partition, Topic
from webapp.controller.service import ControllerService, address_refuses
from webapp.controller.servicer import create_controller_server
from webapp.fleet.models import BrokerNode, BrokerState
from weir.errors import ErrorCode

TOKEN = "lease-test-token"
METADATA = (("x-weir-internal-token", TOKEN),)
GRACE_MS = 300
POLL_LIMIT_SECONDS = 30.0


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


class Harness:
    """Brokers 1, 2, 3 registered with a manual clock; ``refused`` is what the address probe answers."""

    def __init__(self) -> None:
        self.clock = Clock()
        self.pushes = 0
        self.refused = True
        self.probed: list[tuple[str, int]] = []
        self.service = ControllerService(
            session_timeout_ms=9000,
            monotonic=self.clock,
            first_epoch=1,
            push=self._push,
            disconnect_grace_ms=GRACE_MS,
            sleep=self.clock.sleep,
            probe=self._probe,
        )
        tenant = Tenant.objects.create(name="Acme", slug="acme")
        self.epochs = {node_id: self.service.register(node_id, "127.0.0.1", 9000 + node_id, "").broker_epoch for node_id in (1, 2, 3)}
        topic = Topic.objects.create(tenant=tenant, name="orders", partition_count=1, replication_factor=3)
        self.partition = Partition.objects.create(topic=topic, index=0, replicas=[1, 2, 3], isr=[1, 2, 3], leader=1, leader_epoch=3)
        self.pushes = 0

    def _push(self) -> None:
        self.pushes += 1

    def _probe(self, host: str, port: int) -> bool:
        self.probed.append((host, port))
        return self.refused

    def lease(self, node_id: int) -> int:
        lease = self.service.open_lease(node_id, self.epochs[node_id])
        assert lease is not None
        return lease

    def leader(self) -> int:
        self.partition.refresh_from_db()
        return self.partition.leader


@pytest.mark.django_db
def test_a_lost_lease_of_a_dead_broker_fences_it_after_the_grace() -> None:
    harness = Harness()
    lease = harness.lease(1)
    harness.service.lease_lost(1, harness.epochs[1], lease)
    assert harness.clock.now == pytest.approx(GRACE_MS / 1000)  # it waited out the grace first
    assert harness.probed == [("127.0.0.1", 9001)]
    assert harness.leader() in (2, 3) and harness.partition.leader_epoch == 4
    assert BrokerNode.objects.get(node_id=1).state == BrokerState.OFFLINE
    assert harness.pushes == 1
    assert not harness.service.heartbeat(1, harness.epochs[1])  # it must register again


@pytest.mark.django_db
def test_a_broker_whose_address_still_accepts_is_left_to_its_session_timeout() -> None:
    harness = Harness()
    harness.refused = False
    harness.service.lease_lost(1, harness.epochs[1], harness.lease(1))
    assert harness.leader() == 1
    assert harness.service.heartbeat(1, harness.epochs[1])


@pytest.mark.django_db
def test_a_heartbeat_within_the_grace_keeps_the_broker() -> None:
    harness = Harness()
    lease = harness.lease(1)
    assert harness.service.sessions.lease_lost(1, harness.epochs[1], lease)
    harness.clock.now += GRACE_MS / 2000
    assert harness.service.heartbeat(1, harness.epochs[1])
    assert not harness.service.fence_if_gone(1, harness.epochs[1])
    assert harness.probed == [] and harness.leader() == 1


@pytest.mark.django_db
def test_a_new_lease_within_the_grace_keeps_the_broker() -> None:
    harness = Harness()
    lease = harness.lease(1)
    assert harness.service.sessions.lease_lost(1, harness.epochs[1], lease)
    harness.lease(1)
    assert not harness.service.fence_if_gone(1, harness.epochs[1])
    assert harness.leader() == 1


@pytest.mark.django_db
def test_a_controller_that_stopped_serving_fences_nobody() -> None:
    harness = Harness()
    lease = harness.lease(1)
    harness.service.close_leases()  # as ControllerServer.stop does before the streams end
    harness.service.lease_lost(1, harness.epochs[1], lease)
    assert harness.probed == [] and harness.leader() == 1


def test_the_probe_tells_a_closed_port_from_a_listening_one() -> None:
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    try:
        assert not address_refuses("127.0.0.1", port)  # accepted by the kernel, even unserved
    finally:
        listener.close()
    assert address_refuses("127.0.0.1", port)


# ------------------------------------------------------------------ over gRPC


@pytest.fixture
def served(transactional_db) -> Iterator[tuple[ControllerService, controller_pb2_grpc.ControllerStub, list[tuple[str, int]]]]:  # type: ignore[no-untyped-def]
    probed: list[tuple[str, int]] = []

    def probe(host: str, port: int) -> bool:
        probed.append((host, port))
        return True

    service = ControllerService(session_timeout_ms=9000, first_epoch=10, push=lambda: None, disconnect_grace_ms=GRACE_MS, probe=probe)
    server, port = create_controller_server(service, "127.0.0.1:0", internal_token=TOKEN)
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    try:
        yield service, controller_pb2_grpc.ControllerStub(channel), probed
    finally:
        channel.close()
        server.stop(None)


def _register(stub: controller_pb2_grpc.ControllerStub, node_id: int) -> int:
    request = controller_pb2.RegisterBrokerRequest(node_id=node_id, host="127.0.0.1", port=9000 + node_id)
    return int(stub.RegisterBroker(request, metadata=METADATA, timeout=10).broker_epoch)


def _poll(condition: object, what: str) -> None:
    deadline = time.monotonic() + POLL_LIMIT_SECONDS
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, what
        time.sleep(0.02)


def test_a_lease_stream_closed_by_the_broker_fences_it(served) -> None:  # type: ignore[no-untyped-def]
    service, stub, probed = served
    epoch = _register(stub, 1)
    call = stub.BrokerLease(controller_pb2.BrokerLeaseRequest(node_id=1, broker_epoch=epoch), metadata=METADATA)
    assert next(call).error_code == ErrorCode.NO_ERROR
    call.cancel()  # what the controller sees of a killed broker: its end of the stream closes
    _poll(lambda: BrokerNode.objects.get(node_id=1).state == BrokerState.OFFLINE, "the broker whose lease closed is fenced")
    assert probed == [("127.0.0.1", 9001)]
    assert 1 not in service.sessions.live()


def test_a_lease_of_a_replaced_session_ends_from_the_controller_and_fences_nobody(served) -> None:  # type: ignore[no-untyped-def]
    service, stub, probed = served
    old_epoch = _register(stub, 1)
    call = stub.BrokerLease(controller_pb2.BrokerLeaseRequest(node_id=1, broker_epoch=old_epoch), metadata=METADATA)
    assert next(call).error_code == ErrorCode.NO_ERROR
    new_epoch = _register(stub, 1)
    ended = threading.Event()

    def drain() -> None:
        for _ in call:
            pass
        ended.set()

    threading.Thread(target=drain, daemon=True).start()
    _poll(ended.is_set, "the lease of the replaced session is ended by the controller")
    assert probed == [] and service.sessions.is_current(1, new_epoch)
    stale = stub.BrokerLease(controller_pb2.BrokerLeaseRequest(node_id=1, broker_epoch=old_epoch), metadata=METADATA)
    assert next(stale).error_code == ErrorCode.STALE_BROKER_EPOCH  # type: ignore[attr-defined]

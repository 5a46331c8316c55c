"""The broker's lease stream (``ControllerClient``): held for the current session, opened again
for the new session after a re-registration, and closed when the client stops."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator

import grpc
import pytest

from broker_nodes.controller_client import ControllerClient
from grpc_protos.weir.v1 import controller_pb2
from tests.broker_nodes.fake_controller import FakeController
from weir.errors import ErrorCode

TOKEN = "lease-token"
POLL_LIMIT_SECONDS = 20.0


class LeasingController(FakeController):
    """The fake controller, holding lease streams open until the broker's end closes them."""

    def __init__(self, token: str) -> None:
        super().__init__(token)
        self.leases: list[int] = []  # broker epochs of the leases opened, in order
        self.closed: list[int] = []  # broker epochs of the leases whose broker end closed

    def BrokerLease(self, request: controller_pb2.BrokerLeaseRequest, context: grpc.ServicerContext) -> Iterator[controller_pb2.BrokerLeaseEvent]:
        self._check(context)
        ended = threading.Event()
        context.add_callback(ended.set)
        context.add_callback(lambda: self.closed.append(request.broker_epoch))
        with self.lock:
            current = self.epochs.get(request.node_id) == request.broker_epoch
            self.leases.append(request.broker_epoch)
        if not current:
            yield controller_pb2.BrokerLeaseEvent(error_code=ErrorCode.STALE_BROKER_EPOCH)  # type: ignore[attr-defined]
            return
        yield controller_pb2.BrokerLeaseEvent(error_code=ErrorCode.NO_ERROR, controller_epoch=self.controller_epoch)
        while not ended.wait(0.05):
            with self.lock:
                if self.epochs.get(request.node_id) != request.broker_epoch:
                    return


def wait_until(condition: Callable[[], object], what: str) -> None:
    deadline = time.monotonic() + POLL_LIMIT_SECONDS
    while not condition():
        assert time.monotonic() < deadline, f"not within {POLL_LIMIT_SECONDS:g} s: {what}"
        time.sleep(0.01)


@pytest.fixture
def controller() -> Iterator[LeasingController]:
    fake = LeasingController(TOKEN)
    fake.start()
    yield fake
    fake.stop()


def test_the_lease_follows_the_session_and_closes_with_the_client(controller: LeasingController) -> None:
    client = ControllerClient([controller.address], node_id=4, rack="", internal_token=TOKEN, heartbeat_interval_ms=50, channel_factory=grpc.insecure_channel)
    client.start("127.0.0.1", 9094)
    try:
        wait_until(lambda: client.broker_epoch != 0 and client.broker_epoch in controller.leases, "a lease for the first session")
        first = client.broker_epoch
        controller.fence_node = 4  # the next heartbeat is refused: the broker registers again
        wait_until(lambda: client.broker_epoch not in (0, first), "a new session")
        second = client.broker_epoch
        wait_until(lambda: second in controller.leases, "a lease for the new session")
    finally:
        client.stop()
    wait_until(lambda: second in controller.closed, "the lease closed by the stopping client")

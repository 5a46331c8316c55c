"""The controller logs a call's x-weir-request-id with every line of that call."""

from __future__ import annotations

import logging

import grpc
import pytest

from grpc_protos.weir.v1 import controller_pb2, controller_pb2_grpc
from server_runtime.logging_setup import RequestIdFilter
from server_runtime.request_ids import REQUEST_ID_METADATA
from webapp.controller.service import ControllerService
from webapp.controller.servicer import create_controller_server

TOKEN = "controller-request-id-token"


class Recorder(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.addFilter(RequestIdFilter())
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.mark.django_db(transaction=True)
def test_registration_lines_carry_the_calls_request_id() -> None:
    service = ControllerService(session_timeout_ms=9000, first_epoch=10, push=lambda: None)
    server, port = create_controller_server(service, "127.0.0.1:0", internal_token=TOKEN)
    recorder = Recorder()
    service_logger = logging.getLogger("webapp.controller.service")
    # Another test in this process may have set the root level (Celery's test worker sets WARNING)
    # or disabled existing loggers (dictConfig): this test's lines are INFO, on this logger.
    previous = (service_logger.level, service_logger.disabled)
    service_logger.setLevel(logging.INFO)
    service_logger.disabled = False
    service_logger.addHandler(recorder)
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = controller_pb2_grpc.ControllerStub(channel)
            request = controller_pb2.RegisterBrokerRequest(node_id=1, host="127.0.0.1", port=9092)
            stub.RegisterBroker(request, metadata=(("x-weir-internal-token", TOKEN), (REQUEST_ID_METADATA, "register-1")), timeout=10)
            stub.RegisterBroker(request, metadata=(("x-weir-internal-token", TOKEN),), timeout=10)
    finally:
        service_logger.removeHandler(recorder)
        service_logger.setLevel(previous[0])
        service_logger.disabled = previous[1]
        server.stop(None)
    registered = [record for record in recorder.records if "registered at" in record.getMessage()]
    assert [record.request_id for record in registered] == ["register-1", None]  # type: ignore[attr-defined]

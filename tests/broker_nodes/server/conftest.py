"""In-process brokers for server tests: a real gRPC server on a loopback port, stopped after the test."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from grpc_protos.weir.v1 import broker_pb2_grpc
from tests.support.in_process_broker import InProcessBroker

# Few offsets partitions keep startup fast; tests of placement use the real default.
FAST_CONFIGS = {"offsets.topic.num.partitions": "3"}


@pytest.fixture
def broker_server_factory(tmp_path: Path) -> Iterator[Callable[..., InProcessBroker]]:
    started: list[InProcessBroker] = []

    def start(**configs: str) -> InProcessBroker:
        merged = {**FAST_CONFIGS, **{key.replace("_", "."): value for key, value in configs.items()}}
        broker = InProcessBroker(tmp_path / f"data-{len(started)}", merged).start()
        started.append(broker)
        return broker

    yield start
    for broker in started:
        broker.stop()


@pytest.fixture
def server(broker_server_factory) -> InProcessBroker:
    return broker_server_factory()


@pytest.fixture
def stub(server: InProcessBroker) -> broker_pb2_grpc.BrokerStub:
    return server.stub

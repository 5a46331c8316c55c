"""In-process brokers for server tests: a real gRPC server on a loopback port, stopped after the test."""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Iterator

import grpc
import pytest

from broker_nodes.config import load_broker_config
from broker_nodes.server.app import BrokerServer, start_broker_server
from grpc_protos.weir.v1 import broker_pb2_grpc

# Few offsets partitions keep startup fast; tests of placement use the real default.
FAST_CONFIGS = {"offsets.topic.num.partitions": "3"}


class InProcessBroker:
    """A running in-process broker with a client stub; ``restart`` keeps the data directory."""

    def __init__(self, data_dir: Path, configs: dict[str, str]) -> None:
        self.data_dir = data_dir
        self.configs = configs
        self.running: BrokerServer | None = None
        self.channel: grpc.Channel | None = None
        self.stub: broker_pb2_grpc.BrokerStub

    def start(self) -> "InProcessBroker":
        config = load_broker_config(
            node_id=1, listen="127.0.0.1:0", data_dir=self.data_dir, configs=[f"{key}={value}" for key, value in self.configs.items()]
        )
        self.running = start_broker_server(config)
        self.channel = grpc.insecure_channel(f"127.0.0.1:{self.running.port}")
        self.stub = broker_pb2_grpc.BrokerStub(self.channel)
        return self

    @property
    def broker(self):
        assert self.running is not None
        return self.running.broker

    def stop(self) -> None:
        if self.channel is not None:
            self.channel.close()
            self.channel = None
        if self.running is not None:
            self.running.stop(grace_seconds=1.0)
            self.running = None

    def restart(self) -> "InProcessBroker":
        self.stop()
        return self.start()


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

"""A broker served in this test process: a real gRPC server on a loopback port, with stubs."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from pathlib import Path

import grpc

from broker_nodes.config import load_broker_config
from broker_nodes.server.app import BrokerServer, start_broker_server
from grpc_protos.weir.v1 import broker_pb2_grpc


class InProcessBroker:
    """A running in-process broker with a client stub; ``restart`` keeps the data directory.

    ``environment`` stands in for the process environment (``WEIR_BROKER_*``,
    ``WEIR_INTERNAL_TOKEN``); ``sleep`` receives quota delays (tests record instead of sleeping).
    """

    def __init__(
        self,
        data_dir: Path,
        configs: Mapping[str, str] | None = None,
        *,
        node_id: int = 1,
        environment: Mapping[str, str] | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.data_dir = data_dir
        self.node_id = node_id
        self.configs = dict(configs or {})
        self.config = load_broker_config(
            node_id=node_id,
            listen="127.0.0.1:0",
            data_dir=data_dir,
            configs=[f"{key}={value}" for key, value in self.configs.items()],
            environment=dict(environment or {}),
        )
        self._sleep = sleep
        self.running: BrokerServer | None = None
        self.channel: grpc.Channel | None = None

    def start(self):  # type: ignore[no-untyped-def]
        self.running = start_broker_server(self.config, sleep=self._sleep)
        self.channel = grpc.insecure_channel(f"127.0.0.1:{self.running.port}")
        return self

    @property
    def stub(self) -> broker_pb2_grpc.BrokerStub:
        return broker_pb2_grpc.BrokerStub(self.channel)

    @property
    def port(self) -> int:
        assert self.running is not None
        return self.running.port

    @property
    def broker(self):  # type: ignore[no-untyped-def]
        assert self.running is not None
        return self.running.broker

    def stop(self) -> None:
        if self.channel is not None:
            self.channel.close()
            self.channel = None
        if self.running is not None:
            self.running.stop(grace_seconds=1.0)
            self.running = None

    def restart(self):  # type: ignore[no-untyped-def]
        self.stop()
        return self.start()

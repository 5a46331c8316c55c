"""Replication stubs to other brokers, one channel per address, opened on first use and kept.

The transaction coordinator's marker router and the partition leaders' KIP-890 verifier both
call other brokers' Replication service; they share this cache's shape (thread-safe; ``close``
closes every channel).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

import grpc

from grpc_protos.weir.v1 import replication_pb2_grpc

if TYPE_CHECKING:
    from grpc_protos.weir.v1.replication_pb2_grpc import ReplicationStub


class BrokerStubs:
    """Replication stubs by broker address."""

    def __init__(self, channel_factory: Callable[[str], grpc.Channel]) -> None:
        self._channel_factory = channel_factory
        self._lock = threading.Lock()
        self._channels: dict[str, tuple[grpc.Channel, ReplicationStub]] = {}

    def stub(self, address: str) -> ReplicationStub:
        with self._lock:
            opened = self._channels.get(address)
            if opened is None:
                channel = self._channel_factory(address)
                opened = (channel, replication_pb2_grpc.ReplicationStub(channel))
                self._channels[address] = opened
            return opened[1]

    def close(self) -> None:
        with self._lock:
            channels, self._channels = self._channels, {}
        for channel, _ in channels.values():
            channel.close()

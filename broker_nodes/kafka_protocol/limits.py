"""What one Kafka-protocol connection may do, from the broker's config (its own module: the listener
reads it at start, before anything imports kio)."""

from __future__ import annotations

from dataclasses import dataclass

from broker_nodes.config import BrokerConfig


@dataclass(frozen=True)
class ConnectionLimits:
    """What one connection may do (seconds and bytes), from the broker's config."""

    max_frame_bytes: int  # socket.request.max.bytes
    idle_timeout: float  # connections.max.idle.ms
    read_timeout: float  # kafka.request.read.timeout.ms: the rest of a started request, a response's send


def limits_from_config(config: BrokerConfig) -> ConnectionLimits:
    return ConnectionLimits(
        max_frame_bytes=config.integer("socket.request.max.bytes"),
        idle_timeout=config.integer("connections.max.idle.ms") / 1000.0,
        read_timeout=config.integer("kafka.request.read.timeout.ms") / 1000.0,
    )

"""Where usage rows go: ``__usage``, through the SDK's Producer, as any trusted client writes.

The emitter sees a small interface (:class:`UsageSink`) so that tests can put a fake in its
place. :class:`ProducerSink` is the real one: a ``weir.Producer`` (idempotent, acks=all)
bootstrapped at the broker's own address and authenticated with the internal token, so its
calls are neither metered nor refused for writing an internal topic. It speaks TLS, verified
with ``--tls-ca``, when the broker's peers do (as ``server.channels`` decides). From there on
it is an ordinary client: it follows the leaders of ``__usage`` wherever they are and
retries with the same producer id and sequence numbers.

Record key: the node id as ASCII, so that one broker's rows stay in one partition, in order.
Record timestamp: the moment of (this) sending.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from broker_nodes.config import BrokerConfig
from log_formats.usage_records import USAGE_TOPIC
from weir.errors import ErrorCode, KafkaError
from weir.producer import Producer

DELIVERY_TIMEOUT_MS = 120_000  # a row not acknowledged by then is reported failed and sent again
REQUEST_TIMEOUT_MS = 10_000  # one Produce call
METADATA_TIMEOUT_MS = 5_000  # a metadata lookup (is there a __usage?) and produce()'s longest block


@dataclass(frozen=True, slots=True)
class SinkFailure:
    """Why a row was not acknowledged; ``unknown_topic``: ``__usage`` does not exist (yet)."""

    reason: str
    unknown_topic: bool = False


Acknowledgement = Callable[[SinkFailure | None], None]


class UsageSink(Protocol):
    def topic_exists(self) -> bool:
        """Whether ``__usage`` exists; raises when no broker answers."""

    def send(self, key: bytes, value: bytes, timestamp_ms: int, on_done: Acknowledgement) -> None:
        """Queue one record; ``on_done`` runs later from :meth:`poll`, with None once it is acknowledged."""

    def poll(self, timeout_seconds: float) -> None:
        """Run the acknowledgements that arrived, waiting up to ``timeout_seconds`` for one."""

    def close(self, timeout_seconds: float) -> None:
        """Stop; rows still unacknowledged get no answer (they stay in the backlog)."""


_UNKNOWN_TOPIC_CODES = frozenset({KafkaError._UNKNOWN_TOPIC, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION})


def producer_config(config: BrokerConfig, port: int) -> dict[str, Any]:
    """The metering producer's SDK configuration for a broker serving on ``port``."""
    host = config.host_for_clients
    address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    transport: dict[str, Any] = {"security.protocol": "ssl", "ssl.ca.location": str(config.tls_ca)} if config.tls_ca is not None else {}
    return transport | {
        "bootstrap.servers": address,
        "client.id": f"weir-metering-{config.node_id}",
        "weir.internal.token": config.internal_token,
        "acks": "all",
        "enable.idempotence": True,
        "delivery.timeout.ms": DELIVERY_TIMEOUT_MS,
        "request.timeout.ms": REQUEST_TIMEOUT_MS,
        "socket.timeout.ms": METADATA_TIMEOUT_MS,
        "max.block.ms": METADATA_TIMEOUT_MS,
    }


class ProducerSink:
    """:class:`UsageSink` over a ``weir.Producer``. Used from one thread (the emitter's)."""

    def __init__(self, config: Mapping[str, Any]) -> None:
        self._producer = Producer(dict(config))

    def topic_exists(self) -> bool:
        metadata = self._producer.list_topics(USAGE_TOPIC, timeout=METADATA_TIMEOUT_MS / 1000.0)
        topic = metadata.topics.get(USAGE_TOPIC)
        return topic is not None and topic.error is None and bool(topic.partitions)

    def send(self, key: bytes, value: bytes, timestamp_ms: int, on_done: Acknowledgement) -> None:
        def delivered(error: KafkaError | None, _message: object) -> None:
            if error is None:
                on_done(None)
            else:
                on_done(SinkFailure(f"{error.name()}: {error.str()}", error.code() in _UNKNOWN_TOPIC_CODES))

        self._producer.produce(USAGE_TOPIC, value=value, key=key, timestamp=timestamp_ms, on_delivery=delivered)

    def poll(self, timeout_seconds: float) -> None:
        self._producer.poll(timeout_seconds)

    def close(self, timeout_seconds: float) -> None:
        self._producer.close(timeout_seconds)

"""Metrics of a broker's Kafka-protocol listener (``broker_nodes.kafka_protocol``).

* ``weir_broker_kafka_connections``: connections open now;
* ``weir_broker_kafka_connections_closed_total{reason}``: connections closed, by why (a fixed
  set: client, idle, stalled, too_large, malformed, unknown_api, unsupported_version,
  sasl_state, authentication, revoked, handler_error, too_many, busy, shutdown);
* ``weir_broker_kafka_requests_total{api, outcome}``: requests answered (``ok``) or that closed
  their connection (``closed``), by API name (kio's names of the registered keys, so bounded);
* ``weir_broker_kafka_request_duration_seconds{api}``: time from a request's decoding to its
  response being encoded (long polls and acks=all waits included).

Updated on the listener's paths; prometheus_client's metrics are thread-safe.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from broker_nodes.metrics.requests import LATENCY_BUCKETS


class KafkaMetrics:
    """The Kafka listener's metrics, registered in ``registry`` (the broker's, or a test's own)."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        registry = registry if registry is not None else CollectorRegistry()
        self.connections = Gauge("weir_broker_kafka_connections", "Kafka-protocol connections open.", registry=registry)
        self.closed = Counter("weir_broker_kafka_connections_closed", "Kafka-protocol connections closed, by reason.", ["reason"], registry=registry)
        self.requests = Counter(
            "weir_broker_kafka_requests", "Kafka-protocol requests, by API and outcome (ok, or closed the connection).", ["api", "outcome"], registry=registry
        )
        self.duration = Histogram(
            "weir_broker_kafka_request_duration_seconds",
            "Time from a Kafka-protocol request's decoding to its encoded response (long polls and acks=all waits included).",
            ["api"],
            buckets=LATENCY_BUCKETS,
            registry=registry,
        )

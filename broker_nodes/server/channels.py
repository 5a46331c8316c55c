"""Channels a broker opens to other brokers (replica fetchers) and to the controller.

One function decides how: TLS verified against ``BrokerConfig.tls_ca`` when it is set (the
cluster's brokers and controllers serve TLS), plaintext otherwise; the broker's message size
limit in both directions; keepalive pings so that a peer that vanished without closing the
connection (power loss, a network partition) is noticed within seconds instead of at the
operating system's TCP timeout; and short reconnect backoffs so that a restarted peer is
reached again quickly.

Keepalive pings are sent only while a call is in flight (fetch long polls, heartbeats):
gRPC servers by default answer pings on an idle connection more often than every five
minutes with GOAWAY ``too_many_pings``, and an idle connection has nothing to detect.
"""

from __future__ import annotations

import grpc

from broker_nodes.config import BrokerConfig
from broker_nodes.security.tls import channel_credentials

# A ping after this long without any frame from the peer, while a call is in flight.
KEEPALIVE_TIME_MS = 10_000
# The connection is declared dead when a ping is not acknowledged within this long.
KEEPALIVE_TIMEOUT_MS = 5_000
# First and longest wait between reconnection attempts to a peer that refused or dropped the
# connection (gRPC's defaults, 1 s growing to 120 s, would leave a restarted leader unfetched
# for minutes).
INITIAL_RECONNECT_BACKOFF_MS = 100
MAX_RECONNECT_BACKOFF_MS = 2_000


def internal_channel_options(config: BrokerConfig) -> list[tuple[str, int]]:
    """The gRPC channel arguments of every internal channel (see the module docstring)."""
    max_message_bytes = config.integer("socket.request.max.bytes")
    return [
        ("grpc.max_receive_message_length", max_message_bytes),
        ("grpc.max_send_message_length", max_message_bytes),
        ("grpc.keepalive_time_ms", KEEPALIVE_TIME_MS),
        ("grpc.keepalive_timeout_ms", KEEPALIVE_TIMEOUT_MS),
        ("grpc.keepalive_permit_without_calls", 0),
        ("grpc.initial_reconnect_backoff_ms", INITIAL_RECONNECT_BACKOFF_MS),
        ("grpc.max_reconnect_backoff_ms", MAX_RECONNECT_BACKOFF_MS),
    ]


def open_internal_channel(address: str, config: BrokerConfig) -> grpc.Channel:
    """A channel to the broker or controller at ``address`` (``HOST:PORT``), TLS when ``config.tls_ca`` is set.

    Over TLS the peer's certificate must be signed by a CA in ``config.tls_ca`` and name
    ``HOST`` (subjectAltName). The caller closes the channel. Raises TlsConfigurationError
    when the CA file cannot be read or is not PEM.
    """
    options = internal_channel_options(config)
    if config.tls_ca is None:
        return grpc.insecure_channel(address, options=options)
    return grpc.secure_channel(address, channel_credentials(config.tls_ca), options=options)

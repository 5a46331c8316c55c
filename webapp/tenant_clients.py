"""SDK clients through which the control plane acts as one tenant on the brokers.

The dashboard and the REST API reach the data plane (records, consumer groups) through the
SDK against ``settings.WEIR_BOOTSTRAP_SERVERS``, with the internal credential and tenant
impersonation (``weir.internal.token`` + ``weir.tenant``): the brokers then treat each call
as the tenant's own with full rights, and topic and group names stay the tenant's plain
names. Authorization by role happens before any of these clients is made.

Every client is made per request with short timeouts and closed at the end of it: browsing
and administration are rare, and a fresh client keeps the web worker stateless.

A request fails fast when no broker listens at all (:func:`admin_client` tries a TCP
connection to the bootstrap addresses first): the SDK would otherwise retry refused
connections until its deadline, since brokers of a running application come back, while a
page or an API caller is better served by an immediate "unavailable".
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.conf import settings

from weir.admin import AdminClient
from weir.errors import KafkaException

# Deadline of one request to a broker from a page or an API call.
REQUEST_TIMEOUT_SECONDS = 5.0
# Longest the reachability check waits for one bootstrap address to accept a connection.
CONNECT_PROBE_SECONDS = 0.5


class BrokersUnreachable(Exception):
    """No bootstrap address accepted a connection; ``message`` is safe to show to callers."""

    retriable = True

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def client_config(tenant_public_id: str) -> dict[str, Any]:
    """SDK configuration acting as ``tenant_public_id`` with the internal credential."""
    timeout_ms = int(REQUEST_TIMEOUT_SECONDS * 1000)
    # TLS when the brokers serve it; the internal token is the credential either way.
    transport = {"security.protocol": "SSL", "ssl.ca.location": settings.WEIR_BROKER_TLS_CA} if settings.WEIR_BROKER_TLS_CA else {}
    return transport | {
        "bootstrap.servers": settings.WEIR_BOOTSTRAP_SERVERS,
        "client.id": "weir-control-plane",
        "weir.internal.token": settings.WEIR_INTERNAL_TOKEN,
        "weir.tenant": tenant_public_id,
        "request.timeout.ms": timeout_ms,
        "socket.timeout.ms": timeout_ms,
        "retry.backoff.ms": 100,
        "retry.backoff.max.ms": 500,
    }


def require_listening_broker(bootstrap_servers: str, probe_seconds: float = CONNECT_PROBE_SECONDS) -> None:
    """Return when one of ``bootstrap_servers`` (``host:port,...``) accepts a TCP connection;
    raise :class:`BrokersUnreachable` naming them otherwise."""
    addresses = [address.strip() for address in bootstrap_servers.split(",") if address.strip()]
    for address in addresses:
        host, _, port = address.rpartition(":")
        try:
            with socket.create_connection((host.strip("[]"), int(port)), timeout=probe_seconds):
                return
        except (OSError, ValueError):
            continue
    raise BrokersUnreachable(f"No broker answers at {bootstrap_servers}; try again once the brokers are up.")


@contextmanager
def admin_client(tenant_public_id: str) -> Iterator[AdminClient]:
    """An AdminClient acting as the tenant, closed when the ``with`` block ends.

    Raises :class:`BrokersUnreachable` at once when no broker listens.
    """
    require_listening_broker(settings.WEIR_BOOTSTRAP_SERVERS)
    try:
        client = AdminClient(client_config(tenant_public_id))
    except KafkaException as error:
        raise BrokersUnreachable(f"Connecting to the brokers failed: {error.args[0].str()}") from None
    try:
        yield client
    finally:
        client.close()

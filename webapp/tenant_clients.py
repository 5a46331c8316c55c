"""SDK clients through which the control plane acts as one tenant on the brokers.

The dashboard and the REST API reach the data plane (records, consumer groups) through the
SDK against ``settings.WEIR_BOOTSTRAP_SERVERS`` with a tenant token (``weir.tenant.token``,
:mod:`weir.tenant_tokens`): a credential naming one tenant, signed with
``settings.WEIR_TENANT_TOKEN_KEY`` and valid for ``WEIR_TENANT_TOKEN_LIFETIME_SECONDS``
(5 minutes by default), minted afresh for every client. The brokers then treat each call as
the tenant's own with full rights on that tenant's names only, and topic and group names stay
the tenant's plain names. Authorization by role happens before any of these clients is made.

The internal token is never part of these configurations: a configuration that leaks (an
error report, a log line) exposes at most one tenant for minutes. Functions that hold one are
marked ``sensitive_variables`` so that Django's error reports blank their frames and every
frame below them (the SDK's, which hold the same values).

Every client is made per request with short timeouts and closed at the end of it: browsing
and administration are rare, and a fresh client keeps the web worker stateless.

A request fails fast when no broker listens at all (:func:`admin_client` tries a TCP
connection to the bootstrap addresses first): the SDK would otherwise retry refused
connections until its deadline, since brokers of a running application come back, while a
page or an API caller is better served by an immediate "unavailable".
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.views.decorators.debug import sensitive_variables

from weir import tenant_tokens
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


@sensitive_variables()
def tenant_token(tenant_public_id: str, *, now_ms: int | None = None) -> str:
    """A fresh tenant token for ``tenant_public_id``, valid ``WEIR_TENANT_TOKEN_LIFETIME_SECONDS``
    from ``now_ms`` (default: now).

    Raises ImproperlyConfigured naming the setting when the key or the lifetime is unusable.
    """
    try:
        key = tenant_tokens.key_from_hex(settings.WEIR_TENANT_TOKEN_KEY)
    except ValueError as error:
        raise ImproperlyConfigured(f"WEIR_TENANT_TOKEN_KEY: {error}") from None
    lifetime_ms = int(settings.WEIR_TENANT_TOKEN_LIFETIME_SECONDS * 1000)
    if not 0 < lifetime_ms <= tenant_tokens.MAX_LIFETIME_MS:
        raise ImproperlyConfigured(f"WEIR_TENANT_TOKEN_LIFETIME_SECONDS must be more than 0 and at most {tenant_tokens.MAX_LIFETIME_MS // 1000}")
    return tenant_tokens.mint(key, tenant_public_id, now_ms=time.time_ns() // 1_000_000 if now_ms is None else now_ms, lifetime_ms=lifetime_ms)


@sensitive_variables()
def client_config(tenant_public_id: str) -> dict[str, Any]:
    """SDK configuration acting as ``tenant_public_id`` with a fresh tenant token (never the internal token)."""
    timeout_ms = int(REQUEST_TIMEOUT_SECONDS * 1000)
    # TLS when the brokers serve it; the tenant token is the credential either way.
    transport = {"security.protocol": "SSL", "ssl.ca.location": settings.WEIR_BROKER_TLS_CA} if settings.WEIR_BROKER_TLS_CA else {}
    return transport | {
        "bootstrap.servers": settings.WEIR_BOOTSTRAP_SERVERS,
        "client.id": "weir-control-plane",
        "weir.tenant.token": tenant_token(tenant_public_id),
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


@sensitive_variables()
def _open_admin(tenant_public_id: str) -> AdminClient:
    """A new AdminClient acting as the tenant (a function of its own so that its frames, which
    hold the configuration, are blanked in error reports; a generator's cannot be)."""
    try:
        return AdminClient(client_config(tenant_public_id))
    except KafkaException as error:
        raise BrokersUnreachable(f"Connecting to the brokers failed: {error.args[0].str()}") from None


@contextmanager
def admin_client(tenant_public_id: str) -> Iterator[AdminClient]:
    """An AdminClient acting as the tenant, closed when the ``with`` block ends.

    Raises :class:`BrokersUnreachable` at once when no broker listens.
    """
    require_listening_broker(settings.WEIR_BOOTSTRAP_SERVERS)
    client = _open_admin(tenant_public_id)
    try:
        yield client
    finally:
        client.close()

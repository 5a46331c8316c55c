"""Where the current change comes from: the door and client address, set once per door.

The dashboard and REST API get theirs from :class:`AuditContextMiddleware` (every request);
the controller's RPC handler wraps each forwarded admin request in :func:`audit_source` with
the door and client address the broker reported. Actions never take these as arguments:
:func:`webapp.audit.recording.record_event` reads them here. Code that runs outside any
request (Celery tasks, management commands) records the SYSTEM door.
"""

from __future__ import annotations

import contextlib
import ipaddress
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass

from django.http import HttpRequest, HttpResponse

from webapp.audit.models import Door

API_PATH_PREFIX = "/api/"  # requests under it came through the REST API, the rest through the dashboard


@dataclass(frozen=True)
class AuditSource:
    door: str
    client_ip: str | None = None


SYSTEM_SOURCE = AuditSource(Door.SYSTEM)
_current: ContextVar[AuditSource] = ContextVar("weir_audit_source", default=SYSTEM_SOURCE)


def current_source() -> AuditSource:
    return _current.get()


def valid_ip(address: str | None) -> str | None:
    """``address`` when it is an IP address, else None (a broker may report an empty host)."""
    if not address:
        return None
    try:
        return str(ipaddress.ip_address(address))
    except ValueError:
        return None


@contextlib.contextmanager
def audit_source(door: str, client_ip: str | None = None) -> Iterator[AuditSource]:
    """Changes recorded inside the block came through ``door`` from ``client_ip``."""
    source = AuditSource(door, valid_ip(client_ip))
    token = _current.set(source)
    try:
        yield source
    finally:
        _current.reset(token)


def door_of_path(path: str) -> str:
    return Door.REST if path.startswith(API_PATH_PREFIX) else Door.DASHBOARD


class AuditContextMiddleware:
    """Sets the door (REST under /api/, else dashboard) and the client's address for the request.

    The address is REMOTE_ADDR: the web process is reached directly or through a proxy that
    sets it (gunicorn's forwarded-allow-ips); a client-supplied X-Forwarded-For is not trusted.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        with audit_source(door_of_path(request.path), request.META.get("REMOTE_ADDR")):
            return self.get_response(request)

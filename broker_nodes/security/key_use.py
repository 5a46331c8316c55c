"""Which applications use each cluster API key: what the control plane shows before a key is revoked.

An application is what the client says it is (Kafka ``client.id``; KIP-511's client software
name and version from ApiVersions v3+, or the SDK's user agent) plus the address it connects
from. Every value but the address is client-supplied: each is cut to ``MAX_FIELD_CHARS`` and
stripped of control characters here, and each key keeps only its ``MAX_APPLICATIONS_PER_KEY``
most recently seen distinct applications, so a client that invents a new client.id per
connection costs a bounded amount of memory (and of DescribeState). Keys themselves are bounded
by the security snapshot: only keys that authenticated are recorded.

Thread-safe (one lock, held for a few dictionary operations per call).
"""

from __future__ import annotations

import functools
import threading
from collections import OrderedDict
from dataclasses import dataclass

# Distinct applications kept per key: the most recently seen ones.
MAX_APPLICATIONS_PER_KEY = 20
# Longest client-supplied value kept (client.id, software name, software version), in characters.
MAX_FIELD_CHARS = 128
# What the SDK puts first in its gRPC user agent: ``weir-python/<client.id> grpc-python/...``.
SDK_USER_AGENT_PREFIX = "weir-python/"
SDK_SOFTWARE_NAME = "weir-python"
_GRPC_PYTHON_PRODUCT = " grpc-python/"


def clean(value: str | None) -> str:
    """A client-supplied value made safe to keep: printable characters only, at most ``MAX_FIELD_CHARS``."""
    if not value:
        return ""
    value = value[: MAX_FIELD_CHARS * 2]
    if not value.isprintable():
        value = "".join(char if char.isprintable() else "?" for char in value)
    return value[:MAX_FIELD_CHARS]


@dataclass(frozen=True, slots=True)
class ClientApplication:
    """One application as a broker sees it; build it with :func:`application` (which cleans the values)."""

    client_id: str
    software_name: str
    software_version: str
    address: str


def application(client_id: str | None, software_name: str | None, software_version: str | None, address: str) -> ClientApplication:
    """A :class:`ClientApplication` from client-supplied values (cleaned and bounded)."""
    return ClientApplication(clean(client_id), clean(software_name), clean(software_version), clean(address))


# User agents longer than this are cut before parsing (a client.id past MAX_FIELD_CHARS is cut anyway).
_MAX_USER_AGENT_CHARS = 512


def grpc_application(user_agent: str | None, address: str) -> ClientApplication:
    """The application of a gRPC call from its ``user-agent`` metadata and the client's address.

    The SDK's agent is ``weir-python/<client.id> grpc-python/<version> grpc-c/...``: its
    client.id and software ``weir-python`` (the agent carries no SDK version). Another gRPC client's agent gives its
    first product as the software name and version, with no client.id.
    """
    client_id, name, version = _parse_user_agent((user_agent or "")[:_MAX_USER_AGENT_CHARS])
    return ClientApplication(client_id, name, version, clean(address))


@functools.lru_cache(maxsize=256)
def _parse_user_agent(user_agent: str) -> tuple[str, str, str]:
    """(client.id, software name, software version) of a gRPC user agent, each cleaned. Cached
    (bounded in entries and, by the caller's cut, in size): clients send one agent on every call.

    A client.id may itself contain spaces, so the SDK's part ends at the last `` grpc-python/``
    (gRPC's own product comes after anything the client.id holds).
    """
    if user_agent.startswith(SDK_USER_AGENT_PREFIX):
        cut = user_agent.rfind(_GRPC_PYTHON_PRODUCT)
        client_id = user_agent[len(SDK_USER_AGENT_PREFIX) : cut if cut != -1 else None]
        return clean(client_id), SDK_SOFTWARE_NAME, ""
    name, _, version = user_agent.split(" ", 1)[0].partition("/")
    return "", clean(name), clean(version)


class KeyUse:
    """Per cluster key: when it last authenticated a call, and its recent distinct applications."""

    def __init__(self, max_applications: int = MAX_APPLICATIONS_PER_KEY) -> None:
        self._max_applications = max_applications
        self._lock = threading.Lock()
        # api key -> ms of its last successful authentication.
        self._last_used: dict[str, int] = {}
        # api key -> application -> [first seen ms, last seen ms], least recently seen first.
        self._applications: dict[str, OrderedDict[ClientApplication, list[int]]] = {}

    def used(self, api_key: str, now_ms: int, app: ClientApplication | None = None) -> None:
        """Note that ``api_key`` authenticated a call at ``now_ms`` (by ``app`` when known)."""
        self._last_used[api_key] = now_ms  # one atomic dict store (GIL), as before applications were kept
        if app is not None:
            self.seen(api_key, app, now_ms)

    def seen(self, api_key: str, app: ClientApplication, now_ms: int) -> None:
        """Note ``app`` using ``api_key`` at ``now_ms``; the least recently seen application goes past the bound."""
        with self._lock:
            apps = self._applications.get(api_key)
            if apps is None:
                apps = self._applications[api_key] = OrderedDict()
            seen = apps.get(app)
            if seen is not None:
                seen[1] = max(seen[1], now_ms)
                apps.move_to_end(app)
                return
            apps[app] = [now_ms, now_ms]
            while len(apps) > self._max_applications:
                apps.popitem(last=False)

    def last_used(self) -> dict[str, int]:
        """When each key last authenticated a call here (since this process started)."""
        return dict(self._last_used)

    def applications(self, api_key: str) -> list[tuple[ClientApplication, int, int]]:
        """``api_key``'s applications with first and last seen (ms), least recently seen first."""
        with self._lock:
            return [(app, first, last) for app, (first, last) in self._applications.get(api_key, {}).items()]

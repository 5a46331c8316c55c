"""The Kafka-protocol handler registry and the context every handler receives.

The Kafka listener (``server.py`` / ``connection.py``) decodes one request frame into a kio
request object of the version the client sent, builds a :class:`KafkaRequestContext` (the
SASL-authenticated caller re-resolved against the current security snapshot for *every*
request, so ACL changes and key revocation apply at once) and calls the handler registered
for the request's API key on a worker thread. A handler is a thin conversion: kio request ->
the transport-neutral logic in ``broker_nodes.requests`` -> the kio response of the *same*
version. Per-partition outcomes are error codes in the response, never exceptions; an
exception escaping a handler is logged and the connection closed (what Kafka does with a
request it cannot answer).

Waiting: a handler whose request must wait (a long-poll Fetch, an acks=all Produce, a JoinGroup
or SyncGroup until its rebalance) never blocks its worker thread. It starts the request in the
transport-neutral layer, which hands back a ``partition_waitlist.Pending`` (the same steps the
gRPC servicer runs blocking), and returns :func:`answer_when_done` of it: the response at once
when the first step finishes the request, otherwise a :class:`Continuation`. The connection then
parks the request on the listener's event loop: it subscribes to the pending's wake signal (the
callback completes an asyncio future through ``loop.call_soon_threadsafe``), arms a loop timer
for its deadline, and holds no thread; after each wake-up or the deadline it runs the next step
on a worker thread, and once the request is done the continuation's ``finish`` (on a worker
thread) builds the response. The connection always releases the pending: when it is answered,
when the client disconnects while it waits, and when the listener stops.

Where handlers run: on a worker thread, except the requests the connection answers on the event
loop thread itself to spare two thread hand-offs (small Produce requests, ``context.on_loop``),
whose handler raises :class:`WorkerThreadNeeded` when the request may block after all.

Throttling: a handler puts the neutral layer's ``throttle_ms`` into the response's
``throttle_time`` (kio's name for Kafka's ``throttle_time_ms``, a ``datetime.timedelta``); a
response whose ``throttle_time`` is above zero mutes the connection for that long after it is
sent (KIP-219). Handlers never sleep for quotas.

Handlers register with :func:`handles` in modules under ``broker_nodes.kafka_protocol.handlers``;
that package's ``__init__`` imports every handler module, so ApiVersions answers exactly what is
registered here. The registry is filled at import time and only read afterwards (thread-safe).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, NamedTuple

from kio.schema.index import api_key_map, schema_name_map

from broker_nodes.partition_waitlist import Pending, wait_blocking
from broker_nodes.security.access import CallContext

if TYPE_CHECKING:
    from broker_nodes.server.broker import Broker


@dataclass(frozen=True, slots=True)
class KafkaListener:
    """This broker's Kafka listener as clients should reach it (advertised host and port)."""

    node_id: int
    host: str
    port: int
    rack: str = ""


@dataclass(frozen=True, slots=True)
class KafkaRequestContext:
    """One Kafka request's surroundings: the broker, the caller, and the request header's fields.

    ``on_loop``: the handler runs on the listener's event loop thread (see :class:`WorkerThreadNeeded`).
    """

    broker: Broker
    call: CallContext
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    listener: KafkaListener
    on_loop: bool = False


class WorkerThreadNeeded(Exception):
    """Raised by a handler running on the event loop (``context.on_loop``), before it changed anything,
    when its request may block its thread: the listener then answers the request on a worker thread.

    Only the API keys the connection lists as answered on the loop (``connection.LOOP_API_KEYS``) get
    there; their handlers raise this for whatever may wait on another process or on disk beyond an
    append of a small batch to the page cache (a transactional produce verified with its
    coordinator, a topic whose records are checked against the schema registry, a large request).
    """

    retriable = True


Handler = Callable[[KafkaRequestContext, Any], Any]
"""kio request object -> kio response object of the same API version, :data:`NO_RESPONSE`, or a :class:`Continuation`."""


@dataclass(frozen=True, slots=True)
class Continuation:
    """A handler's answer when its request must wait: the listener drives ``pending`` without a thread,
    then calls ``finish`` on a worker thread for the response (or :data:`NO_RESPONSE`)."""

    pending: Pending
    finish: Callable[[], Any]


def answer_when_done(pending: Pending, finish: Callable[[], Any]) -> Any:
    """Run ``pending``'s first step here: ``finish()`` when that ends it, else a :class:`Continuation` to park."""
    try:
        done = pending.advance()
    except BaseException:
        pending.release()
        raise
    if not done:
        return Continuation(pending, finish)
    pending.release()
    return finish()


def answer_blocking(answer: Any) -> Any:
    """A handler's answer with any :class:`Continuation` run to its end on this thread (in-process callers and tests)."""
    if not isinstance(answer, Continuation):
        return answer
    wait_blocking(answer.pending, started=True)
    return answer.finish()


@dataclass(frozen=True, slots=True)
class EncodedResponse:
    """A response body a handler encoded itself, bytes identical to kio's (the hottest answers, see
    ``handlers.produce_response``); the listener adds the response header of ``flexible_header``'s kind."""

    api_key: int
    api_version: int
    flexible_header: bool  # response header v1 (a tagged-field section after the correlation id), else v0
    body: bytes
    throttle_ms: int  # the response's throttle_time_ms, which mutes the connection (KIP-219)


NO_RESPONSE = None
"""A handler's answer when Kafka sends nothing back (Produce with acks=0): the connection sends no
frame for that request, keeps the connection open and goes on with the next one."""


@dataclass(frozen=True, slots=True)
class Registration:
    """The handler of one API key and the version range it answers (both ends included)."""

    api_key: int
    min_version: int
    max_version: int
    handler: Handler

    def supports(self, version: int) -> bool:
        return self.min_version <= version <= self.max_version


class DuplicateHandlerError(RuntimeError):
    """Two handlers registered for one API key: a programming error caught at import time."""

    retriable = False


class UnknownApiVersionError(ValueError):
    """A handler registered for an API key or version kio has no schema for."""

    retriable = False


_registry: dict[int, Registration] = {}


def handles(api_key: int, min_version: int, max_version: int) -> Callable[[Handler], Handler]:
    """Register the decorated function as the handler of ``api_key`` versions ``min_version``..``max_version``.

    Refuses (at import time) a second handler for the same key and a version kio cannot decode,
    so ApiVersions never advertises a version the listener cannot read.
    """
    name = api_key_map.get(api_key)
    if name is None:
        raise UnknownApiVersionError(f"kio knows no Kafka API with key {api_key}")
    if not 0 <= min_version <= max_version:
        raise UnknownApiVersionError(f"API {name} (key {api_key}): version range {min_version}..{max_version} is empty or negative")
    missing = [version for version in range(min_version, max_version + 1) if version not in schema_name_map[name]]
    if missing:
        raise UnknownApiVersionError(f"API {name} (key {api_key}): kio has no schema for version(s) {missing}")

    def register(handler: Handler) -> Handler:
        existing = _registry.get(api_key)
        if existing is not None:
            raise DuplicateHandlerError(f"API {name} (key {api_key}) already has a handler: {existing.handler.__module__}.{existing.handler.__qualname__}")
        _registry[api_key] = Registration(api_key, min_version, max_version, handler)
        return handler

    return register


def registrations() -> Mapping[int, Registration]:
    """Every registered API key's registration (read-only view), after ``handlers`` was imported."""
    return MappingProxyType(_registry)


def registration(api_key: int) -> Registration | None:
    """The registration of ``api_key``, or None when no handler answers it."""
    return _registry.get(api_key)


class KafkaEndpoint(NamedTuple):
    """One broker as Metadata/FindCoordinator/DescribeCluster advertise it to Kafka clients."""

    node_id: int
    host: str
    port: int
    rack: str


def kafka_endpoints(broker: Broker, listener: KafkaListener) -> list[KafkaEndpoint]:
    """Every broker's Kafka endpoint, in node id order: from the pushed cluster map when the broker is managed.

    Brokers in the map that have no Kafka listener (``kafka_port`` 0: not started with one, or
    registered by an older version) are left out, because a client could not reach them. This
    broker always answers with its own listener's advertised address (it is the one the client
    is talking to). Standalone, this broker is the whole cluster.
    """
    own = KafkaEndpoint(listener.node_id, listener.host, listener.port, listener.rack)
    snapshot = broker.cluster_state.snapshot
    if snapshot is None:
        return [own]
    endpoints = {node.node_id: KafkaEndpoint(node.node_id, node.host, node.kafka_port, node.rack) for node in snapshot.brokers if node.kafka_port > 0}
    endpoints[own.node_id] = own
    return [endpoints[node_id] for node_id in sorted(endpoints)]

"""The Kafka-protocol listener of one broker: an asyncio server on its own thread, handlers on a bounded pool.

One event loop thread owns every socket (accepting, TLS, reading frames, writing responses,
timeouts) and every parked request: a long-poll fetch, an acks=all produce or a JoinGroup/SyncGroup
waiting for its rebalance waits there as a future and a loop timer (``api.Continuation``), holding
no thread; a slow client holds nothing but its own coroutine. Small Produce requests are answered
on the loop thread itself (see ``connection``: a hand-off costs more than such a request), pipelined
requests that arrived together in one worker call. Handlers' other steps run on thread pools:
requests that answer at once (``connection.QUICK_API_KEYS``) have ``kafka.handler.threads``
workers of their own, the others ``kafka.waiting.handler.threads`` (which the requests that still
block while they wait, offset commits and administration forwarded to the controller, hold), so
heartbeats and ApiVersions are never queued behind them. Limits: ``max.connections`` open connections
(one beyond is closed as it is accepted), ``socket.request.max.bytes`` per frame,
``queued.max.request.bytes`` of request bytes in flight (shared with the gRPC port),
``connections.max.idle.ms`` and ``kafka.request.read.timeout.ms``; see ``connection``.

Lifecycle: :meth:`KafkaServer.start` binds and returns once listening (raising OSError when it
cannot); :meth:`KafkaServer.close_listener` stops accepting; :meth:`KafkaServer.stop` also
closes idle connections at once, lets requests being answered finish (up to the grace), closes
the rest and ends the thread. With a TLS certificate in the config the listener speaks TLS only
(SASL_SSL), with the certificate the gRPC port uses.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import ssl
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

from broker_nodes.config import ListenAddress
from broker_nodes.kafka_protocol import api
from broker_nodes.kafka_protocol.limits import ConnectionLimits, limits_from_config
from broker_nodes.metrics.kafka import KafkaMetrics
from broker_nodes.server.request_budget import RequestBudget

if TYPE_CHECKING:
    from broker_nodes.kafka_protocol.connection import ConnectionServices, KafkaConnection
    from broker_nodes.server.broker import Broker

logger = logging.getLogger(__name__)

START_TIMEOUT_SECONDS = 10.0  # how long start() waits for the loop thread to bind
LISTEN_BACKLOG = 1024  # pending accepts the kernel keeps (a thousand clients connecting at once)


def server_ssl_context(certificate_chain: Path, private_key: Path) -> ssl.SSLContext:
    """A TLS server context with the broker's certificate (the one its gRPC port serves)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(str(certificate_chain), str(private_key))
    return context


def load_protocol() -> tuple[type[ConnectionServices], type[KafkaConnection]]:
    """Import the connection and every request handler (every handler registered before the first
    request is read). Done on the first client connection, not at broker start: kio's schemas cost
    about a second of CPU to import, which a broker no Kafka client reaches need not pay."""
    from broker_nodes.kafka_protocol import handlers
    from broker_nodes.kafka_protocol.connection import ConnectionServices, KafkaConnection

    del handlers  # imported for its side effect
    return ConnectionServices, KafkaConnection


def _client_host(peer: object) -> str:
    return str(peer[0]) if isinstance(peer, tuple) and peer else ""


def _describe_peer(peer: object) -> str:
    if isinstance(peer, tuple) and len(peer) >= 2:
        host = str(peer[0])
        return f"[{host}]:{peer[1]}" if ":" in host else f"{host}:{peer[1]}"
    return str(peer)


class KafkaServer:
    """One broker's Kafka listener. ``start``/``stop`` from one owner thread; connections live on the loop thread."""

    def __init__(
        self,
        broker: Broker,
        address: ListenAddress,
        *,
        budget: RequestBudget | None = None,
        metrics: KafkaMetrics | None = None,
        limits: ConnectionLimits | None = None,
    ) -> None:
        config = broker.config
        self._broker = broker
        self._address = address
        self._budget = budget
        self.metrics = metrics if metrics is not None else KafkaMetrics()
        self._limits = limits if limits is not None else limits_from_config(config)
        self._max_connections = config.integer("max.connections")
        self._advertised_port = config.integer("kafka.advertised.port")
        self._ssl = server_ssl_context(config.tls_cert, config.tls_key) if config.tls_cert is not None and config.tls_key is not None else None
        self._executor = ThreadPoolExecutor(max_workers=config.integer("kafka.handler.threads"), thread_name_prefix="kafka-handler")
        self._waiting_executor = ThreadPoolExecutor(max_workers=config.integer("kafka.waiting.handler.threads"), thread_name_prefix="kafka-waiting")
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: asyncio.Server | None = None
        self._connections: dict[KafkaConnection, asyncio.Task[None]] = {}
        self._protocol: tuple[type[ConnectionServices], type[KafkaConnection]] | None = None  # load_protocol(), on the first connection
        self.port = 0
        self.listener: api.KafkaListener | None = None

    @property
    def connection_count(self) -> int:
        return len(self._connections)

    def start(self) -> int:
        """Bind and start serving on the loop thread; the bound port. Raises OSError when the address cannot be bound."""
        started = threading.Event()
        failure: list[BaseException] = []

        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            try:
                loop.run_until_complete(self._listen())
            except BaseException as error:  # reported to start()'s caller
                failure.append(error)
                started.set()
                loop.close()
                return
            started.set()
            try:
                loop.run_forever()
            finally:
                loop.close()

        self._thread = threading.Thread(target=run, name="kafka-listener", daemon=True)
        self._thread.start()
        if not started.wait(START_TIMEOUT_SECONDS):
            raise OSError(f"the Kafka listener did not bind {self._address.host}:{self._address.port} within {START_TIMEOUT_SECONDS} s")
        if failure:
            self._thread.join(START_TIMEOUT_SECONDS)
            self._executor.shutdown(wait=False)
            self._waiting_executor.shutdown(wait=False)
            raise OSError(f"cannot listen for Kafka clients on {self._address.host}:{self._address.port} (kafka.listen): {failure[0]}") from failure[0]
        config = self._broker.config
        self.listener = api.KafkaListener(config.node_id, config.host_for_clients, self._advertised_port or self.port, config.rack)
        logger.info("Kafka protocol served on %s:%d%s", self._address.host, self.port, " (TLS)" if self._ssl is not None else "")
        return self.port

    async def _listen(self) -> None:
        self._server = await asyncio.start_server(
            self._accept,
            host=self._address.host,
            port=self._address.port,
            ssl=self._ssl,
            ssl_handshake_timeout=self._limits.read_timeout if self._ssl is not None else None,
            backlog=LISTEN_BACKLOG,
            reuse_address=True,
        )
        self.port = int(self._server.sockets[0].getsockname()[1])

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peername")
        described = _describe_peer(peer)
        if len(self._connections) >= self._max_connections:
            self.metrics.closed.labels("too_many").inc()
            logger.info("Kafka connection from %s refused: %d connections are open (max.connections)", described, self._max_connections)
            writer.close()
            return
        sock = writer.get_extra_info("socket")
        if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if self._protocol is None:
            self._protocol = await asyncio.get_running_loop().run_in_executor(self._executor, load_protocol)
        services_type, connection_type = self._protocol
        services = services_type(self._broker, self._current_listener(), self._executor, self._waiting_executor, self._budget, self.metrics)
        connection = connection_type(reader, writer, services, self._limits, described, _client_host(peer))
        task = asyncio.current_task()
        assert task is not None
        self._connections[connection] = task
        try:
            await connection.serve()
        finally:
            self._connections.pop(connection, None)

    def _current_listener(self) -> api.KafkaListener:
        if self.listener is not None:
            return self.listener
        config = self._broker.config
        return api.KafkaListener(config.node_id, config.host_for_clients, self._advertised_port or self.port, config.rack)

    def close_listener(self) -> None:
        """Stop accepting connections (the open ones keep being served until :meth:`stop`)."""
        loop, server = self._loop, self._server
        if loop is None or server is None or loop.is_closed():
            return
        loop.call_soon_threadsafe(server.close)

    def stop(self, grace_seconds: float = 5.0) -> None:
        """Stop accepting, close idle connections, let requests in progress finish (up to the grace), close the rest."""
        loop = self._loop
        if loop is None or loop.is_closed() or self._thread is None:
            return
        try:
            asyncio.run_coroutine_threadsafe(self._drain(grace_seconds), loop).result(grace_seconds + 5.0)
        except Exception:
            logger.exception("the Kafka listener did not drain cleanly")
        loop.call_soon_threadsafe(loop.stop)
        self._thread.join(grace_seconds + 5.0)
        self._executor.shutdown(wait=False, cancel_futures=True)
        self._waiting_executor.shutdown(wait=False, cancel_futures=True)
        logger.info("Kafka listener stopped (port %d)", self.port)

    async def _drain(self, grace_seconds: float) -> None:
        if self._server is not None:
            self._server.close()
        for connection, task in list(self._connections.items()):
            connection.stopping = True
            if not connection.busy:
                task.cancel()
            else:
                connection.wake_parked()  # a parked long poll answers now with what it has; other waits end the connection
        tasks = list(self._connections.values())
        if tasks:
            _, pending = await asyncio.wait(tasks, timeout=grace_seconds)
            for task in pending:
                task.cancel()
            if pending:
                await asyncio.wait(pending, timeout=1.0)

"""The broker's session with the controller: registration, heartbeats and calls to the active controller.

A broker started with ``--controller HOST:PORT[,HOST:PORT]`` registers (node id, the address
clients and other brokers reach it at, rack) and then heartbeats every
``broker.heartbeat.interval.ms``. The controller answers each registration with a new broker
epoch; a heartbeat refused as STALE_BROKER_EPOCH (the session expired and the broker was
fenced, or it was replaced) makes the broker register again, which starts a new session and
lets the controller give it back the partitions it can lead.

Only one controller is active; standbys do not listen, and a deposed one answers
NOT_CONTROLLER. Every call goes to the controller that answered last and moves on to the
next address when that one is unreachable or not the controller, so the broker follows a
failover of the controller by itself.

Leases: while registered, the broker also holds a ``BrokerLease`` stream open to the active
controller (on its own thread), so that its death is seen from the closed connection rather
than only after the session timeout; a stream that ends for any reason is opened again at once
(after LEASE_RETRY_SECONDS the second time in a row), for the current session, to the address
that answered last. A controller without leases (UNIMPLEMENTED) is asked again only every
heartbeat interval: heartbeats alone keep the session then.

Controller epochs: every answer carries the epoch of the controller that gave it, and cluster
maps pushed by a controller carry it too. :meth:`ControllerClient.observe_controller_epoch`
keeps the newest seen, so that a map from a deposed controller (an older epoch) is refused.

Thread-safety: the session runs on its own thread; :meth:`call` may be used from any thread
(a lock guards the channels and the current address).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import grpc

from grpc_protos.weir.v1 import controller_pb2, controller_pb2_grpc
from server_runtime.request_ids import with_request_id
from weir.errors import ErrorCode

logger = logging.getLogger(__name__)

INTERNAL_TOKEN_METADATA = "x-weir-internal-token"
CALL_TIMEOUT_SECONDS = 5.0  # one call to one controller address
REGISTRATION_RETRY_SECONDS = 1.0  # pause between rounds of registration attempts
LEASE_RETRY_SECONDS = 0.1  # pause before opening a lease again after one ended right away
_UNREACHABLE = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.CANCELLED)

ChannelFactory = Callable[[str], grpc.Channel]


class ControllerUnavailableError(Exception):
    """No controller address answered as the active controller."""

    retriable = True

    def __init__(self, addresses: Sequence[str], last_problem: str) -> None:
        super().__init__(f"no active controller at {', '.join(addresses)} ({last_problem})")
        self.addresses = tuple(addresses)
        self.last_problem = last_problem


class ControllerClient:
    """See the module docstring. ``start`` once the broker serves; ``stop`` at shutdown."""

    def __init__(
        self,
        addresses: Sequence[str],
        *,
        node_id: int,
        rack: str,
        internal_token: str,
        heartbeat_interval_ms: int,
        channel_factory: ChannelFactory,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        if not addresses:
            raise ValueError("a controller client needs at least one controller address")
        self.addresses = tuple(addresses)
        self.node_id = node_id
        self.rack = rack
        self._metadata = ((INTERNAL_TOKEN_METADATA, internal_token),)
        self._heartbeat_seconds = heartbeat_interval_ms / 1000.0
        self._channel_factory = channel_factory
        self._monotonic = monotonic
        self._lock = threading.Lock()
        self._channels: dict[str, grpc.Channel] = {}
        self._current = 0  # index of the address that answered last
        self._host = ""
        self._port = 0
        self._kafka_port = 0
        self._broker_epoch = 0
        self._controller_epoch = 0
        self._stopping = threading.Event()
        # Set once a controlled shutdown starts: the session may end (the controller ends it when
        # nothing is left to move) and must not start again, or the stopping broker would be
        # electable once more and then fenced: an unclean failover instead of a clean stop.
        self._shutting_down = threading.Event()
        self._reregister = threading.Event()
        self.registered = threading.Event()
        self._thread: threading.Thread | None = None
        self._lease_thread: threading.Thread | None = None
        self._lease_call: Any = None  # the lease stream held now (a grpc call), to cancel
        self._lease_wake = threading.Event()  # ends a pause between leases (a new session, stop)

    # ------------------------------------------------------------------ state

    @property
    def broker_epoch(self) -> int:
        """This broker's session epoch; 0 while it is not registered."""
        return self._broker_epoch

    @property
    def controller_epoch(self) -> int:
        """The newest controller epoch seen in an answer or a pushed map."""
        return self._controller_epoch

    def observe_controller_epoch(self, epoch: int) -> bool:
        """Note ``epoch``; False when it is older than one already seen (a deposed controller)."""
        with self._lock:
            if epoch < self._controller_epoch:
                return False
            self._controller_epoch = epoch
            return True

    def session_lost(self, broker_epoch: int) -> None:
        """A call answered STALE_BROKER_EPOCH for ``broker_epoch``: register again (if it is still the current one)."""
        with self._lock:
            if broker_epoch != self._broker_epoch or broker_epoch == 0:
                return
            self._broker_epoch = 0
        self.registered.clear()
        self._reregister.set()
        self._cancel_lease()

    # ------------------------------------------------------------------ lifecycle

    def start(self, host: str, port: int, kafka_port: int = 0) -> None:
        """Register as ``host:port`` (and the Kafka listener's ``kafka_port``, 0: none) in the background and keep the session alive."""
        self._host, self._port, self._kafka_port = host, port, kafka_port
        self._thread = threading.Thread(target=self._run, name="controller-session", daemon=True)
        self._thread.start()
        self._lease_thread = threading.Thread(target=self._hold_leases, name="controller-lease", daemon=True)
        self._lease_thread.start()

    def stop(self) -> None:
        self._stopping.set()
        self._reregister.set()
        self.registered.set()  # wakes the lease thread
        self._lease_wake.set()
        self._cancel_lease()
        if self._thread is not None:
            self._thread.join(CALL_TIMEOUT_SECONDS * 2)
        if self._lease_thread is not None:
            self._lease_thread.join(CALL_TIMEOUT_SECONDS)
        with self._lock:
            channels = list(self._channels.values())
            self._channels.clear()
        for channel in channels:
            channel.close()

    def _run(self) -> None:
        unreachable_logged = False
        while not self._stopping.is_set():
            try:
                if self._broker_epoch == 0:
                    if self._shutting_down.is_set():
                        self._reregister.wait(self._heartbeat_seconds)
                        continue
                    self._register()
                    unreachable_logged = False
                else:
                    self._heartbeat()
                    unreachable_logged = False
            except ControllerUnavailableError as error:
                if not unreachable_logged:
                    logger.warning("%s; retrying", error)
                    unreachable_logged = True
            except Exception:
                logger.exception("controller session step failed; retrying")
            wait = self._heartbeat_seconds if self._broker_epoch else min(self._heartbeat_seconds, REGISTRATION_RETRY_SECONDS)
            self._reregister.wait(wait)
            self._reregister.clear()

    def _register(self) -> None:
        request = controller_pb2.RegisterBrokerRequest(node_id=self.node_id, host=self._host, port=self._port, rack=self.rack, kafka_port=self._kafka_port)
        response: controller_pb2.RegisterBrokerResponse = self.call("RegisterBroker", request)
        if response.error_code != ErrorCode.NO_ERROR:
            raise ControllerUnavailableError(self.addresses, f"registration refused with error {response.error_code}")
        with self._lock:
            self._broker_epoch = response.broker_epoch
            self._controller_epoch = max(self._controller_epoch, response.controller_epoch)
        self._cancel_lease()  # a lease of an older session: hold one for this session instead
        self._lease_wake.set()
        self.registered.set()
        logger.info(
            "registered with the controller (epoch %d) as broker %d at %s:%d: broker epoch %d, session timeout %d ms",
            response.controller_epoch,
            self.node_id,
            self._host,
            self._port,
            response.broker_epoch,
            response.session_timeout_ms,
        )

    def _heartbeat(self) -> None:
        epoch = self._broker_epoch
        response: controller_pb2.BrokerHeartbeatResponse = self.call(
            "BrokerHeartbeat", controller_pb2.BrokerHeartbeatRequest(node_id=self.node_id, broker_epoch=epoch)
        )
        if response.controller_epoch:
            self.observe_controller_epoch(response.controller_epoch)
        if response.fenced or response.error_code == ErrorCode.STALE_BROKER_EPOCH:
            logger.warning("the controller fenced broker epoch %d (the session expired); registering again", epoch)
            self.session_lost(epoch)

    # ------------------------------------------------------------------ lease

    def _hold_leases(self) -> None:
        """Hold a lease stream for the current session while registered (see the module docstring)."""
        quick_end = False
        while not self._stopping.is_set():
            epoch = self._broker_epoch
            if epoch == 0:
                self.registered.wait(self._heartbeat_seconds)
                continue
            started = self._monotonic()
            pause = self._hold_lease(epoch)
            # A lease that ended right after it opened twice in a row waits a little before the next.
            ended_at_once = self._monotonic() - started < LEASE_RETRY_SECONDS
            if pause or (quick_end and ended_at_once):
                self._lease_wake.wait(pause or LEASE_RETRY_SECONDS)
                self._lease_wake.clear()
            quick_end = ended_at_once

    def _hold_lease(self, epoch: int) -> float:
        """Open a lease for ``epoch`` and hold it until it ends; the seconds to pause before the next."""
        with self._lock:
            address = self.addresses[self._current]
        stub = controller_pb2_grpc.ControllerStub(self._channel(address))
        call = stub.BrokerLease(controller_pb2.BrokerLeaseRequest(node_id=self.node_id, broker_epoch=epoch), metadata=self._metadata)
        with self._lock:
            if self._stopping.is_set() or epoch != self._broker_epoch:
                call.cancel()
                return 0.0
            self._lease_call = call
        try:
            for event in call:
                if event.error_code == ErrorCode.NO_ERROR:
                    logger.debug("lease held at %s for broker epoch %d", address, epoch)
                    continue
                # NOT_CONTROLLER: heartbeats find the active controller; STALE: they register again.
                logger.debug("lease refused by %s with error %d", address, event.error_code)
                return self._heartbeat_seconds
        except grpc.RpcError as error:
            code = error.code()
            if code == grpc.StatusCode.CANCELLED:
                return 0.0
            if code in (grpc.StatusCode.UNIMPLEMENTED, grpc.StatusCode.RESOURCE_EXHAUSTED, grpc.StatusCode.UNAUTHENTICATED):
                logger.info("the controller at %s holds no lease for this broker (%s); heartbeats alone keep the session", address, code.name)
                return self._heartbeat_seconds
            logger.debug("lease at %s ended: %s", address, code.name)
        finally:
            with self._lock:
                if self._lease_call is call:
                    self._lease_call = None
        return 0.0

    def _cancel_lease(self) -> None:
        with self._lock:
            call, self._lease_call = self._lease_call, None
        if call is not None:
            call.cancel()

    # ------------------------------------------------------------------ calls

    def call(self, method: str, request: object, *, timeout: float = CALL_TIMEOUT_SECONDS) -> Any:
        """Call ``method`` on the active controller, trying each address once from the last good one;
        its answer is the ``<method>Response`` message of controller.proto (callers annotate it).

        Raises ControllerUnavailableError when none answers as the active controller; a
        response whose ``error_code`` is NOT_CONTROLLER counts as no answer.
        """
        last_problem = "no address tried"
        with self._lock:
            start = self._current
        for step in range(len(self.addresses)):
            index = (start + step) % len(self.addresses)
            address = self.addresses[index]
            stub = controller_pb2_grpc.ControllerStub(self._channel(address))
            try:
                # A call made while serving a client's call (forwarded topic admin) carries its request id.
                response = getattr(stub, method)(request, metadata=with_request_id(self._metadata), timeout=timeout)
            except grpc.RpcError as error:
                code = error.code()
                if code not in _UNREACHABLE:
                    raise
                last_problem = f"{address}: {code.name}"
                continue
            if getattr(response, "error_code", ErrorCode.NO_ERROR) == ErrorCode.NOT_CONTROLLER:
                last_problem = f"{address} is not the active controller"
                continue
            with self._lock:
                if index != self._current:
                    logger.info("the active controller is now %s", address)
                self._current = index
            return response
        raise ControllerUnavailableError(self.addresses, last_problem)

    def _channel(self, address: str) -> grpc.Channel:
        with self._lock:
            channel = self._channels.get(address)
            if channel is None:
                channel = self._channels[address] = self._channel_factory(address)
            return channel

    # ------------------------------------------------------------------ controlled shutdown

    def controlled_shutdown(self, timeout_seconds: float, *, retry_seconds: float = 0.5) -> bool:
        """Ask the controller to move this broker's leaderships away; True once none is left.

        Repeats while partitions remain (no other in-sync replica yet) until ``timeout_seconds``;
        False when time ran out or the broker has no session (then it stops without it).
        """
        deadline = self._monotonic() + timeout_seconds
        self._shutting_down.set()
        while True:
            epoch = self._broker_epoch
            if epoch == 0:
                logger.warning("controlled shutdown skipped: not registered with a controller")
                return False
            remaining_seconds = deadline - self._monotonic()
            try:
                response: controller_pb2.ControlledShutdownResponse = self.call(
                    "ControlledShutdown",
                    controller_pb2.ControlledShutdownRequest(node_id=self.node_id, broker_epoch=epoch),
                    timeout=max(0.1, min(CALL_TIMEOUT_SECONDS, remaining_seconds)),
                )
            except (ControllerUnavailableError, grpc.RpcError) as error:
                logger.warning("controlled shutdown: %s", error)
            else:
                if response.error_code == ErrorCode.NO_ERROR and not response.remaining_partitions:
                    logger.info("controlled shutdown: the controller moved every leadership away")
                    self._stopping.set()  # no more heartbeats: the session ended with the shutdown
                    return True
                if response.error_code == ErrorCode.STALE_BROKER_EPOCH:
                    logger.warning("controlled shutdown: the session had already ended")
                    return False
                if response.error_code != ErrorCode.NO_ERROR:
                    logger.warning("controlled shutdown refused with error %d", response.error_code)
                else:
                    logger.info("controlled shutdown: %d partitions have no other in-sync replica yet", len(response.remaining_partitions))
            if self._monotonic() + retry_seconds >= deadline:
                logger.warning("controlled shutdown timed out after %.1f s; stopping anyway", timeout_seconds)
                return False
            time.sleep(retry_seconds)

"""The controller's behaviour: sessions in memory, decisions in the database, pushes after.

Every change that reaches the catalog is followed, after its transaction commits, by a push
of the new PARTITIONS snapshot to every broker not known to be offline
(``webapp.provisioning.push``). A failed push is logged, not retried here: the broker keeps
its older cluster map until the next push or the reconciler's, and stale maps are harmless
because every map carries leader epochs that brokers check.

The service acts under the controller epoch it won when it became active (``epoch``). When
an action finds that a newer controller exists, the service is *fenced* for good: every later
call raises ``ControllerFencedError`` (the servicer answers NOT_CONTROLLER) and
``run_controller`` steps down.

Failure detection: a broker's session expires after ``broker.session.timeout.ms`` without a
heartbeat, which also covers a broker that is alive but stalled (SIGSTOP, an overloaded
machine): it keeps its connections, so nothing else fences it. A broker that died (kill -9, a
crash) is fenced sooner: its lease stream (``open_lease``) closes with its process; once
``broker.session.disconnect.grace.ms`` passed without a new lease or a heartbeat, the
controller tries the broker's address, and only a refused connection (nothing listens there
any more) fences it at once (``fence_if_gone``); anything else leaves the decision to the
session timeout. A controller fences only for leases it held itself, and none once it
stopped serving (``close_leases``): streams also end when a controller steps down.

Thread-safety: calls are serialized by one lock (gRPC handler threads and the session timer
share an instance); the database work of a call is one short transaction.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from django.conf import settings

from grpc_protos.weir.v1 import broker_pb2, controller_pb2
from webapp.controller import acl_requests, actions, election_requests, internal_topics, metrics, scram_requests, topic_requests
from webapp.controller.epoch import ControllerFencedError, become_active, current_epoch
from webapp.controller.pusher import ClusterMapPusher
from webapp.controller.sessions import BrokerSessions
from webapp.fleet.facade import BrokerNode, BrokerState
from webapp.provisioning.facade import SnapshotKind, build_snapshots, push_snapshots, push_targets
from weir.errors import ErrorCode

logger = logging.getLogger(__name__)

# broker.session.timeout.ms unless settings (or the environment) say WEIR_BROKER_SESSION_TIMEOUT_MS.
DEFAULT_SESSION_TIMEOUT_MS = 9000
# broker.session.disconnect.grace.ms unless settings (or the environment) say WEIR_CONTROLLER_BROKER_DISCONNECT_GRACE_MS
# (not WEIR_BROKER_...: brokers refuse WEIR_BROKER_ variables that are no broker setting, and they share the environment):
# how long a broker whose lease stream closed has to open another (or heartbeat) before it is fenced.
DEFAULT_DISCONNECT_GRACE_MS = 300
# The connection attempt of ``address_refuses``: a live broker's kernel accepts at once even when
# the process is stalled; a remote host that does not answer in this time is not taken as gone.
PROBE_TIMEOUT_SECONDS = 1.0
# Kafka's code for a heartbeat whose broker epoch is not the live session's.
STALE_BROKER_EPOCH = ErrorCode.STALE_BROKER_EPOCH  # type: ignore[attr-defined]


def session_timeout_ms() -> int:
    """``broker.session.timeout.ms`` of this deployment."""
    configured = getattr(settings, "WEIR_BROKER_SESSION_TIMEOUT_MS", None) or os.environ.get("WEIR_BROKER_SESSION_TIMEOUT_MS")
    return int(configured) if configured else DEFAULT_SESSION_TIMEOUT_MS


def disconnect_grace_ms() -> int:
    """``broker.session.disconnect.grace.ms`` of this deployment."""
    configured = getattr(settings, "WEIR_CONTROLLER_BROKER_DISCONNECT_GRACE_MS", None) or os.environ.get("WEIR_CONTROLLER_BROKER_DISCONNECT_GRACE_MS")
    return int(configured) if configured else DEFAULT_DISCONNECT_GRACE_MS


def address_refuses(host: str, port: int) -> bool:
    """True when a TCP connection to ``host:port`` is refused: no process listens there any more.
    False when it is accepted, and when the attempt fails otherwise (a timeout, no route), which
    says nothing certain about the broker."""
    try:
        with socket.create_connection((host, port), timeout=PROBE_TIMEOUT_SECONDS):
            return False
    except ConnectionRefusedError:
        return True
    except OSError:
        return False


def push_partitions(controller_epoch: int) -> None:
    """Push the current PARTITIONS snapshot, stamped with ``controller_epoch``, to the brokers
    not known to be down."""
    snapshots = build_snapshots([SnapshotKind.PARTITIONS], controller_epoch=controller_epoch)
    for failure in push_snapshots(snapshots, push_targets()):
        logger.warning("cluster map version %d not pushed: %s", snapshots.partitions.version if snapshots.partitions else -1, failure)


def push_security() -> None:
    """Push the current SECURITY snapshot (ACLs, keys, quotas) to the brokers not known to be down:
    a forwarded ACL change applies without waiting for a Celery worker."""
    snapshots = build_snapshots([SnapshotKind.SECURITY])
    for failure in push_snapshots(snapshots, push_targets()):
        logger.warning("security snapshot not pushed: %s", failure)


@dataclass(frozen=True)
class Registered:
    broker_epoch: int
    session_timeout_ms: int


@dataclass(frozen=True)
class ControlledShutdownResult:
    error_code: int
    remaining: tuple[actions.PartitionRef, ...] = ()  # partitions the broker still leads


class ControllerService:
    """See the module docstring. ``push``, ``monotonic``, ``sleep`` and ``probe`` (``address_refuses``)
    are injected for tests.

    ``controller_epoch`` is the epoch this controller won (``epoch.become_active``, called by
    ``run_controller`` once it holds the controller lock); ``None`` takes a new one now, which
    fences any controller that was active before.
    """

    def __init__(
        self,
        *,
        session_timeout_ms: int,
        monotonic: Callable[[], float] = time.monotonic,
        first_epoch: int | None = None,
        controller_epoch: int | None = None,
        push: Callable[[], None] | None = None,
        disconnect_grace_ms: int = DEFAULT_DISCONNECT_GRACE_MS,
        sleep: Callable[[float], None] = time.sleep,
        probe: Callable[[str, int], bool] = address_refuses,
    ) -> None:
        if disconnect_grace_ms < 0:
            raise ValueError(f"the disconnect grace must not be negative, not {disconnect_grace_ms} ms")
        self.sessions = BrokerSessions(
            session_timeout_ms=session_timeout_ms,
            first_epoch=first_epoch if first_epoch is not None else int(time.time() * 1000),
            monotonic=monotonic,
        )
        self.controller_epoch = controller_epoch if controller_epoch is not None else become_active()
        self._pusher: ClusterMapPusher | None = None
        if push is None:
            # Decisions are answered at once; the new map follows in the background (see pusher).
            self._pusher = ClusterMapPusher(self.controller_epoch)
            push = self._pusher.request
        self._push = push
        self._lock = threading.Lock()
        self._superseded: ControllerFencedError | None = None
        self.disconnect_grace_seconds = disconnect_grace_ms / 1000.0
        self._sleep = sleep
        self._probe = probe
        self._addresses: dict[int, tuple[str, int]] = {}  # node id -> gRPC address it registered with
        self._leases_closed = False

    def close_leases(self) -> None:
        """Stop serving: lease streams that end from now on (the server stops) fence nobody."""
        self._leases_closed = True

    def _leases_closed_now(self) -> bool:
        return self._leases_closed

    def stop(self) -> None:
        """Stop the background pushes (at the end of ``run_controller``)."""
        self._leases_closed = True
        if self._pusher is not None:
            self._pusher.stop()

    def live_broker_count(self) -> int:
        """Brokers with a live session (metrics)."""
        return len(self.sessions.live())

    @property
    def fenced(self) -> bool:
        """True once a newer controller is known to exist: this one must step down."""
        return self._superseded is not None

    @contextmanager
    def _while_active(self) -> Iterator[None]:
        """Refuse work once fenced; fence the service when an action finds a newer controller."""
        if self._superseded is not None:
            raise ControllerFencedError(self.controller_epoch, self._superseded.current_epoch, self._superseded.holder)
        try:
            yield
        except ControllerFencedError as error:
            if self._superseded is None:
                self._superseded = error
                logger.error("%s; this controller is fenced and refuses every call from now on", error)
            raise

    def adopt_online_brokers(self) -> list[int]:
        """Start a grace session for every broker the database knows as online (at takeover)."""
        node_ids = list(BrokerNode.objects.filter(state=BrokerState.ONLINE).order_by("node_id").values_list("node_id", flat=True))
        for node_id in node_ids:
            self.sessions.adopt(node_id)
        return node_ids

    def register(self, node_id: int, host: str, port: int, rack: str, kafka_port: int = 0) -> Registered:
        """New session for the broker; offline partitions it can lead get it as leader.

        Raises ``BrokerRegistrationError`` for an invalid address.
        """
        with self._lock, self._while_active():
            epoch = self.sessions.register(node_id)
            self._addresses[node_id] = (host, port)
            changed = actions.mark_broker_online(
                node_id, host, port, rack, self.sessions.electable(), controller_epoch=self.controller_epoch, kafka_port=kafka_port
            )
            # A new broker may complete the internal topics or raise their replication factor.
            internal_topics.ensure_internal_topics(controller_epoch=self.controller_epoch)
        metrics.REGISTRATIONS.inc()
        metrics.PARTITION_CHANGES.labels("broker_registered").inc(changed)
        logger.info("broker %d registered at %s:%d with broker epoch %d", node_id, host, port, epoch)
        # Pushed even when nothing changed: a broker that restarts starts from the map it
        # stored, which is stale when it was fenced meanwhile (it would keep leading, or
        # fetching, at old leader epochs until some later change happened to push a new map).
        self._push()
        return Registered(epoch, self.sessions.session_timeout_ms)

    def heartbeat(self, node_id: int, broker_epoch: int) -> bool:
        """True when the session goes on; False: the broker is fenced and must register again."""
        with self._while_active():
            return self.sessions.heartbeat(node_id, broker_epoch)

    def open_lease(self, node_id: int, broker_epoch: int) -> int | None:
        """A lease stream for the session ``broker_epoch`` of ``node_id``: its id, None when that
        is not the live session (or this controller stopped serving)."""
        with self._while_active():
            return None if self._leases_closed else self.sessions.open_lease(node_id, broker_epoch)

    def holds_lease(self, node_id: int, broker_epoch: int, lease: int) -> bool:
        """True while ``lease`` is still the live session's lease and this controller serves."""
        return not self._leases_closed and not self.fenced and self.sessions.holds_lease(node_id, broker_epoch, lease)

    def lease_lost(self, node_id: int, broker_epoch: int, lease: int) -> None:
        """The broker's end of ``lease`` closed: fence the broker if it stays disconnected for the
        grace and its address refuses connections (``fence_if_gone``). Blocks for the grace."""
        if self._leases_closed or self.fenced or not self.sessions.lease_lost(node_id, broker_epoch, lease):
            return
        metrics.LEASES_LOST.inc()
        logger.info("broker %d: lease of broker epoch %d closed from its end", node_id, broker_epoch)
        self.fence_if_gone(node_id, broker_epoch)

    def fence_if_gone(self, node_id: int, broker_epoch: int) -> bool:
        """Wait out the disconnect grace of the session ``broker_epoch`` of ``node_id``; fence the
        broker when it is still disconnected then and its address refuses connections. True
        when it was fenced."""
        while (left := self.sessions.grace_left(node_id, broker_epoch, self.disconnect_grace_seconds)) is not None and left > 0.0:
            self._sleep(left)
        if left is None or self._leases_closed:
            return False
        address = self._addresses.get(node_id)
        if address is None or not self._probe(*address):
            logger.info(
                "broker %d: no lease for %d ms, but %s accepts connections; its session timeout decides",
                node_id,
                self.disconnect_grace_seconds * 1000,
                f"{address[0]}:{address[1]}" if address else "its address",
            )
            return False
        with self._lock, self._while_active():
            # Checked again: the broker may have come back, or the controller stopped, while the address was tried.
            if self._leases_closed_now() or self.sessions.grace_left(node_id, broker_epoch, self.disconnect_grace_seconds) != 0.0:
                return False
            self.sessions.end(node_id, broker_epoch)
            logger.warning("broker %d: lease closed and %s:%d refuses connections (the process is gone); fencing it", node_id, address[0], address[1])
            changed = actions.fence_broker(node_id, self.sessions.electable(), controller_epoch=self.controller_epoch)
        metrics.SESSIONS_DISCONNECTED.inc()
        metrics.PARTITION_CHANGES.labels("broker_fenced").inc(changed)
        if changed:
            self._push()
        return True

    def alter_partition(
        self, topic: str, partition: int, leader_id: int, leader_epoch: int, new_isr: list[int], broker_epoch: int
    ) -> actions.AlterPartitionResult:
        """Store a leader's new ISR (epoch-checked, see ``actions.alter_partition``).

        A ``broker_epoch`` of 0 skips the session check (a leader that has not registered yet);
        any other value must be the leader's live session, else STALE_BROKER_EPOCH.
        """
        with self._lock, self._while_active():
            if broker_epoch and not self.sessions.is_current(leader_id, broker_epoch):
                return actions.AlterPartitionResult(STALE_BROKER_EPOCH)
            result = actions.alter_partition(topic, partition, leader_id, leader_epoch, new_isr, controller_epoch=self.controller_epoch)
        if result.changed:
            self._push()
        return result

    def check_sessions(self) -> list[int]:
        """Fence every broker whose session expired; returns their ids."""
        with self._lock, self._while_active():
            expired = self.sessions.expire()
            changed = 0
            for node_id in expired:
                logger.warning("broker %d: session expired after %d ms without a heartbeat; fencing it", node_id, self.sessions.session_timeout_ms)
                changed += actions.fence_broker(node_id, self.sessions.electable(), controller_epoch=self.controller_epoch)
        metrics.SESSIONS_EXPIRED.inc(len(expired))
        metrics.PARTITION_CHANGES.labels("broker_fenced").inc(changed)
        if changed:
            self._push()
        return expired

    def check_still_active(self) -> None:
        """Raise ``ControllerFencedError`` (and stay fenced) when a newer controller epoch
        exists. Run periodically: a controller that lost its lock with its database connection
        would otherwise learn it only from its next action."""
        with self._while_active():
            current, holder = current_epoch()
            if current != self.controller_epoch:
                raise ControllerFencedError(self.controller_epoch, current, holder)

    def controlled_shutdown(self, node_id: int, broker_epoch: int) -> ControlledShutdownResult:
        """Hand the broker's leaderships to other live ISR members and drop it from the ISRs
        (``actions.controlled_shutdown``); no election makes it a leader from now on. When it
        leads nothing any more its session ends. STALE_BROKER_EPOCH unless ``broker_epoch`` is
        its live session."""
        with self._lock, self._while_active():
            if not self.sessions.begin_shutdown(node_id, broker_epoch):
                return ControlledShutdownResult(STALE_BROKER_EPOCH)
            outcome = actions.controlled_shutdown(node_id, self.sessions.electable(), controller_epoch=self.controller_epoch)
            if outcome.complete:
                self.sessions.end(node_id, broker_epoch)
        metrics.PARTITION_CHANGES.labels("controlled_shutdown").inc(outcome.changed)
        if outcome.complete:
            logger.info("broker %d: controlled shutdown complete (%d partitions changed); session ended", node_id, outcome.changed)
        else:
            logger.info("broker %d: controlled shutdown leaves %d partitions it still leads", node_id, len(outcome.remaining))
        if outcome.changed:
            self._push()
        return ControlledShutdownResult(ErrorCode.NO_ERROR, outcome.remaining)

    def elect_preferred_leaders(self, *, imbalance_percentage: float | None = None, topic: str | None = None) -> list[actions.LeaderMove]:
        """Preferred-leader election among the electable brokers (``actions.elect_preferred_leaders``)."""
        with self._lock, self._while_active():
            moves = actions.elect_preferred_leaders(
                self.sessions.electable(), controller_epoch=self.controller_epoch, imbalance_percentage=imbalance_percentage, topic=topic
            )
        metrics.PARTITION_CHANGES.labels("preferred_election").inc(len(moves))
        if moves:
            self._push()
        return moves

    def elect_leaders(self, forwarded: controller_pb2.ForwardedElectLeadersRequest) -> broker_pb2.ElectLeadersResponse:
        """A client's ElectLeaders forwarded by a broker (``election_requests.elect_leaders``),
        among the electable brokers, under the lock like every other leader change."""
        with self._lock, self._while_active():
            answered = election_requests.elect_leaders(forwarded.caller, forwarded.request, self.sessions.electable(), controller_epoch=self.controller_epoch)
        moved = sum(result.error_code == 0 for result in answered.response.results) if answered.changed else 0
        metrics.PARTITION_CHANGES.labels("requested_election").inc(moved)
        if answered.changed:
            self._push()
        return answered.response

    def ensure_internal_topics(self) -> internal_topics.InternalTopicsChange:
        """Create missing internal topics and give their partitions the replicas the available
        brokers allow (``webapp.controller.internal_topics``); run when this controller becomes
        active (registrations do it too). Pushes the cluster map when something changed."""
        with self._lock, self._while_active():
            change = internal_topics.ensure_internal_topics(controller_epoch=self.controller_epoch)
        if change.changed:
            self._push()
        return change

    def _forwarded(self, handle: Callable[[Any, Any], topic_requests.Answered[Any]], forwarded: Any) -> Any:
        # Not under the service lock: these are the catalog actions REST runs concurrently
        # too, serialized by their own row locks. The push follows the commit.
        with self._while_active():
            answered = handle(forwarded.caller, forwarded.request)
        if answered.changed:
            self._push()
        return answered.response

    def create_topics(self, forwarded: controller_pb2.ForwardedCreateTopicsRequest) -> broker_pb2.CreateTopicsResponse:
        """A client's CreateTopics forwarded by a broker (``topic_requests.create_topics``)."""
        return self._forwarded(topic_requests.create_topics, forwarded)

    def delete_topics(self, forwarded: controller_pb2.ForwardedDeleteTopicsRequest) -> broker_pb2.DeleteTopicsResponse:
        """A client's DeleteTopics forwarded by a broker (``topic_requests.delete_topics``)."""
        return self._forwarded(topic_requests.delete_topics, forwarded)

    def create_partitions(self, forwarded: controller_pb2.ForwardedCreatePartitionsRequest) -> broker_pb2.CreatePartitionsResponse:
        """A client's CreatePartitions forwarded by a broker (``topic_requests.create_partitions``)."""
        return self._forwarded(topic_requests.create_partitions, forwarded)

    def alter_configs(self, forwarded: controller_pb2.ForwardedAlterConfigsRequest) -> broker_pb2.AlterConfigsResponse:
        """A client's AlterConfigs forwarded by a broker (``topic_requests.alter_configs``)."""
        return self._forwarded(topic_requests.alter_configs, forwarded)

    def _forwarded_acls(self, handle: Callable[[Any, Any], topic_requests.Answered[Any]], caller: Any, entries: Any) -> Any:
        with self._while_active():
            answered = handle(caller, entries)
        if answered.changed:
            push_security()
        return answered.response

    def create_acls(self, forwarded: controller_pb2.ForwardedCreateAclsRequest) -> controller_pb2.CreateAclsResponse:
        """A client's CreateAcls forwarded by a broker (``acl_requests.create_acls``)."""
        return self._forwarded_acls(acl_requests.create_acls, forwarded.caller, list(forwarded.creations))

    def describe_acls(self, forwarded: controller_pb2.ForwardedDescribeAclsRequest) -> controller_pb2.DescribeAclsResponse:
        """A client's DescribeAcls forwarded by a broker (``acl_requests.describe_acls``)."""
        return self._forwarded_acls(acl_requests.describe_acls, forwarded.caller, forwarded.filter)

    def delete_acls(self, forwarded: controller_pb2.ForwardedDeleteAclsRequest) -> controller_pb2.DeleteAclsResponse:
        """A client's DeleteAcls forwarded by a broker (``acl_requests.delete_acls``)."""
        return self._forwarded_acls(acl_requests.delete_acls, forwarded.caller, list(forwarded.filters))

    def alter_user_scram_credentials(self, forwarded: controller_pb2.ForwardedAlterUserScramCredentialsRequest) -> broker_pb2.AlterUserScramCredentialsResponse:
        """A client's AlterUserScramCredentials forwarded by a broker (``scram_requests``); the
        security snapshot is pushed before the answer, as for ACL changes."""
        return self._forwarded_acls(scram_requests.alter_user_scram_credentials, forwarded.caller, forwarded.request)

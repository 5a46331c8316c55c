"""The controller's behaviour: sessions in memory, decisions in the database, pushes after.

Every change that reaches the catalog is followed, after its transaction commits, by a push
of the new PARTITIONS snapshot to every broker not known to be offline
(``webapp.provisioning.push``). A failed push is logged, not retried here: the broker keeps
its older cluster map until the next push or the reconciler's, and stale maps are harmless
because every map carries leader epochs that brokers check.

Thread-safety: calls are serialized by one lock (gRPC handler threads and the session timer
share an instance); the database work of a call is one short transaction.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from django.conf import settings

from webapp.fleet.controller import actions
from webapp.fleet.controller.sessions import BrokerSessions
from webapp.fleet.models import BrokerNode, BrokerState
from webapp.provisioning.models import SnapshotKind
from webapp.provisioning.push import push_snapshots, push_targets
from webapp.provisioning.snapshots import build_snapshots
from weir.errors import ErrorCode

logger = logging.getLogger(__name__)

# broker.session.timeout.ms unless settings (or the environment) say WEIR_BROKER_SESSION_TIMEOUT_MS.
DEFAULT_SESSION_TIMEOUT_MS = 9000
# Kafka's code for a heartbeat whose broker epoch is not the live session's.
STALE_BROKER_EPOCH = ErrorCode.STALE_BROKER_EPOCH  # type: ignore[attr-defined]


def session_timeout_ms() -> int:
    """``broker.session.timeout.ms`` of this deployment."""
    configured = getattr(settings, "WEIR_BROKER_SESSION_TIMEOUT_MS", None) or os.environ.get("WEIR_BROKER_SESSION_TIMEOUT_MS")
    return int(configured) if configured else DEFAULT_SESSION_TIMEOUT_MS


def push_partitions() -> None:
    """Push the current PARTITIONS snapshot to the brokers not known to be offline."""
    snapshots = build_snapshots([SnapshotKind.PARTITIONS])
    for failure in push_snapshots(snapshots, push_targets()):
        logger.warning("cluster map version %d not pushed: %s", snapshots.partitions.version if snapshots.partitions else -1, failure)


@dataclass(frozen=True)
class Registered:
    broker_epoch: int
    session_timeout_ms: int


class ControllerService:
    """See the module docstring. ``push`` and ``monotonic`` are injected for tests."""

    def __init__(
        self,
        *,
        session_timeout_ms: int,
        monotonic: Callable[[], float] = time.monotonic,
        first_epoch: int | None = None,
        push: Callable[[], None] = push_partitions,
    ) -> None:
        self.sessions = BrokerSessions(
            session_timeout_ms=session_timeout_ms,
            first_epoch=first_epoch if first_epoch is not None else int(time.time() * 1000),
            monotonic=monotonic,
        )
        self._push = push
        self._lock = threading.Lock()

    def adopt_online_brokers(self) -> list[int]:
        """Start a grace session for every broker the database knows as online (at takeover)."""
        node_ids = list(BrokerNode.objects.filter(state=BrokerState.ONLINE).order_by("node_id").values_list("node_id", flat=True))
        for node_id in node_ids:
            self.sessions.adopt(node_id)
        return node_ids

    def register(self, node_id: int, host: str, port: int, rack: str) -> Registered:
        """New session for the broker; offline partitions it can lead get it as leader.

        Raises ``BrokerRegistrationError`` for an invalid address.
        """
        with self._lock:
            epoch = self.sessions.register(node_id)
            changed = actions.mark_broker_online(node_id, host, port, rack, self.sessions.live())
        logger.info("broker %d registered at %s:%d with broker epoch %d", node_id, host, port, epoch)
        if changed:
            self._push()
        return Registered(epoch, self.sessions.session_timeout_ms)

    def heartbeat(self, node_id: int, broker_epoch: int) -> bool:
        """True when the session goes on; False: the broker is fenced and must register again."""
        return self.sessions.heartbeat(node_id, broker_epoch)

    def alter_partition(self, topic: str, partition: int, leader_id: int, leader_epoch: int, new_isr: list[int], broker_epoch: int) -> actions.AlterPartitionResult:
        """Store a leader's new ISR (epoch-checked, see ``actions.alter_partition``).

        A ``broker_epoch`` of 0 skips the session check (a leader that has not registered yet);
        any other value must be the leader's live session, else STALE_BROKER_EPOCH.
        """
        if broker_epoch and not self.sessions.is_current(leader_id, broker_epoch):
            return actions.AlterPartitionResult(STALE_BROKER_EPOCH)
        with self._lock:
            result = actions.alter_partition(topic, partition, leader_id, leader_epoch, new_isr)
        if result.changed:
            self._push()
        return result

    def check_sessions(self) -> list[int]:
        """Fence every broker whose session expired; returns their ids."""
        with self._lock:
            expired = self.sessions.expire()
            changed = 0
            for node_id in expired:
                logger.warning("broker %d: session expired after %d ms without a heartbeat; fencing it", node_id, self.sessions.session_timeout_ms)
                changed += actions.fence_broker(node_id, self.sessions.live())
        if changed:
            self._push()
        return expired



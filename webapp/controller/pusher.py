"""The controller's pushes of the cluster map: in the background, one worker per broker, newest map only.

A controller decision (a fence, an ISR change, a registration, a controlled shutdown) must
reach the brokers fast, but the call that caused it must not wait for them: a frozen broker
(SIGSTOP, a network partition) would hold every ``AlterPartition`` answer for the push
deadline, and the leader's ISR change with it. So :meth:`ClusterMapPusher.request` builds the
current PARTITIONS snapshot in the caller's thread (one short read after its transaction
committed) and hands it to a worker per broker. A worker pushes the newest snapshot it has
been given and skips the ones superseded meanwhile, so a slow broker delays only itself and
catches up with one push. Versions make a late or repeated push harmless (brokers refuse
older maps).

Targets are the brokers not OFFLINE: a STOPPED broker is included, because one that is in
its controlled shutdown must learn that it no longer leads before it stops; a push to one
that has already gone fails fast (connection refused) in its own worker.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from webapp.controller import metrics
from webapp.fleet.facade import BrokerNode, BrokerState
from webapp.provisioning.facade import BrokerAddress, BrokerCallError, SnapshotKind, Snapshots, build_snapshots, push_to_broker

logger = logging.getLogger(__name__)

PushOne = Callable[[BrokerAddress, Snapshots], BrokerCallError | None]


def controller_push_targets() -> list[BrokerAddress]:
    """Every registered broker not known to be OFFLINE (see the module docstring)."""
    rows = BrokerNode.objects.exclude(state=BrokerState.OFFLINE).order_by("node_id").values_list("node_id", "host", "port")
    return [BrokerAddress(node_id, f"{host}:{port}") for node_id, host, port in rows]


class _BrokerWorker:
    """Pushes the newest snapshot offered for one broker, on its own thread."""

    def __init__(self, node_id: int, push_one: PushOne) -> None:
        self._push_one = push_one
        self._condition = threading.Condition()
        self._pending: tuple[BrokerAddress, Snapshots] | None = None
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name=f"push-broker-{node_id}", daemon=True)
        self._thread.start()

    def offer(self, address: BrokerAddress, snapshots: Snapshots) -> None:
        with self._condition:
            self._pending = (address, snapshots)
            self._condition.notify()

    def stop(self) -> None:
        with self._condition:
            self._stopping = True
            self._condition.notify()

    def join(self, timeout: float) -> None:
        self._thread.join(timeout)

    def _run(self) -> None:
        while True:
            with self._condition:
                while self._pending is None and not self._stopping:
                    self._condition.wait()
                if self._stopping:
                    return
                address, snapshots = self._pending  # type: ignore[misc]
                self._pending = None
            started = time.monotonic()
            failure = self._push_one(address, snapshots)
            metrics.PUSH_DURATION.observe(time.monotonic() - started)
            metrics.PUSHES.labels("ok" if failure is None else "failed").inc()
            if failure is not None:
                version = snapshots.partitions.version if snapshots.partitions is not None else -1
                logger.warning("cluster map version %d not pushed: %s", version, failure)


class ClusterMapPusher:
    """See the module docstring. ``request`` after each change; ``stop`` at the end."""

    def __init__(
        self,
        controller_epoch: int,
        *,
        push_one: PushOne = push_to_broker,
        targets: Callable[[], list[BrokerAddress]] = controller_push_targets,
    ) -> None:
        self._controller_epoch = controller_epoch
        self._push_one = push_one
        self._targets = targets
        self._lock = threading.Lock()
        self._workers: dict[int, _BrokerWorker] = {}

    def request(self) -> None:
        """Push the current cluster map to every target broker (returns before the pushes end)."""
        # The database work happens on the caller's thread (a gRPC handler or the controller's
        # timer), whose connection handling already ends with each call.
        snapshots = build_snapshots([SnapshotKind.PARTITIONS], controller_epoch=self._controller_epoch)
        targets = self._targets()
        with self._lock:
            for address in targets:
                worker = self._workers.get(address.node_id)
                if worker is None:
                    worker = self._workers[address.node_id] = _BrokerWorker(address.node_id, self._push_one)
                worker.offer(address, snapshots)

    def stop(self, timeout: float = 5.0) -> None:
        with self._lock:
            workers = list(self._workers.values())
            self._workers.clear()
        for worker in workers:
            worker.stop()
        for worker in workers:
            worker.join(timeout)

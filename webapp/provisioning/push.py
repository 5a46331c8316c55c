"""Push snapshots to brokers, in parallel, and say which broker failed how."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from webapp.fleet.models import DOWN_STATES, BrokerNode
from webapp.provisioning.broker_client import BrokerAddress, BrokerAdminClient, BrokerCallError, StaleSnapshotError
from webapp.provisioning.snapshots import Snapshots
from weir.request_ids import carrying_request_id

# Brokers are pushed to in parallel, at most this many at once.
MAX_PARALLEL_PUSHES = 16


def push_targets() -> list[BrokerAddress]:
    """Brokers a job pushes to: every registered broker not known to be offline.

    An OFFLINE or STOPPED broker is skipped so that one dead machine does not fail every change; the
    reconciler brings it up to date when it answers again.
    """
    return [
        BrokerAddress(node_id, f"{host}:{port}")
        for node_id, host, port in BrokerNode.objects.exclude(state__in=DOWN_STATES).order_by("node_id").values_list("node_id", "host", "port")
    ]


def push_to_broker(broker: BrokerAddress, snapshots: Snapshots) -> BrokerCallError | None:
    """Apply ``snapshots`` on one broker (partitions first, so that ACLs never name topics the
    broker does not know yet). A broker that already holds a newer version counts as done."""
    try:
        with BrokerAdminClient(broker) as client:
            if snapshots.partitions is not None:
                try:
                    client.apply_partitions(snapshots.partitions)
                except StaleSnapshotError:
                    pass
            if snapshots.security is not None:
                try:
                    client.apply_security(snapshots.security)
                except StaleSnapshotError:
                    pass
    except BrokerCallError as error:
        return error
    return None


def push_snapshots(snapshots: Snapshots, brokers: list[BrokerAddress]) -> list[BrokerCallError]:
    """Push to every broker of ``brokers``; the failures, in node id order (empty: all applied)."""
    if not brokers:
        return []
    with ThreadPoolExecutor(max_workers=min(MAX_PARALLEL_PUSHES, len(brokers))) as pool:
        # The pool's threads push with the caller's request id (threads do not inherit it).
        push = carrying_request_id(push_to_broker)
        results = list(pool.map(lambda broker: push(broker, snapshots), brokers))
    return [error for error in results if error is not None]

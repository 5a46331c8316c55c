"""Push snapshots to brokers, in parallel, and say which broker failed how.

A push has two kinds of outcome per broker. The call itself may fail (the broker is down,
refuses the token or the snapshot): :class:`BrokerCallError`, which fails every job that
needed the push. Or the call succeeds and the broker lists partitions it could not apply (a
directory it cannot create): :class:`PartitionNotApplied`, which concerns only the topic of
that partition, so only that topic's job fails and every other change pushed with the same
full snapshot succeeds.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from grpc_protos.weir.v1 import admin_pb2
from server_runtime.request_ids import carrying_request_id
from webapp.fleet.facade import DOWN_STATES, BrokerNode
from webapp.provisioning.broker_client import BrokerAddress, BrokerAdminClient, BrokerCallError, StaleSnapshotError
from webapp.provisioning.snapshots import Snapshots
from weir.errors import error_name

# Brokers are pushed to in parallel, at most this many at once.
MAX_PARALLEL_PUSHES = 16


@dataclass(frozen=True)
class PartitionNotApplied:
    """A partition a broker answered it could not apply; every other partition was applied.
    ``retriable`` says whether the same snapshot may succeed later (a disk fault) or never
    (a name too long for a directory)."""

    broker: BrokerAddress
    tenant_id: str
    topic: str
    partition: int
    error_code: int
    message: str
    retriable: bool

    @classmethod
    def from_reply(cls, broker: BrokerAddress, failure: admin_pb2.PartitionFailure) -> PartitionNotApplied:
        return cls(broker, failure.tenant_id, failure.topic, failure.partition, failure.error_code, failure.error_message, failure.retriable)

    def __str__(self) -> str:
        return (
            f"broker {self.broker.node_id} at {self.broker.address} could not create partition {self.partition} "
            f"of topic '{self.topic}': {error_name(self.error_code)}: {self.message}"
        )


@dataclass(frozen=True)
class BrokerPush:
    """What one broker answered a push: the call's failure (None: the snapshots were applied)
    and the partitions it could not apply."""

    error: BrokerCallError | None = None
    not_applied: tuple[PartitionNotApplied, ...] = ()


def push_targets() -> list[BrokerAddress]:
    """Brokers a job pushes to: every registered broker not known to be offline.

    An OFFLINE or STOPPED broker is skipped so that one dead machine does not fail every change; the
    reconciler brings it up to date when it answers again.
    """
    return [
        BrokerAddress(node_id, f"{host}:{port}")
        for node_id, host, port in BrokerNode.objects.exclude(state__in=DOWN_STATES).order_by("node_id").values_list("node_id", "host", "port")
    ]


def apply_on_broker(broker: BrokerAddress, snapshots: Snapshots) -> BrokerPush:
    """Apply ``snapshots`` on one broker (partitions first, so that ACLs never name topics the
    broker does not know yet). A broker that already holds a newer version counts as done."""
    not_applied: tuple[PartitionNotApplied, ...] = ()
    try:
        with BrokerAdminClient(broker) as client:
            if snapshots.partitions is not None:
                try:
                    reply = client.apply_partitions(snapshots.partitions)
                    not_applied = tuple(PartitionNotApplied.from_reply(broker, failure) for failure in reply.failed_partitions)
                except StaleSnapshotError:
                    pass
            if snapshots.security is not None:
                try:
                    client.apply_security(snapshots.security)
                except StaleSnapshotError:
                    pass
    except BrokerCallError as error:
        return BrokerPush(error, not_applied)
    return BrokerPush(None, not_applied)


def push_to_broker(broker: BrokerAddress, snapshots: Snapshots) -> BrokerCallError | None:
    """:func:`apply_on_broker` for callers that act on the call's failure only (the
    controller's pushes, the reconciler): partitions a broker cannot host are its to report."""
    return apply_on_broker(broker, snapshots).error


def push_to_brokers(snapshots: Snapshots, brokers: list[BrokerAddress]) -> list[BrokerPush]:
    """Push to every broker of ``brokers`` in parallel; one answer per broker, in their order."""
    if not brokers:
        return []
    with ThreadPoolExecutor(max_workers=min(MAX_PARALLEL_PUSHES, len(brokers))) as pool:
        # The pool's threads push with the caller's request id (threads do not inherit it).
        push = carrying_request_id(apply_on_broker)
        return list(pool.map(lambda broker: push(broker, snapshots), brokers))


def push_snapshots(snapshots: Snapshots, brokers: list[BrokerAddress]) -> list[BrokerCallError]:
    """Push to every broker of ``brokers``; the failed calls, in node id order (empty: all applied)."""
    return [push.error for push in push_to_brokers(snapshots, brokers) if push.error is not None]

"""What a restored control plane must change before its state can be pushed to live brokers.

Brokers refuse what looks older than what they hold: a snapshot whose version is below the
one they applied (``StaleSnapshotError``; a push counts that as done, so nothing would ever
reach them again), a cluster map from a controller epoch below one they have seen, and a
partition leader epoch below the one in the partition's log. A backup is older than the
brokers whenever anything changed after it was taken, so after a restore:

* each snapshot version becomes one above the highest of the database and every broker;
* the controller epoch becomes the highest of the database and every broker (the next
  controller to become active takes one more, which brokers then accept);
* each partition's leader epoch becomes the highest any replica reports, with the leader and
  ISR of the broker that leads it at that epoch (when no reachable broker claims it, the
  backup's leader and ISR stay, and the controller fails it over if that leader is gone).

Pushing the restored partitions snapshot also makes brokers delete topics the restored
catalog lacks (created after the backup). The plan lists them as ``unknown``; the caller
refuses to push unless the operator agreed.

Pure: no database, no network; the inputs are read by ``webapp.backup.broker_resync``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass

from grpc_protos.weir.v1 import admin_pb2

PARTITIONS = "partitions"  # SnapshotKind values (provisioning.models), repeated to keep this module pure
SECURITY = "security"


@dataclass(frozen=True)
class HostedReplica:
    """One partition a broker hosts, as DescribeState reports it."""

    tenant_id: str
    topic: str
    topic_id: str
    partition: int
    is_leader: bool
    leader_epoch: int
    isr: tuple[int, ...]


@dataclass(frozen=True)
class BrokerReport:
    """What one broker answered to DescribeState."""

    node_id: int
    address: str
    partitions_version: int
    security_version: int
    controller_epoch: int
    hosted: tuple[HostedReplica, ...]

    @classmethod
    def from_response(cls, address: str, response: admin_pb2.DescribeStateResponse) -> BrokerReport:
        return cls(
            node_id=response.node_id,
            address=address,
            partitions_version=response.partitions_version,
            security_version=response.security_version,
            controller_epoch=response.controller_epoch,
            hosted=tuple(
                HostedReplica(entry.tenant_id, entry.topic, entry.topic_id, entry.partition, entry.is_leader, entry.leader_epoch, tuple(entry.isr))
                for entry in response.partitions
            ),
        )


@dataclass(frozen=True)
class PartitionLeadership:
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]


@dataclass(frozen=True)
class CatalogState:
    """What the restored database holds: snapshot versions by kind, the controller epoch, and
    each partition's leadership keyed by (topic id, partition index)."""

    versions: Mapping[str, int]
    controller_epoch: int
    partitions: Mapping[tuple[str, int], PartitionLeadership]


@dataclass(frozen=True)
class ResyncPlan:
    versions: Mapping[str, int]  # the snapshot versions to set
    controller_epoch: int  # the controller epoch to set
    leadership: Mapping[tuple[str, int], PartitionLeadership]  # partitions whose leadership changes
    unknown: tuple[str, ...]  # topics brokers host that the catalog lacks, one line each

    def summary(self) -> str:
        return (
            f"snapshot versions partitions={self.versions[PARTITIONS]} security={self.versions[SECURITY]}, "
            f"controller epoch {self.controller_epoch}, {len(self.leadership)} partition leadership(s) taken from the brokers"
        )


def plan_resync(catalog: CatalogState, brokers: list[BrokerReport]) -> ResyncPlan:
    """The changes described in the module docstring, for the brokers that answered."""
    versions = {
        PARTITIONS: max([catalog.versions.get(PARTITIONS, 0), *(broker.partitions_version for broker in brokers)]) + 1,
        SECURITY: max([catalog.versions.get(SECURITY, 0), *(broker.security_version for broker in brokers)]) + 1,
    }
    controller_epoch = max([catalog.controller_epoch, *(broker.controller_epoch for broker in brokers)])
    return ResyncPlan(versions, controller_epoch, _leadership(catalog, brokers), _unknown(catalog, brokers))


def _leadership(catalog: CatalogState, brokers: list[BrokerReport]) -> dict[tuple[str, int], PartitionLeadership]:
    newest_epoch: dict[tuple[str, int], int] = {}
    claims: dict[tuple[str, int], PartitionLeadership] = {}
    for broker in brokers:
        for replica in broker.hosted:
            key = (replica.topic_id, replica.partition)
            if key not in catalog.partitions:
                continue
            newest_epoch[key] = max(newest_epoch.get(key, -1), replica.leader_epoch)
            claim = claims.get(key)
            if replica.is_leader and (claim is None or replica.leader_epoch > claim.leader_epoch):
                claims[key] = PartitionLeadership(broker.node_id, replica.leader_epoch, replica.isr or (broker.node_id,))
    changes: dict[tuple[str, int], PartitionLeadership] = {}
    for key, epoch in newest_epoch.items():
        restored = catalog.partitions[key]
        if epoch <= restored.leader_epoch:
            continue
        claim = claims.get(key)
        if claim is not None and claim.leader_epoch == epoch:
            changes[key] = claim
        else:
            changes[key] = PartitionLeadership(restored.leader, epoch, restored.isr)
    return changes


def _unknown(catalog: CatalogState, brokers: list[BrokerReport]) -> tuple[str, ...]:
    """One line per topic (by id) that some broker hosts partitions of the catalog lacks."""
    known_topics = {topic_id for topic_id, _ in catalog.partitions}
    found: dict[str, dict[str, object]] = {}
    partitions_of: dict[str, set[int]] = defaultdict(set)
    nodes_of: dict[str, set[int]] = defaultdict(set)
    for broker in brokers:
        for replica in broker.hosted:
            if (replica.topic_id, replica.partition) in catalog.partitions:
                continue
            found.setdefault(replica.topic_id, {"tenant": replica.tenant_id, "topic": replica.topic})
            partitions_of[replica.topic_id].add(replica.partition)
            nodes_of[replica.topic_id].add(broker.node_id)
    lines = []
    for topic_id in sorted(found, key=lambda key: (str(found[key]["tenant"]), str(found[key]["topic"]))):
        tenant, topic = found[topic_id]["tenant"], found[topic_id]["topic"]
        name = f"{tenant}/{topic}" if tenant else str(topic)
        what = "topic" if topic_id not in known_topics else "partitions of topic"
        partitions = ", ".join(str(index) for index in sorted(partitions_of[topic_id]))
        nodes = ", ".join(str(node) for node in sorted(nodes_of[topic_id]))
        lines.append(f"{what} {name} (id {topic_id}): partition(s) {partitions} on broker(s) {nodes}")
    return tuple(lines)

"""``manage.py resync_brokers``: give live brokers the restored state (credentials, ACLs, quotas, topics).

1. Ask every registered broker (and any extra address given) for its state (DescribeState).
2. Plan (``webapp.backup.resync_plan``): snapshot versions and the controller epoch above
   everything the brokers have seen, leader epochs taken from the brokers.
3. Refuse when the brokers host topics the restored catalog lacks, unless the operator agreed
   that the push deletes them (``delete_unknown_topics``): nothing has changed yet.
4. Write the plan in one transaction (lock order of ``webapp.controller.epoch``: the
   controller epoch row, then partition rows, then snapshot versions).
5. Push both snapshots to every broker that answered, then ask each again and check that it
   applied exactly these versions.

A controller running meanwhile is fenced by the new controller epoch: it steps down, and its
supervisor restarts it as a standby that takes the next epoch. Brokers that did not answer get
the new snapshots from the reconciler when they are back (their versions are then behind).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from django.db import transaction

from webapp.backup.errors import ResyncRefusedError
from webapp.backup.resync_plan import PARTITIONS, SECURITY, BrokerReport, CatalogState, PartitionLeadership, ResyncPlan, plan_resync
from webapp.catalog.facade import Partition, Topic
from webapp.fleet.facade import CONTROLLER_EPOCH_ROW, BrokerNode, ControllerEpoch
from webapp.provisioning.facade import (
    BrokerAddress,
    BrokerAdminClient,
    BrokerCallError,
    SnapshotVersion,
    build_snapshots,
    current_versions,
    locked_versions,
    push_snapshots,
)

PROBE_TIMEOUT_SECONDS = 5.0  # a broker slower than this to describe itself counts as unreachable
MAX_PARALLEL_PROBES = 16


@dataclass
class ResyncResult:
    plan: ResyncPlan
    brokers: list[BrokerReport]  # the brokers that answered, pushed to
    applied: list[int] = field(default_factory=list)  # node ids of brokers that now hold the pushed versions
    unreachable: list[str] = field(default_factory=list)  # one line per broker that did not answer
    failures: list[str] = field(default_factory=list)  # one line per broker that did not apply the push

    def summary(self) -> str:
        lines = [f"planned: {self.plan.summary()}"]
        lines.append(f"applied by broker(s) {', '.join(str(node) for node in self.applied) or 'none'}")
        lines += [f"not reached: {line}" for line in self.unreachable]
        lines += [f"failed: {line}" for line in self.failures]
        return "\n".join(lines)


def probe_brokers(extra_addresses: list[str] | tuple[str, ...] = ()) -> tuple[list[BrokerReport], list[str]]:
    """DescribeState of every registered broker and every extra ``host:port``, in parallel:
    (the reports, one line per broker that did not answer)."""
    targets = [BrokerAddress(node.node_id, node.address) for node in BrokerNode.objects.order_by("node_id")]
    known = {target.address for target in targets}
    # -1 until the broker says its node id (an address not registered in the restored database).
    targets += [BrokerAddress(-1, address) for address in dict.fromkeys(extra_addresses) if address not in known]
    if not targets:
        return [], []

    def describe(target: BrokerAddress) -> BrokerReport | str:
        try:
            with BrokerAdminClient(target, timeout_seconds=PROBE_TIMEOUT_SECONDS) as client:
                return BrokerReport.from_response(target.address, client.describe_state())
        except BrokerCallError as error:
            return str(error)

    with ThreadPoolExecutor(max_workers=min(MAX_PARALLEL_PROBES, len(targets))) as pool:
        answers = list(pool.map(describe, targets))
    reports = [answer for answer in answers if isinstance(answer, BrokerReport)]
    return reports, [answer for answer in answers if isinstance(answer, str)]


def read_catalog_state() -> CatalogState:
    """Snapshot versions, controller epoch and every partition's leadership, from the database."""
    epoch = ControllerEpoch.objects.filter(pk=CONTROLLER_EPOCH_ROW).values_list("epoch", flat=True).first() or 0
    partitions = {
        (str(topic_id), index): PartitionLeadership(leader, leader_epoch, tuple(isr))
        for topic_id, index, leader, leader_epoch, isr in Partition.objects.values_list("topic__topic_id", "index", "leader", "leader_epoch", "isr")
    }
    return CatalogState(versions=current_versions(), controller_epoch=epoch, partitions=partitions)


def apply_plan(plan: ResyncPlan) -> None:
    """Write ``plan`` in one transaction; values only ever go up (a change made meanwhile is kept)."""
    with transaction.atomic():
        row, _ = ControllerEpoch.objects.select_for_update().get_or_create(pk=CONTROLLER_EPOCH_ROW)
        if plan.controller_epoch > row.epoch:
            row.epoch = plan.controller_epoch
            row.save(update_fields=["epoch"])
        if plan.leadership:
            topic_pks = dict(Topic.objects.filter(topic_id__in={topic_id for topic_id, _ in plan.leadership}).values_list("pk", "topic_id"))
            changed = []
            for partition in Partition.objects.select_for_update().filter(topic_id__in=topic_pks).order_by("pk"):
                leadership = plan.leadership.get((str(topic_pks[partition.topic_id]), partition.index))
                if leadership is not None and leadership.leader_epoch > partition.leader_epoch:
                    partition.leader, partition.leader_epoch, partition.isr = leadership.leader, leadership.leader_epoch, list(leadership.isr)
                    changed.append(partition)
            Partition.objects.bulk_update(changed, ["leader", "leader_epoch", "isr"])
        current = locked_versions([PARTITIONS, SECURITY])
        for kind in (PARTITIONS, SECURITY):
            SnapshotVersion.objects.filter(kind=kind).update(version=max(plan.versions[kind], current[kind] + 1))


def resync_brokers(extra_addresses: list[str] | tuple[str, ...] = (), *, delete_unknown_topics: bool = False) -> ResyncResult:
    """Steps 1-5 of the module docstring. ResyncRefusedError, with nothing changed, when no
    broker answers or when brokers host unknown topics and ``delete_unknown_topics`` is false."""
    reports, unreachable = probe_brokers(extra_addresses)
    if not reports:
        raise ResyncRefusedError("no broker answered: " + ("; ".join(unreachable) or "none is registered; name them with --broker HOST:PORT"))
    plan = plan_resync(read_catalog_state(), reports)
    if plan.unknown and not delete_unknown_topics:
        raise ResyncRefusedError(
            "brokers host topics the restored catalog does not have (created after the backup?); pushing it would delete them:\n  "
            + "\n  ".join(plan.unknown)
            + "\nRecreate them after the resync, or pass --delete-unknown-topics to accept that they are deleted.",
            plan.unknown,
        )
    apply_plan(plan)
    snapshots = build_snapshots([PARTITIONS, SECURITY])
    targets = [BrokerAddress(report.node_id, report.address) for report in reports]
    errors = push_snapshots(snapshots, targets)
    failures = [str(error) for error in errors]
    failed_addresses = {error.broker.address for error in errors}
    expected = (snapshots.partitions.version, snapshots.security.version)  # type: ignore[union-attr]
    applied = []
    for target in targets:
        if target.address in failed_addresses:
            continue
        found = _applied_versions(target)
        if found == expected:
            applied.append(target.node_id)
        else:
            failures.append(f"broker {target.node_id} at {target.address}: holds versions (partitions, security) {found}, not the pushed {expected}")
    return ResyncResult(plan=plan, brokers=reports, applied=applied, unreachable=unreachable, failures=failures)


def _applied_versions(broker: BrokerAddress) -> tuple[int, int] | str:
    try:
        with BrokerAdminClient(broker, timeout_seconds=PROBE_TIMEOUT_SECONDS) as client:
            state = client.describe_state()
    except BrokerCallError as error:
        return f"unknown ({error.code.name})"
    return (state.partitions_version, state.security_version)

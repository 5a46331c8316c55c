"""The reconciler: compare what each broker reports with the desired state, repair drift.

For every registered broker: DescribeState. No answer -> the broker is marked OFFLINE.
An answer -> ONLINE with ``last_seen_at``, and then
* a partitions or security version behind the database's -> push that snapshot;
* the same partitions version but hosted partitions that differ from the placement (logs
  lost under a running broker) -> bump the version and push, since a broker ignores a
  snapshot of the version it already applied.
A RECONCILE job is recorded only when something was repaired (or a repair failed), with
what was done, so the job list shows drift without filling up with no-op rounds.

Partitions a broker reports it cannot host (``failed_partitions``: a directory it cannot
create) are not drift a push repairs: they are listed in the round's report, and the broker
tries them again at every push it gets. Their topics' jobs already failed with the reason.

Each round first recovers lost jobs (``jobs.recover_lost_jobs``): jobs whose Celery message
was lost are re-queued or failed, so no job stays PENDING or RUNNING forever.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from grpc_protos.weir.v1 import admin_pb2
from webapp.accounts.facade import SeenApplication, do_record_cluster_key_use, do_record_key_applications
from webapp.catalog.facade import Partition
from webapp.fleet.facade import BrokerNode, BrokerState
from webapp.provisioning import metrics
from webapp.provisioning.broker_client import BrokerAddress, BrokerAdminClient, BrokerCallError
from webapp.provisioning.jobs import recover_lost_jobs
from webapp.provisioning.models import JobKind, JobState, ProvisioningJob, SnapshotKind
from webapp.provisioning.push import PartitionNotApplied, push_to_broker
from webapp.provisioning.snapshots import build_snapshots
from webapp.provisioning.versions import bump_versions, current_versions

LOG = logging.getLogger(__name__)

# A probe must not hold up the whole round: brokers that take longer count as offline.
PROBE_TIMEOUT_SECONDS = 3.0


@dataclass
class ReconcileReport:
    """What one round found and did."""

    online: list[int] = field(default_factory=list)
    offline: list[int] = field(default_factory=list)
    repairs: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    job: ProvisioningJob | None = None
    requeued_jobs: list[str] = field(default_factory=list)  # public ids of lost jobs queued again
    cannot_host: list[str] = field(default_factory=list)  # partitions brokers report they could not create, and why
    failed_lost_jobs: list[str] = field(default_factory=list)  # public ids of lost jobs out of attempts

    def summary(self) -> str:
        parts = [f"online {self.online}", f"offline {self.offline}"]
        if self.requeued_jobs:
            parts.append("re-queued lost jobs " + ", ".join(self.requeued_jobs))
        if self.failed_lost_jobs:
            parts.append("failed lost jobs " + ", ".join(self.failed_lost_jobs))
        if self.repairs:
            parts.append("repaired: " + "; ".join(self.repairs))
        if self.failures:
            parts.append("failed: " + "; ".join(self.failures))
        if self.cannot_host:
            parts.append("cannot host: " + "; ".join(self.cannot_host))
        return ", ".join(parts)


@dataclass(frozen=True)
class _Drift:
    broker: BrokerAddress
    push_partitions: bool
    push_security: bool
    same_version_drift: bool
    description: str


def _probe(broker: BrokerAddress) -> admin_pb2.DescribeStateResponse | None:
    try:
        with BrokerAdminClient(broker, timeout_seconds=PROBE_TIMEOUT_SECONDS) as client:
            return client.describe_state()
    except BrokerCallError as error:
        LOG.info("reconcile: %s", error)
        return None


def _expected_partitions() -> dict[int, set[tuple[str, int]]]:
    """Broker node id -> the (topic id, partition) pairs it should host."""
    expected: dict[int, set[tuple[str, int]]] = defaultdict(set)
    for topic_id, index, replicas in Partition.objects.values_list("topic__topic_id", "index", "replicas"):
        for node_id in replicas:
            expected[node_id].add((str(topic_id), index))
    return expected


def _drift_of(broker: BrokerAddress, state: admin_pb2.DescribeStateResponse, versions: dict[str, int], expected: set[tuple[str, int]]) -> _Drift | None:
    desired_partitions = versions[SnapshotKind.PARTITIONS]
    desired_security = versions[SnapshotKind.SECURITY]
    notes = []
    partitions_behind = state.partitions_version < desired_partitions
    security_behind = state.security_version < desired_security
    if partitions_behind:
        notes.append(f"partitions snapshot v{state.partitions_version} behind v{desired_partitions}")
    if security_behind:
        notes.append(f"security snapshot v{state.security_version} behind v{desired_security}")
    same_version_drift = False
    # Hosted partitions are compared only at the version read here: a broker already on a
    # newer version may rightly hold partitions this round's placement does not know.
    if state.partitions_version == desired_partitions:
        # Internal topics (tenant_id "") are hosted from the map like tenants' topics.
        hosted = {(entry.topic_id, entry.partition) for entry in state.partitions}
        failing = {(entry.topic_id, entry.partition) for entry in state.failed_partitions}
        missing = expected - hosted - failing
        extra = hosted - expected
        if missing or extra:
            same_version_drift = True
            notes.append(f"hosts {len(missing)} partition(s) too few and {len(extra)} too many at v{desired_partitions}")
    if not notes:
        return None
    return _Drift(
        broker=broker,
        push_partitions=partitions_behind or same_version_drift,
        push_security=security_behind,
        same_version_drift=same_version_drift,
        description=f"broker {broker.node_id}: " + ", ".join(notes),
    )


def _mark_brokers(online: list[int], offline: list[int]) -> None:
    now = timezone.now()
    if online:
        BrokerNode.objects.filter(node_id__in=online).update(state=BrokerState.ONLINE, last_seen_at=now)
    if offline:
        # A broker that stopped cleanly stays STOPPED: the dashboard tells it from a failure.
        BrokerNode.objects.filter(node_id__in=offline).exclude(state=BrokerState.STOPPED).update(state=BrokerState.OFFLINE)


def _record_cluster_key_use(states: list[admin_pb2.DescribeStateResponse]) -> None:
    """Cluster keys are used on brokers, not here: record each key's latest use any broker
    reported, and the applications each broker saw using it."""
    latest: dict[str, int] = {}
    applications: dict[str, list[SeenApplication]] = {}
    for state in states:
        for use in state.credential_uses:
            latest[use.api_key] = max(latest.get(use.api_key, 0), use.last_used_ms)
            applications.setdefault(use.api_key, []).extend(
                SeenApplication(app.client_id, app.software_name, app.software_version, app.address, app.first_seen_ms, app.last_seen_ms)
                for app in use.applications
            )
    if latest:
        do_record_cluster_key_use(latest)
    if any(applications.values()):
        do_record_key_applications(applications)


def reconcile(now: datetime | None = None) -> ReconcileReport:
    """One reconciliation round: recover lost jobs, then check every registered broker (see
    the module docstring). ``now`` is the time lost jobs are judged at (default: now)."""
    report = ReconcileReport()
    metrics.RECONCILE_ROUNDS.inc()
    lost = recover_lost_jobs(now)
    report.requeued_jobs = lost.requeued
    report.failed_lost_jobs = lost.failed
    brokers = [BrokerAddress(node.node_id, node.address) for node in BrokerNode.objects.order_by("node_id")]
    if not brokers:
        return report
    versions = current_versions()
    expected = _expected_partitions()
    with ThreadPoolExecutor(max_workers=min(16, len(brokers))) as pool:
        states = list(pool.map(_probe, brokers))
    drifts: list[_Drift] = []
    for broker, state in zip(brokers, states):
        if state is None:
            report.offline.append(broker.node_id)
            continue
        report.online.append(broker.node_id)
        report.cannot_host.extend(str(PartitionNotApplied.from_reply(broker, failure)) for failure in state.failed_partitions)
        drift = _drift_of(broker, state, versions, expected.get(broker.node_id, set()))
        if drift is not None:
            drifts.append(drift)
            _count_drift(drift)
    _mark_brokers(report.online, report.offline)
    _record_cluster_key_use([state for state in states if state is not None])
    if drifts:
        _repair(drifts, report)
    return report


def _count_drift(drift: _Drift) -> None:
    if drift.push_partitions and not drift.same_version_drift:
        metrics.RECONCILE_DRIFT.labels("partitions_behind").inc()
    if drift.same_version_drift:
        metrics.RECONCILE_DRIFT.labels("hosted_partitions").inc()
    if drift.push_security:
        metrics.RECONCILE_DRIFT.labels("security_behind").inc()


def _repair(drifts: list[_Drift], report: ReconcileReport) -> None:
    if any(drift.same_version_drift for drift in drifts):
        with transaction.atomic():
            bump_versions([SnapshotKind.PARTITIONS])
    kinds = set()
    for drift in drifts:
        if drift.push_partitions:
            kinds.add(SnapshotKind.PARTITIONS)
        if drift.push_security:
            kinds.add(SnapshotKind.SECURITY)
    snapshots = build_snapshots(sorted(kinds))
    for drift in drifts:
        selected = type(snapshots)(
            partitions=snapshots.partitions if drift.push_partitions else None,
            security=snapshots.security if drift.push_security else None,
        )
        error = push_to_broker(drift.broker, selected)
        metrics.RECONCILE_REPAIRS.labels("ok" if error is None else "failed").inc()
        if error is None:
            report.repairs.append(drift.description)
        else:
            report.failures.append(f"{drift.description}; push failed: {error}")
    now = timezone.now()
    # A RECONCILE job has no tenant; its target says what was repaired (or tried), its
    # error what could not be.
    report.job = ProvisioningJob.objects.create(
        tenant=None,
        kind=JobKind.RECONCILE,
        target="; ".join(drift.description for drift in drifts)[:255],
        state=JobState.FAILED if report.failures else JobState.SUCCEEDED,
        attempts=1,
        error="\n".join(report.failures),
        started_at=now,
        finished_at=now,
    )
    LOG.info("reconcile: %s", report.summary())

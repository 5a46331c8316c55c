"""One tenant's topic that no broker can create stops nothing else (issue 12, item 4).

A regular file sits where every broker must create partition 0 of tenant Initech's topic
``blocked``, so no broker can ever host it. The test shows, with a real controller and three
real brokers: the topic's provisioning job ends FAILED naming a broker and the reason; another
tenant's topic created afterwards is hosted by all its replicas, its job SUCCEEDS, and it serves
produce and fetch; killing its leader moves leadership (the controller's pushes of the new map
are applied) and the records written before and after are read back; each broker logs the bad
partition once however many maps it receives, stays ready, and reports it in DescribeState.
"""

from __future__ import annotations

import pytest

from log_formats.log_files import partition_directory_name
from tests.cluster.workload import produce_and_wait, read_everything
from tests.support.real_cluster import ClusterTimings, RealCluster
from webapp.provisioning import jobs
from webapp.provisioning.models import JobKind, JobState, ProvisioningJob
from webapp.provisioning.reconciler import reconcile
from weir.admin import AdminClient, NewTopic
from weir.errors import ErrorCode

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow, pytest.mark.timeout(300)]

TIMINGS = ClusterTimings(session_timeout_ms=3000)
FAILOVER_SECONDS = TIMINGS.session_timeout_ms / 1000 + 20
ACKS_ALL = {"acks": "all", "enable.idempotence": True}
MAX_ATTEMPTS = 2  # a storage failure is retriable: the job tries once more, then fails


@pytest.fixture(autouse=True)
def fast_retries(settings) -> None:  # type: ignore[no-untyped-def]
    settings.WEIR_PROVISIONING_MAX_ATTEMPTS = MAX_ATTEMPTS
    settings.WEIR_PROVISIONING_RETRY_BACKOFF_SECONDS = 0.1


def run_job(tenant_id: str, topic: str) -> ProvisioningJob:
    """Run the topic's CREATE_TOPIC job to its end in this process, as a Celery worker would
    (these clusters run none): one attempt after another, at most MAX_ATTEMPTS."""
    job = ProvisioningJob.objects.get(tenant__public_id=tenant_id, target=topic, kind=JobKind.CREATE_TOPIC)
    for _ in range(MAX_ATTEMPTS):
        if jobs.run_attempt(job.pk).retry_in_seconds is None:
            break
    job.refresh_from_db()
    return job


def bad_partition_log_lines(cluster: RealCluster, node_id: int, qualified: str) -> list[str]:
    text = cluster.brokers[node_id].log_path.read_text(errors="replace")
    return [line for line in text.splitlines() if f"partition 0 of topic {qualified} cannot be hosted" in line]


def test_a_topic_no_broker_can_create_fails_alone_and_other_tenants_topics_provision_serve_and_fail_over(start_cluster) -> None:
    cluster = start_cluster(broker_count=3, timings=TIMINGS)

    # Tenant Initech's "blocked": a file where each broker must create its partition directory.
    bad = cluster.create_tenant("Initech")
    blocked = f"{bad.tenant_id}~blocked"
    for broker in cluster.brokers.values():
        (broker.data_dir / partition_directory_name(blocked, 0)).write_bytes(b"not a directory")
    AdminClient(cluster.client_config()).create_topics([NewTopic("blocked", num_partitions=1, replication_factor=3)])["blocked"].result(timeout=30)
    failed = run_job(bad.tenant_id, "blocked")
    version_when_failed = min(cluster.describe(node_id).partitions_version for node_id in cluster.brokers)
    assert failed.state == JobState.FAILED, failed.error
    assert "could not create partition 0 of topic 'blocked': KAFKA_STORAGE_ERROR" in failed.error
    assert all(f"broker {node_id} at {broker.address}" in failed.error for node_id, broker in cluster.brokers.items()), failed.error

    # Tenant Acme, afterwards: its topic reaches every replica (create_tenant's and
    # create_topic's pushes would fail otherwise), its job succeeds, and it serves.
    good = cluster.create_tenant("Acme")
    cluster.create_topic("orders", 1, 3, {"min.insync.replicas": "2"})
    succeeded = run_job(good.tenant_id, "orders")
    assert (succeeded.state, succeeded.error) == (JobState.SUCCEEDED, "")
    config = cluster.client_config()
    before = produce_and_wait({**config, **ACKS_ALL}, "orders", 0, [b"before-the-kill"])
    assert [error for error, _ in before] == [None], before

    # A leader's death still moves leadership: the controller's new maps are applied by the
    # survivors, bad partition and all.
    leader = cluster.leader_of("orders", 0)
    cluster.kill(leader)

    def new_leader_leads() -> int | None:
        row = cluster.partition_row("orders", 0)
        if row.leader in (-1, leader):
            return None
        hosted = cluster.hosted(row.leader, "orders").get(0)
        return row.leader if hosted is not None and hosted.is_leader and hosted.leader_epoch == row.leader_epoch else None

    new_leader = cluster.wait_until(new_leader_leads, f"a new leader of orders-0 after broker {leader} was killed, leading on its broker", FAILOVER_SECONDS)
    after = produce_and_wait({**config, **ACKS_ALL}, "orders", 0, [b"after-the-kill"])
    assert [error for error, _ in after] == [None], after
    consumed = read_everything(config, "orders", {0: after[0][1] + 1})
    assert [value for _, value in consumed.records[0]] == [b"before-the-kill", b"after-the-kill"]

    for node_id in sorted(cluster.running_nodes()):
        state = cluster.describe(node_id)
        assert [(item.tenant_id, item.topic, item.partition, item.error_code) for item in state.failed_partitions] == [
            (bad.tenant_id, "blocked", 0, ErrorCode.KAFKA_STORAGE_ERROR)
        ]
        # More maps were applied since the job failed (a topic, an election), and the bad
        # partition was logged once.
        assert state.partitions_version >= version_when_failed + 2, (state.partitions_version, version_when_failed)
        assert len(bad_partition_log_lines(cluster, node_id, blocked)) == 1, cluster.log_tails()
    assert new_leader in cluster.running_nodes()
    # The controller's pushes failed only towards the killed broker (unreachable), never
    # because a broker refused a map.
    controller_log = cluster.controller.log_path.read_text(errors="replace")
    assert "ApplyPartitions failed with INTERNAL" not in controller_log, cluster.log_tails()

    # The reconciler does not take the bad partition for drift a push repairs (which would
    # push a new map every round): it reports it, and records no RECONCILE job for it.
    report = reconcile()
    assert report.job is None, report.summary()
    assert sorted(report.online) == sorted(cluster.running_nodes())
    assert len([line for line in report.cannot_host if "partition 0 of topic 'blocked'" in line]) == len(cluster.running_nodes()), report.summary()

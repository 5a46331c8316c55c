"""What other apps may use of provisioning: record a change, describe partitions, push snapshots.

* ``record_change`` is the ONE way a change to topics, ACLs, keys or quotas reaches the
  brokers: call it inside the action's transaction; it bumps the snapshot version the change
  belongs to, creates the PENDING job, and queues the task when the transaction commits.
  Accounts and catalog, below provisioning, reach it through ``webapp.common.changes``, where
  ``ProvisioningConfig.ready`` installs it.
* ``place_partitions`` (catalog's, handed on here) creates the Partition rows of new partitions
  (Kafka's rack-aware round robin over the registered brokers); ``PlacementError``
  (``ReplicationFactorTooLargeError``) means the request must change (the API answers 400).
* ``describe_partitions`` joins the placement with what the brokers report (offsets, sizes),
  marking partitions whose brokers do not answer as unavailable.
* The controller and backup's broker resync build and push snapshots (``build_snapshots``,
  ``push_snapshots``, ``push_to_broker``) under the snapshot versions (``locked_versions``,
  ``bump_versions``), over the brokers' Admin client (``BrokerAdminClient``).
"""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from server_runtime.request_ids import current_request_id
from webapp.accounts.facade import Tenant
from webapp.catalog.facade import place_partitions
from webapp.fleet.facade import (
    InvalidReplicationFactorError,
    PlacementError,
    ReplicationFactorTooLargeError,
)
from webapp.provisioning.broker_client import INTERNAL_TOKEN_METADATA, BrokerAddress, BrokerAdminClient, BrokerCallError
from webapp.provisioning.describe import PartitionDescription, PartitionTraffic, describe_partitions, describe_tenant_traffic
from webapp.provisioning.metrics import JobTableCollector
from webapp.provisioning.models import JobKind, JobState, ProvisioningJob, SnapshotKind, SnapshotVersion
from webapp.provisioning.push import push_snapshots, push_targets, push_to_broker
from webapp.provisioning.snapshots import Snapshots, build_snapshots
from webapp.provisioning.versions import bump_versions, current_versions, locked_versions, snapshot_kinds_for

__all__ = [
    "BrokerAddress",
    "BrokerAdminClient",
    "BrokerCallError",
    "INTERNAL_TOKEN_METADATA",
    "InvalidReplicationFactorError",
    "JobKind",
    "JobState",
    "JobTableCollector",
    "PartitionDescription",
    "PartitionTraffic",
    "PlacementError",
    "ProvisioningJob",
    "ReplicationFactorTooLargeError",
    "SnapshotKind",
    "SnapshotVersion",
    "Snapshots",
    "build_snapshots",
    "bump_versions",
    "current_versions",
    "describe_partitions",
    "describe_tenant_traffic",
    "locked_versions",
    "place_partitions",
    "push_snapshots",
    "push_targets",
    "push_to_broker",
    "record_change",
]


def record_change(
    tenant: Tenant | None,
    kind: str,
    target: str,
    created_by: AbstractBaseUser | None = None,
    request_id: str = "",
) -> ProvisioningJob:
    """Record one desired-state change and schedule its push to the brokers.

    Precondition: called inside the transaction that made the change (``transaction.atomic``),
    after the change is written, so that the snapshot version and the data commit together
    and the task, queued on commit, sees both. ``kind`` is a ``JobKind``; topic kinds bump
    the partitions snapshot, ``SYNC_SECURITY`` the security snapshot, ``RECONCILE`` both.
    ``created_by`` is a Django user (``None`` for service-account keys and the system).
    ``request_id`` defaults to the id current in this thread (``server_runtime.request_ids``: the HTTP
    request's, or the forwarded call's in the controller); the task runs with it.
    """
    kind = JobKind(kind)
    bump_versions(snapshot_kinds_for(kind))
    job = ProvisioningJob.objects.create(
        tenant=tenant,
        kind=kind,
        target=target[:255],
        state=JobState.PENDING,
        created_by=created_by if created_by is not None and created_by.is_authenticated else None,
        request_id=(request_id or current_request_id() or "")[:64],
    )
    job_id = job.pk

    def queue() -> None:
        # Imported here: the tasks module imports Celery, which the models layer need not load.
        from webapp.provisioning.tasks import run_job

        run_job.delay(job_id)

    transaction.on_commit(queue)
    return job

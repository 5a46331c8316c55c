"""What other apps may use of provisioning: record a change, place partitions, describe them.

* ``record_change`` is the ONE way a change to topics, ACLs, keys or quotas reaches the
  brokers: call it inside the action's transaction; it bumps the snapshot version the change
  belongs to, creates the PENDING job, and queues the task when the transaction commits.
* ``place_partitions`` creates the Partition rows of new partitions (Kafka's rack-aware round
  robin over the registered brokers); ``PlacementError`` (``ReplicationFactorTooLargeError``)
  means the request must change (the API answers 400).
* ``describe_partitions`` joins the placement with what the brokers report (offsets, sizes),
  marking partitions whose brokers do not answer as unavailable.
"""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from webapp.accounts.models import Tenant
from webapp.fleet.placement import (
    InvalidReplicationFactorError,
    PlacementError,
    ReplicationFactorTooLargeError,
)
from webapp.provisioning.describe import PartitionDescription, describe_partitions
from webapp.provisioning.models import JobKind, JobState, ProvisioningJob
from webapp.provisioning.placement_rows import place_partitions
from webapp.provisioning.versions import bump_versions, snapshot_kinds_for
from weir.request_ids import current_request_id

__all__ = [
    "InvalidReplicationFactorError",
    "PartitionDescription",
    "PlacementError",
    "ReplicationFactorTooLargeError",
    "describe_partitions",
    "place_partitions",
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
    ``request_id`` defaults to the id current in this thread (``weir.request_ids``: the HTTP
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

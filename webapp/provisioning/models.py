"""Provisioning jobs (user-visible) and the versions of the snapshots pushed to brokers."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from webapp.common.changes import JobKind
from webapp.public_ids import new_job_id

# JobKind is defined beside record_change in webapp.common.changes (the lower apps name the
# kinds they record); it is re-exported here for the job's field and provisioning's modules.
__all__ = ["JobKind", "JobState", "ProvisioningJob", "SnapshotKind", "SnapshotVersion"]


class JobState(models.TextChoices):
    PENDING = "PENDING"
    RUNNING = "RUNNING"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"


class ProvisioningJob(models.Model):
    """One change being pushed to the brokers. ``target`` names what changed (a topic name,
    an ACL id, a key id) as text, so the job outlives a deleted target."""

    public_id = models.CharField(max_length=32, unique=True, default=new_job_id, editable=False)
    tenant = models.ForeignKey("accounts.Tenant", on_delete=models.CASCADE, null=True, blank=True, related_name="jobs")
    kind = models.CharField(max_length=24, choices=JobKind.choices)
    target = models.CharField(max_length=255, blank=True)
    state = models.CharField(max_length=10, choices=JobState.choices, default=JobState.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True)
    request_id = models.CharField(max_length=64, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # Last sign of life of an unfinished job: an attempt started, a retry was scheduled, or the
    # reconciler re-queued it. A job silent for longer than jobs.lost_after_seconds() lost its
    # Celery message (a killed worker) and the reconciler re-queues or fails it.
    heartbeat_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["tenant", "-created_at"]), models.Index(fields=["state"])]

    def __str__(self) -> str:
        return f"{self.kind} {self.target} ({self.state})"


class SnapshotKind(models.TextChoices):
    PARTITIONS = "partitions"  # ApplyPartitions: brokers, topics, placement
    SECURITY = "security"  # ApplySecurity: credentials, ACLs, quotas


class SnapshotVersion(models.Model):
    """Monotonic version of each desired-state snapshot, bumped in the same transaction as
    the change it covers; brokers refuse versions older than the one they applied."""

    kind = models.CharField(max_length=16, choices=SnapshotKind.choices, primary_key=True)
    version = models.BigIntegerField(default=0)

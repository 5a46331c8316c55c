"""Recording a desired-state change: how an action in a lower app (accounts, catalog) starts
the push to the brokers that the provisioning app, above it, performs.

Accounts and catalog actions change desired state and must record a provisioning job in the
same transaction; provisioning, in turn, reads accounts and catalog rows to build what it
pushes. Importing provisioning from those actions made the apps import each other. Instead the
actions call :func:`record_change` here, and provisioning installs the function that does the
work (``webapp.provisioning.facade.record_change``) when its Django app is ready. The kinds of
change live here too, because both sides name them.
"""

from __future__ import annotations

from typing import Any, Protocol

from django.core.exceptions import ImproperlyConfigured
from django.db import models


class JobKind(models.TextChoices):
    """What a recorded change does; each is pushed to the brokers by one provisioning job."""

    CREATE_TOPIC = "CREATE_TOPIC"
    DELETE_TOPIC = "DELETE_TOPIC"
    ALTER_TOPIC_CONFIGS = "ALTER_TOPIC_CONFIGS"
    CREATE_PARTITIONS = "CREATE_PARTITIONS"
    SYNC_SECURITY = "SYNC_SECURITY"  # ACL, API key or quota changes
    RECONCILE = "RECONCILE"


class RecordedChange(Protocol):
    """The provisioning job that carries a change (a ``ProvisioningJob``): what actions hand
    back to the REST API and the dashboard, which show it to the user."""

    pk: Any
    public_id: str


class ChangeRecorder(Protocol):
    def __call__(self, tenant: Any, kind: str, target: str, created_by: Any = None, request_id: str = "") -> RecordedChange: ...


_recorder: ChangeRecorder | None = None


def install_recorder(recorder: ChangeRecorder) -> None:
    """Make ``recorder`` the one that :func:`record_change` calls (provisioning's app config
    does, once, at start-up)."""
    global _recorder
    _recorder = recorder


def record_change(tenant: Any, kind: str, target: str, created_by: Any = None, request_id: str = "") -> RecordedChange:
    """Record one desired-state change of ``tenant`` (a ``Tenant``, or None for cluster-wide
    changes) and schedule its push to the brokers; return the PENDING job.

    Precondition: called inside the transaction that made the change, after the change is
    written (see ``webapp.provisioning.facade.record_change`` for what the job and the snapshot
    versions guarantee). ``kind`` is a :class:`JobKind`; ``created_by`` a Django user or None.
    """
    if _recorder is None:
        raise ImproperlyConfigured("No change recorder is installed: 'webapp.provisioning' must be in INSTALLED_APPS, whose ready() installs it.")
    return _recorder(tenant, kind, target, created_by=created_by, request_id=request_id)

"""Snapshot versions: bumped by every change, read with the snapshot they describe.

Consistency rule: a change bumps its snapshot's ``SnapshotVersion`` row in the change's own
transaction, which holds that row's lock until commit. A snapshot is built after locking
the same row (``locked_versions``), so it waits for changes that already bumped, and changes
that have not bumped yet cannot commit before it finishes reading: the snapshot holds
exactly the changes whose version is at most the one it carries.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.db import IntegrityError, transaction
from django.db.models import F

from webapp.provisioning.models import JobKind, SnapshotKind, SnapshotVersion

# Which snapshot each kind of job changes; RECONCILE pushes everything.
_SNAPSHOTS_OF_JOB_KIND: dict[str, tuple[str, ...]] = {
    JobKind.CREATE_TOPIC: (SnapshotKind.PARTITIONS,),
    JobKind.DELETE_TOPIC: (SnapshotKind.PARTITIONS,),
    JobKind.ALTER_TOPIC_CONFIGS: (SnapshotKind.PARTITIONS,),
    JobKind.CREATE_PARTITIONS: (SnapshotKind.PARTITIONS,),
    JobKind.SYNC_SECURITY: (SnapshotKind.SECURITY,),
    JobKind.RECONCILE: (SnapshotKind.PARTITIONS, SnapshotKind.SECURITY),
}

# The job kinds whose changes a push of exactly these snapshot kinds (sorted) delivers in full.
JOB_KINDS_OF_SNAPSHOTS: dict[tuple[str, ...], tuple[str, ...]] = {
    pushed: tuple(kind for kind, changed in _SNAPSHOTS_OF_JOB_KIND.items() if set(changed) <= set(pushed))
    for pushed in (
        (SnapshotKind.PARTITIONS,),
        (SnapshotKind.SECURITY,),
        tuple(sorted((SnapshotKind.PARTITIONS, SnapshotKind.SECURITY))),
    )
}


def snapshot_kinds_for(job_kind: str) -> tuple[str, ...]:
    """The snapshot kinds a job of ``job_kind`` changes and pushes."""
    return _SNAPSHOTS_OF_JOB_KIND[JobKind(job_kind)]


def _ensure_rows(kinds: Iterable[str]) -> None:
    for kind in kinds:
        if not SnapshotVersion.objects.filter(kind=kind).exists():
            try:
                # A savepoint, so that losing the race to another creator leaves the
                # caller's transaction usable.
                with transaction.atomic():
                    SnapshotVersion.objects.create(kind=kind, version=0)
            except IntegrityError:
                pass


def bump_versions(kinds: Iterable[str]) -> dict[str, int]:
    """Increase each snapshot version by one and return the new values.

    Precondition: inside the transaction of the change (the row locks are held to commit).
    Kinds are bumped in a fixed order so that two changes never wait on each other in a cycle.
    """
    ordered = sorted(set(kinds))
    _ensure_rows(ordered)
    new_versions: dict[str, int] = {}
    for kind in ordered:
        SnapshotVersion.objects.filter(kind=kind).update(version=F("version") + 1)
        new_versions[kind] = SnapshotVersion.objects.get(kind=kind).version
    return new_versions


def locked_versions(kinds: Iterable[str]) -> dict[str, int]:
    """Current versions of ``kinds``, locking their rows until the transaction ends.

    Precondition: inside ``transaction.atomic``; read the snapshot's data after this call.
    """
    ordered = sorted(set(kinds))
    _ensure_rows(ordered)
    rows = SnapshotVersion.objects.select_for_update().filter(kind__in=ordered).order_by("kind")
    return {row.kind: row.version for row in rows}


def current_versions() -> dict[str, int]:
    """Current versions of every snapshot kind without locking (0 when never bumped)."""
    versions = {kind: 0 for kind in SnapshotKind.values}
    versions.update(SnapshotVersion.objects.values_list("kind", "version"))
    return versions

"""Consumer-group changes as a tenant makes them: audited deletions and offset resets, and the
undo of a reset.

Deleting a group records ``group.delete``. Every reset a tenant applies (dashboard or REST) goes through :func:`apply_recorded_reset`: the
audit log gets one ``group.reset_offsets`` event holding, per partition, the offset committed
just before (``previous``, null where nothing was committed) and the one written (``new``).
That event is also what an undo reads: :func:`undo_last_reset` writes the ``previous`` offsets
back, as one more audited reset, but only

- while the group is still inactive (no members: Kafka lets only an empty group's offsets
  change, and ``apply_reset`` refuses otherwise), and
- while its committed offsets are still the reset's ``new`` ones: a consumer that ran and
  committed since would lose that progress, so the undo is refused (Conflict) and says where.

Partitions where nothing was committed before keep the reset's offset (Kafka's offset reset
cannot remove a commit); the undo page says which. An undo cannot itself be undone (the reset
before it can be applied again from the reset page).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db import transaction

from webapp.accounts.facade import Actor, Conflict, NotFound
from webapp.audit.facade import AuditEvent, record_event
from webapp.consumer_groups import ResetOutcome, ResetRequest, apply_reset, delete_group, get_group_lag

RESET_ACTION = "group.reset_offsets"
DELETE_ACTION = "group.delete"
PartitionKey = tuple[str, int]


def _key_text(topic: str, partition: int) -> str:
    # Topic names never contain ':' (Kafka's name rules), so "topic:partition" splits back unambiguously.
    return f"{topic}:{partition}"


def _key(text: str) -> PartitionKey:
    topic, _, partition = text.rpartition(":")
    return topic, int(partition)


@dataclass(frozen=True)
class UndoPlan:
    """What undoing the group's last reset would write (``restore``), what must still be
    committed for it to be safe (``expected``), and the partitions it cannot restore."""

    event_id: str
    at: datetime
    restore: dict[PartitionKey, int]
    expected: dict[PartitionKey, int]
    not_restorable: list[PartitionKey]


def apply_recorded_reset(actor: Actor, group_id: str, request: ResetRequest, undo_of: str = "") -> ResetOutcome:
    """``apply_reset`` as ``actor`` (Conflict while the group has members), then the audit event."""
    outcome = apply_reset(actor.tenant.public_id, group_id, request)
    summary: dict[str, object] = {
        "to": request.to,
        "previous": {_key_text(change.topic, change.partition): change.current_offset for change in outcome.changes},
        "new": {_key_text(change.topic, change.partition): change.new_offset for change in outcome.changes},
    }
    if undo_of:
        summary["undo_of"] = undo_of
    with transaction.atomic():
        record_event(actor, RESET_ACTION, group_id, summary)
    return outcome


def undo_plan(tenant: object, group_id: str) -> UndoPlan | None:
    """The undo of ``group_id``'s last reset in ``tenant``; None when there is none (or the last one was an undo)."""
    event = AuditEvent.objects.filter(tenant=tenant, action=RESET_ACTION, target=group_id).order_by("-at", "-pk").first()
    if event is None or "undo_of" in event.summary:
        return None
    previous = {_key(text): offset for text, offset in event.summary.get("previous", {}).items()}
    expected = {_key(text): int(offset) for text, offset in event.summary.get("new", {}).items()}
    restore = {key: int(offset) for key, offset in previous.items() if offset is not None}
    return UndoPlan(event.public_id, event.at, restore, expected, sorted(key for key, offset in previous.items() if offset is None))


def undo_last_reset(actor: Actor, group_id: str) -> ResetOutcome:
    """Write back the offsets recorded just before the group's last reset (see the module docstring)."""
    plan = undo_plan(actor.tenant, group_id)
    if plan is None or not plan.restore:
        raise NotFound(f"Consumer group '{group_id}' has no offset reset to undo.")
    _, lag = get_group_lag(actor.tenant.public_id, group_id)
    committed = {(row.topic, row.partition): row.committed_offset for row in lag.partitions}
    moved = [
        f"{topic} [{partition}] is at {committed.get((topic, partition))}, not {offset}"
        for (topic, partition), offset in sorted(plan.expected.items())
        if committed.get((topic, partition)) != offset
    ]
    if moved:
        raise Conflict(f"Consumer group '{group_id}' committed offsets since the reset ({'; '.join(moved)}): undoing would discard that progress.")
    return apply_recorded_reset(actor, group_id, ResetRequest(to="offsets", offsets=plan.restore), undo_of=plan.event_id)


def delete_recorded_group(actor: Actor, group_id: str) -> None:
    """``delete_group`` as ``actor`` (NotFound, Conflict while it has members), then the audit event."""
    delete_group(actor.tenant.public_id, group_id)
    with transaction.atomic():
        record_event(actor, DELETE_ACTION, group_id, {})

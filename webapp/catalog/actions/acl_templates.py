"""ACL templates: the bindings an application's role needs, created in one step.

As ``kafka-acls --producer`` / ``--consumer`` do:

- ``producer``: WRITE and DESCRIBE on the topic (LITERAL name or PREFIXED prefix).
- ``consumer``: READ and DESCRIBE on the topic, and READ on the consumer group (LITERAL) --
  the binding people forget: without it the consumer cannot join or commit.
- ``transactional-producer``: WRITE and DESCRIBE on the topic, WRITE and DESCRIBE on its
  ``transactional.id`` (the TRANSACTIONAL_ID resource, LITERAL, or PREFIXED for a family of
  ids with the topic's pattern), and READ on the group when it also commits consumed offsets
  (``send_offsets_to_transaction``).

Each binding is validated by ``check_create_acl`` (the rules of one binding); bindings that
already exist are kept and reported, and the new ones are stored with one SYNC_SECURITY job.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from django.db import transaction

from webapp.accounts.facade import Actor, InvalidInput, Role, require_role
from webapp.audit.facade import record_event
from webapp.catalog.actions.acls import NewAclBinding, check_create_acl
from webapp.catalog.models import AclBinding, Operation, PatternType, Permission, ResourceType
from webapp.common.changes import JobKind, RecordedChange, record_change

PRODUCER = "producer"
CONSUMER = "consumer"
TRANSACTIONAL_PRODUCER = "transactional-producer"
TEMPLATES = {
    PRODUCER: "Producer: WRITE and DESCRIBE on the topic(s)",
    CONSUMER: "Consumer: READ and DESCRIBE on the topic(s), READ on its group",
    TRANSACTIONAL_PRODUCER: "Transactional producer: WRITE and DESCRIBE on the topic(s) and its transactional id, READ on the group whose offsets it commits",
}
_TOPIC_OPERATIONS = {
    PRODUCER: (Operation.WRITE, Operation.DESCRIBE),
    CONSUMER: (Operation.READ, Operation.DESCRIBE),
    TRANSACTIONAL_PRODUCER: (Operation.WRITE, Operation.DESCRIBE),
}


# The template field that names each resource type's name (where a binding's name problem is reported).
_NAME_FIELDS = {ResourceType.TOPIC: "topic", ResourceType.GROUP: "group", ResourceType.TRANSACTIONAL_ID: "transactional_id"}


@dataclass(frozen=True)
class TemplateResult:
    created: list[AclBinding]
    existing: list[NewAclBinding]
    job: RecordedChange | None


def check_acl_template(
    actor: Actor, *, template: str, principal: str, topic: str, pattern_type: str, group: str = "", transactional_id: str = ""
) -> list[NewAclBinding]:
    """The bindings ``template`` means for ``principal``; InvalidInput names each bad field
    (``group`` is required for a consumer, optional for a transactional producer;
    ``transactional_id`` is required for a transactional producer and used by it alone)."""
    require_role(actor, Role.ADMIN, "manage ACLs")
    if template not in TEMPLATES:
        raise InvalidInput.for_field("template", f"One of {', '.join(TEMPLATES)}.")
    if template == CONSUMER and not group:
        raise InvalidInput.for_field("group", "A consumer needs READ on its consumer group: name the group (its group.id).")
    if template == TRANSACTIONAL_PRODUCER and not transactional_id:
        raise InvalidInput.for_field("transactional_id", "A transactional producer needs WRITE on its transactional.id: name it (or its prefix with PREFIXED).")
    wanted = [
        {"resource_type": ResourceType.TOPIC, "resource_name": topic, "pattern_type": pattern_type, "operation": operation}
        for operation in _TOPIC_OPERATIONS[template]
    ]
    if template == TRANSACTIONAL_PRODUCER:
        wanted += [
            {"resource_type": ResourceType.TRANSACTIONAL_ID, "resource_name": transactional_id, "pattern_type": pattern_type, "operation": operation}
            for operation in (Operation.WRITE, Operation.DESCRIBE)
        ]
    if group:
        wanted.append({"resource_type": ResourceType.GROUP, "resource_name": group, "pattern_type": PatternType.LITERAL, "operation": Operation.READ})
    bindings = []
    for fields in wanted:
        try:
            bindings.append(check_create_acl(actor, principal=principal, host="*", permission=Permission.ALLOW, **fields))
        except InvalidInput as error:
            # A group's problem is reported on "group", a topic's on "topic".
            field_names = {"resource_name": _NAME_FIELDS[fields["resource_type"]]}
            raise InvalidInput({field_names.get(name, name): problems for name, problems in error.errors.items()}) from error
    return bindings


def do_apply_acl_template(actor: Actor, template: str, bindings: list[NewAclBinding], request_id: str = "") -> TemplateResult:
    """Store the bindings not yet present, in one transaction with one SYNC_SECURITY job."""
    created: list[AclBinding] = []
    existing: list[NewAclBinding] = []
    with transaction.atomic():
        for binding in bindings:
            values = asdict(binding)
            if AclBinding.objects.filter(tenant=actor.tenant, **values).exists():
                existing.append(binding)
                continue
            stored = AclBinding.objects.create(tenant=actor.tenant, **values)
            record_event(actor, "acl.create", stored.public_id, {**values, "template": template})
            created.append(stored)
        job = None
        if created:
            target = created[0].public_id if len(created) == 1 else f"{len(created)} ACL bindings"
            job = record_change(actor.tenant, JobKind.SYNC_SECURITY, target, created_by=actor.user, request_id=request_id)
    return TemplateResult(created, existing, job)

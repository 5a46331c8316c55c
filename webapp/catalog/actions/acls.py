"""ACL actions: create one binding, delete every binding a filter matches."""

from __future__ import annotations

import ipaddress
from dataclasses import asdict, dataclass, fields

from django.db import IntegrityError, transaction

from log_formats.topic_names import TENANT_SEPARATOR  # brokers qualify names as tenant~name; it may never appear in a name
from webapp.accounts.facade import Actor, Conflict, InvalidInput, Membership, Role, ServiceAccount, require_role
from webapp.audit.facade import record_event
from webapp.catalog.acl_filters import WILDCARD_RESOURCE, AclFilter, apply_acl_filter
from webapp.catalog.models import CLUSTER_RESOURCE_NAME, AclBinding, Operation, PatternType, Permission, ResourceType
from webapp.common.changes import JobKind, RecordedChange, record_change

# Kafka's operations per resource type (AclEntry.supportedOperations), restricted to the
# operations Weir's brokers check.
OPERATIONS_BY_RESOURCE_TYPE: dict[str, frozenset[str]] = {
    ResourceType.TOPIC: frozenset(
        {
            Operation.ALL,
            Operation.READ,
            Operation.WRITE,
            Operation.CREATE,
            Operation.DELETE,
            Operation.ALTER,
            Operation.DESCRIBE,
            Operation.DESCRIBE_CONFIGS,
            Operation.ALTER_CONFIGS,
        }
    ),
    ResourceType.GROUP: frozenset({Operation.ALL, Operation.READ, Operation.DELETE, Operation.DESCRIBE}),
    ResourceType.CLUSTER: frozenset(
        {Operation.ALL, Operation.CREATE, Operation.ALTER, Operation.DESCRIBE, Operation.DESCRIBE_CONFIGS, Operation.ALTER_CONFIGS, Operation.IDEMPOTENT_WRITE}
    ),
    ResourceType.TRANSACTIONAL_ID: frozenset({Operation.ALL, Operation.WRITE, Operation.DESCRIBE}),
}
WILDCARD_PRINCIPAL = "User:*"
PRINCIPAL_PREFIX = "User:"
MAX_RESOURCE_NAME_LENGTH = 255
MAX_PRINCIPAL_LENGTH = AclBinding._meta.get_field("principal").max_length or 128  # the stored column


@dataclass(frozen=True)
class NewAclBinding:
    resource_type: str
    resource_name: str
    pattern_type: str
    principal: str
    host: str
    operation: str
    permission: str


def check_create_acl(
    actor: Actor,
    *,
    resource_type: str,
    resource_name: str,
    pattern_type: str,
    principal: str,
    host: str,
    operation: str,
    permission: str,
    known_principal: bool = True,
) -> NewAclBinding:
    """Validate a binding: Kafka's vocabulary, an operation the resource type supports, a
    principal of this tenant (``User:sa-...``, ``User:u-...`` or ``User:*``), a host that is
    ``*`` or an IP address.

    ``known_principal=False`` (Kafka's AdminClient doors, forwarded by a broker): as Kafka, any
    ``User:<name>`` is accepted, whether or not such an identity exists yet. The binding lives
    in this tenant and is evaluated for this tenant's callers only, so a name no identity has
    matches nobody. The dashboard and REST keep the check (a typo there is a mistake)."""
    require_role(actor, Role.ADMIN, "manage ACLs")
    errors: dict[str, object] = {}
    if resource_type not in ResourceType.values:
        errors["resource_type"] = [f"One of {', '.join(ResourceType.values)}."]
    if pattern_type not in PatternType.values:
        errors["pattern_type"] = [f"One of {', '.join(PatternType.values)}."]
    if permission not in Permission.values:
        errors["permission"] = [f"One of {', '.join(Permission.values)}."]
    if operation not in Operation.values:
        errors["operation"] = [f"One of {', '.join(Operation.values)}."]
    elif resource_type in OPERATIONS_BY_RESOURCE_TYPE and operation not in OPERATIONS_BY_RESOURCE_TYPE[resource_type]:
        allowed = ", ".join(sorted(OPERATIONS_BY_RESOURCE_TYPE[resource_type]))
        errors["operation"] = [f"{operation} does not apply to {resource_type}; one of {allowed}."]
    name_problem = _resource_name_problem(resource_type, resource_name, pattern_type)
    if name_problem:
        errors["resource_name"] = [name_problem]
    principal_problem = _principal_problem(actor, principal) if known_principal else _principal_form_problem(principal)
    if principal_problem:
        errors["principal"] = [principal_problem]
    if host != "*":
        try:
            ipaddress.ip_address(host)
        except ValueError:
            errors["host"] = ["'*' or an IP address."]
    if errors:
        raise InvalidInput(errors)
    return NewAclBinding(resource_type, resource_name, pattern_type, principal, host, operation, permission)


def _resource_name_problem(resource_type: str, resource_name: str, pattern_type: str) -> str | None:
    if not resource_name:
        return "A resource name is required ('*' for every resource)."
    if len(resource_name) > MAX_RESOURCE_NAME_LENGTH:
        return f"At most {MAX_RESOURCE_NAME_LENGTH} characters."
    if TENANT_SEPARATOR in resource_name:
        return f"'{TENANT_SEPARATOR}' cannot appear in a resource name."
    if resource_type == ResourceType.CLUSTER and (resource_name != CLUSTER_RESOURCE_NAME or pattern_type != PatternType.LITERAL):
        return f"The CLUSTER resource is named '{CLUSTER_RESOURCE_NAME}' with pattern LITERAL."
    if pattern_type == PatternType.PREFIXED and resource_name == WILDCARD_RESOURCE:
        return "'*' is a wildcard only with pattern LITERAL."
    return None


def _principal_form_problem(principal: str) -> str | None:
    """Kafka's form of a principal: ``User:<name>``, printable, within the stored length."""
    if not principal.startswith(PRINCIPAL_PREFIX) or len(principal) == len(PRINCIPAL_PREFIX):
        return "A principal is 'User:<name>'."
    if len(principal) > MAX_PRINCIPAL_LENGTH:
        return f"At most {MAX_PRINCIPAL_LENGTH} characters."
    if not principal.isprintable():
        return "A principal has no control characters."
    return None


def _principal_problem(actor: Actor, principal: str) -> str | None:
    if principal == WILDCARD_PRINCIPAL:
        return None
    if not principal.startswith(PRINCIPAL_PREFIX):
        return "A principal is 'User:<service account or member id>' or 'User:*'."
    identity = principal[len(PRINCIPAL_PREFIX) :]
    exists = (
        ServiceAccount.objects.filter(tenant=actor.tenant, public_id=identity).exists()
        or Membership.objects.filter(tenant=actor.tenant, public_id=identity).exists()
    )
    if not exists:
        return f"No service account or member '{identity}' in this tenant."
    return None


def do_create_acl(actor: Actor, binding: NewAclBinding, request_id: str = "") -> tuple[AclBinding, RecordedChange]:
    """Store the binding and record SYNC_SECURITY; an identical binding is a Conflict."""
    values = asdict(binding)  # the binding's fields are the model's, name for name
    try:
        with transaction.atomic():
            if AclBinding.objects.filter(tenant=actor.tenant, **values).exists():
                raise Conflict("An identical ACL binding already exists.")
            created = AclBinding.objects.create(tenant=actor.tenant, **values)
            record_event(actor, "acl.create", created.public_id, values)
            job = record_change(actor.tenant, JobKind.SYNC_SECURITY, created.public_id, created_by=actor.user, request_id=request_id)
    except IntegrityError as error:
        raise Conflict("An identical ACL binding already exists.") from error
    return created, job


def do_delete_acls(actor: Actor, acl_filter: AclFilter, request_id: str = "") -> tuple[list[AclBinding], RecordedChange | None]:
    """Delete the tenant's bindings that ``acl_filter`` matches; returns them (as they were)
    and the SYNC_SECURITY job, or no job when nothing matched."""
    require_role(actor, Role.ADMIN, "manage ACLs")
    with transaction.atomic():
        matched = list(apply_acl_filter(AclBinding.objects.filter(tenant=actor.tenant), acl_filter).select_for_update())
        if not matched:
            return [], None
        AclBinding.objects.filter(pk__in=[binding.pk for binding in matched]).delete()
        for binding in matched:
            record_event(actor, "acl.delete", binding.public_id, {field.name: getattr(binding, field.name) for field in fields(NewAclBinding)})
        target = matched[0].public_id if len(matched) == 1 else f"{len(matched)} ACL bindings"
        job = record_change(actor.tenant, JobKind.SYNC_SECURITY, target, created_by=actor.user, request_id=request_id)
    return matched, job

"""What stops working when an admin deletes an ACL binding, revokes an API key or removes a
member: the sentences the confirmation pages show before anything changes.

Each function reads only the tenant's rows (a few queries) and changes nothing.
"""

from __future__ import annotations

from collections.abc import Sequence

from django.db.models import Q
from django.utils import timezone
from django.utils.timesince import timesince

from webapp.accounts.facade import ApiKey, ApiKeyApplication, ApiKeyKind, Membership
from webapp.catalog.facade import AccessQuestion, AclBinding, PatternType, Permission, ResourceType, Topic, cluster_admin_explanation, explain_with

MAX_NAMED = 5  # topics or keys named in one sentence; the rest are counted


def _names(values: list[str]) -> str:
    shown = ", ".join(values[:MAX_NAMED])
    return shown + (f" and {len(values) - MAX_NAMED} more" if len(values) > MAX_NAMED else "")


def acl_deletion_consequences(binding: AclBinding) -> list[str]:
    """What the binding's principal can or cannot do once the binding is gone."""
    lines = []
    if binding.resource_type == ResourceType.TOPIC:
        topics = Topic.objects.filter(tenant=binding.tenant_id).order_by("name")
        if binding.pattern_type == PatternType.PREFIXED:
            topics = topics.filter(name__startswith=binding.resource_name)
        elif binding.resource_name != "*":
            topics = topics.filter(name=binding.resource_name)
        names = list(topics.values_list("name", flat=True))
        lines.append(f"It applies to {len(names)} existing topic(s){': ' + _names(names) if names else ''}.")
    name = binding.resource_name if binding.resource_name != "*" or binding.pattern_type == PatternType.PREFIXED else "any-name"
    if binding.principal == "User:*":
        lines.append("It applies to every principal of this organisation, except the cluster keys of admin and owner members, which need no ACLs.")
        return lines
    host = "" if binding.host == "*" else binding.host
    question = AccessQuestion(binding.principal, _asked_operation(binding), binding.resource_type, name, host)
    # An admin's or owner's cluster keys are the tenant's cluster administrator: the brokers
    # consult no binding for them, so deleting one takes nothing away from them (nor lifts a DENY).
    cluster_admin = cluster_admin_explanation(binding.tenant, question)
    if cluster_admin is not None:
        lines.append(f"Nothing changes for {binding.principal}'s cluster keys, which never needed it: {cluster_admin.reason}")
        lines.append("The binding would decide again for them if the member's role dropped below admin.")
        return lines
    remaining = AclBinding.objects.filter(tenant=binding.tenant_id).exclude(pk=binding.pk).order_by("pk")
    after = explain_with(remaining, question)
    verb = "can still" if after.allowed else "can no longer"
    if binding.permission == Permission.DENY:
        verb = "will be allowed to" if after.allowed else "stays denied to"
    lines.append(f"Afterwards {binding.principal} {verb} {_asked_operation(binding)} {binding.resource_type} '{name}': {after.reason}")
    return lines


def _asked_operation(binding: AclBinding) -> str:
    # ALL is not something a client asks for; its most common use is reading or writing.
    if binding.operation != "ALL":
        return str(binding.operation)
    return "READ" if binding.resource_type == ResourceType.GROUP else "DESCRIBE" if binding.resource_type == ResourceType.CLUSTER else "WRITE"


def key_revocation_consequences(key: ApiKey, applications: Sequence[ApiKeyApplication] = ()) -> list[str]:
    """Who uses the key (as far as the brokers and the REST API report: ``applications``, most
    recently seen first), and what its owner keeps."""
    if key.kind == ApiKeyKind.CLUSTER:
        lines = ["Producers, consumers and Kafka clients that authenticate with it are refused at their next request (a connection open with it is closed)."]
    else:
        lines = ["REST API calls made with it answer 401 from now on."]
    if key.last_used_at is None:
        lines.append("It has never been used, as far as the brokers and the REST API have reported.")
    else:
        lines.append(f"It was last used {timesince(key.last_used_at, timezone.now())} ago ({key.last_used_at:%Y-%m-%d %H:%M} UTC).")
    if applications:
        named = [_application_name(app) for app in applications]
        lines.append(f"{len(named)} application(s) used it recently, as the brokers reported: {_names(named)}.")
    elif key.kind == ApiKeyKind.CLUSTER:
        lines.append("No broker has reported which applications use it: check the applications configured with this key id.")
    owner = Q(owner_service_account=key.owner_service_account_id) if key.owner_service_account_id else Q(owner_membership=key.owner_membership_id)
    others = list(ApiKey.objects.filter(owner, kind=key.kind, revoked_at__isnull=True).exclude(pk=key.pk).values_list("key_id", flat=True))
    if others:
        lines.append(f"{key.principal} keeps {len(others)} other active {key.kind} key(s): {_names(others)}.")
    else:
        lines.append(f"{key.principal} has no other active {key.kind} key: every application of this owner using {key.kind} keys stops.")
    return lines


def _application_name(app: ApiKeyApplication) -> str:
    """``client.id`` (software) from address, last seen when: client-supplied parts as they were stored (the template escapes)."""
    software = f" ({app.software})" if app.software else ""
    return f"{app.client_id or 'an application without client.id'}{software} from {app.address}, last seen {timesince(app.last_seen_at, timezone.now())} ago"


def member_removal_consequences(membership: Membership) -> list[str]:
    """What the member loses: the organisation, its keys; the ACLs that name it stay."""
    keys = list(ApiKey.objects.filter(owner_membership=membership, revoked_at__isnull=True).values_list("key_id", flat=True))
    bindings = AclBinding.objects.filter(tenant=membership.tenant_id, principal=membership.principal).count()
    lines = [f"{membership.user.get_username()} can no longer sign in to this organisation (other organisations are not affected)."]
    if keys:
        lines.append(f"Their {len(keys)} active API key(s) are deleted and stop working: {_names(keys)}.")
    else:
        lines.append("They hold no active API key.")
    if bindings:
        lines.append(f"The {bindings} ACL binding(s) naming {membership.principal} stay, as in Kafka; delete them on the ACLs page if they should go.")
    return lines

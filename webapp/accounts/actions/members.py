"""Member actions: invite by e-mail, accept an invitation, change a role, remove a member.

Owners manage members and roles; admins may invite anyone but owners. A tenant always
keeps at least one owner: the last owner can be neither demoted nor removed.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import timedelta

from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction
from django.utils import timezone

from webapp.accounts.errors import Conflict, InvalidInput, NotAllowed, NotFound, StateConflict
from webapp.accounts.identity import Actor
from webapp.accounts.models import ApiKey, ApiKeyKind, Invitation, Membership, Role, Tenant
from webapp.accounts.roles import acts_as_cluster_admin, require_role
from webapp.audit.facade import record_event, record_tenant_event
from webapp.common.changes import JobKind, RecordedChange, record_change

INVITATION_LIFETIME = timedelta(days=7)


@dataclass(frozen=True)
class NewInvitation:
    invitation: Invitation
    token: str  # shown once, in the invitation link; only its hash is stored


def invitation_token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def check_invite(actor: Actor, email: str, role: str) -> None:
    require_role(actor, Role.ADMIN, "invite members")
    if role not in Role.values:
        raise InvalidInput.for_field("role", f"One of {', '.join(Role.values)}.")
    if role == Role.OWNER and actor.role != Role.OWNER:
        raise NotAllowed("Only owners may invite owners.")
    if Membership.objects.filter(tenant=actor.tenant, user__email__iexact=email).exists():
        raise Conflict(f"{email} is already a member.")


def do_invite(actor: Actor, email: str, role: str) -> NewInvitation:
    token = secrets.token_urlsafe(32)
    invitation = Invitation.objects.create(
        tenant=actor.tenant,
        email=email,
        role=role,
        token_sha256=invitation_token_hash(token),
        invited_by=actor.user,
        expires_at=timezone.now() + INVITATION_LIFETIME,
    )
    record_event(actor, "member.invite", email, {"role": role})
    return NewInvitation(invitation, token)


def check_accept_invitation(token: str) -> Invitation:
    """The pending, unexpired invitation ``token`` opens; NotFound otherwise (the same answer
    for an unknown, used or expired token)."""
    invitation = (
        Invitation.objects.select_related("tenant")
        .filter(token_sha256=invitation_token_hash(token), accepted_at__isnull=True, expires_at__gt=timezone.now())
        .first()
    )
    if invitation is None:
        raise NotFound("No such invitation, or it was used or has expired.")
    return invitation


def do_accept_invitation(invitation: Invitation, user: AbstractBaseUser) -> Membership:
    """Make ``user`` a member with the invitation's role; the invitation is then used up."""
    try:
        with transaction.atomic():
            # The conditional update makes a token usable once even under concurrent accepts.
            used = Invitation.objects.filter(pk=invitation.pk, accepted_at__isnull=True).update(accepted_at=timezone.now())
            if not used:
                raise NotFound("No such invitation, or it was used or has expired.")
            membership = Membership.objects.create(tenant=invitation.tenant, user=user, role=invitation.role)
            record_tenant_event(
                invitation.tenant, "member.join", membership.public_id, {"role": invitation.role}, principal=membership.principal, name=user.get_username()
            )
            return membership
    except IntegrityError as error:
        raise Conflict("You are already a member of this tenant.") from error


def _owner_count(tenant: Tenant) -> int:
    return Membership.objects.filter(tenant=tenant, role=Role.OWNER).count()


def check_change_role(actor: Actor, membership: Membership, role: str) -> None:
    require_role(actor, Role.OWNER, "change roles")
    if role not in Role.values:
        raise InvalidInput.for_field("role", f"One of {', '.join(Role.values)}.")


def do_change_role(actor: Actor, membership: Membership, role: str, request_id: str = "") -> tuple[Membership, RecordedChange | None]:
    """Give the member ``role``; returns it and the SYNC_SECURITY job recorded when the change
    crosses the admin line while the member holds cluster keys (None otherwise)."""
    job: RecordedChange | None = None
    with transaction.atomic():
        Tenant.objects.select_for_update().get(pk=actor.tenant.pk)
        locked = Membership.objects.select_related("user", "tenant").get(pk=membership.pk, tenant=actor.tenant)
        if locked.role == Role.OWNER and role != Role.OWNER and _owner_count(actor.tenant) == 1:
            raise StateConflict.for_field("role", "The last owner cannot be demoted; make another member owner first.")
        previous_role = locked.role
        locked.role = role
        locked.save(update_fields=["role"])
        record_event(actor, "member.change_role", locked.public_id, {"user": locked.user.get_username(), "role": role, "previous_role": previous_role})
        # The member's cluster keys act with its role (roles.acts_as_cluster_admin): a change
        # across the admin line reaches the brokers with SYNC_SECURITY, so that a demoted
        # admin's keys fall back to ACLs as soon as the snapshot is stored.
        if acts_as_cluster_admin(previous_role) != acts_as_cluster_admin(role) and _holds_cluster_keys(locked):
            job = record_change(actor.tenant, JobKind.SYNC_SECURITY, locked.public_id, created_by=actor.user, request_id=request_id)
    return locked, job


def _holds_cluster_keys(membership: Membership) -> bool:
    return ApiKey.objects.filter(owner_membership=membership, kind=ApiKeyKind.CLUSTER, revoked_at__isnull=True).exists()


def do_remove_member(actor: Actor, membership: Membership, request_id: str = "") -> RecordedChange | None:
    """Remove the member and its keys; records SYNC_SECURITY when it held cluster keys, so
    that brokers forget them. Owners only (a member may not remove itself this way either)."""
    require_role(actor, Role.OWNER, "remove members")
    with transaction.atomic():
        Tenant.objects.select_for_update().get(pk=actor.tenant.pk)
        locked = Membership.objects.get(pk=membership.pk, tenant=actor.tenant)
        if locked.role == Role.OWNER and _owner_count(actor.tenant) == 1:
            raise StateConflict.for_field("role", "The last owner cannot be removed.")
        had_cluster_keys = _holds_cluster_keys(locked)
        public_id = locked.public_id
        record_event(actor, "member.remove", public_id, {"user": locked.user.get_username(), "role": locked.role})
        locked.delete()
        if had_cluster_keys:
            return record_change(actor.tenant, JobKind.SYNC_SECURITY, public_id, created_by=actor.user, request_id=request_id)
    return None

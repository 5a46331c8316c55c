"""Who is calling: the actor every view and action works for, whatever the authentication."""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth.models import AbstractBaseUser

from webapp.accounts.models import ApiKey, Membership, ServiceAccount, Tenant

# The session key and request header that pick the tenant of a user who belongs to several.
SESSION_TENANT_KEY = "tenant_id"  # holds the tenant's public id (``tn-...``)
TENANT_HEADER = "HTTP_X_WEIR_TENANT"  # ``X-Weir-Tenant: tn-...``


@dataclass(frozen=True)
class Actor:
    """A caller acting within one tenant with one role.

    Exactly one of ``membership`` (a signed-in user or a user's cloud key), ``service_account``
    (a service account's cloud key) and ``scram_user`` is set. DRF sees it as the request's user
    (``is_authenticated``).

    ``scram_user`` is the name of a tenant's SCRAM user (``ScramUserCredential``) whose Kafka
    client's administration a broker forwarded (``webapp.controller.topic_requests``): principal
    ``User:<name>``, no API key, no Django user, never an operator. The broker's ACL check decided
    what it may do; its role is only what the catalog's actions ask of any such caller, and it
    never becomes its tenant's cluster administrator (that is a member's cluster key's right).
    """

    tenant: Tenant
    role: str
    membership: Membership | None = None
    service_account: ServiceAccount | None = None
    api_key: ApiKey | None = None
    scram_user: str = ""

    is_authenticated = True
    is_anonymous = False

    @property
    def user(self) -> AbstractBaseUser | None:
        return self.membership.user if self.membership is not None else None

    @property
    def principal(self) -> str:
        if self.scram_user:
            return f"User:{self.scram_user}"
        owner = self.membership or self.service_account
        assert owner is not None
        return owner.principal

    @property
    def display_name(self) -> str:
        if self.membership is not None:
            return self.membership.user.get_username()
        if self.scram_user:
            return self.scram_user
        assert self.service_account is not None
        return self.service_account.name

    @property
    def is_operator(self) -> bool:
        """A staff user signed in with a password. Cloud keys are tenant credentials: a key
        never carries operator rights, even when a staff user owns it."""
        return self.api_key is None and self.membership is not None and self.membership.user.is_staff


def actor_for_user(user: AbstractBaseUser, tenant_public_id: str | None = None) -> Actor | None:
    """The actor of a signed-in user: its membership in ``tenant_public_id`` when given, else
    its oldest membership; None when the user has no (such) membership."""
    memberships = Membership.objects.select_related("tenant", "user").filter(user=user)
    if tenant_public_id:
        memberships = memberships.filter(tenant__public_id=tenant_public_id)
    membership = memberships.order_by("created_at", "pk").first()
    if membership is None:
        return None
    return Actor(tenant=membership.tenant, role=membership.role, membership=membership)


def is_operator(user: object) -> bool:
    """True for a staff user signed in with a password, whether or not it acts in a tenant."""
    if isinstance(user, Actor):
        return user.is_operator
    return bool(getattr(user, "is_staff", False) and getattr(user, "is_active", False))

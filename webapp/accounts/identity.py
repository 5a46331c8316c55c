"""Who is calling: the actor every view and action works for, whatever the authentication."""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth.models import AbstractBaseUser

from webapp.accounts.models import ApiKey, Membership, ServiceAccount, Tenant


@dataclass(frozen=True)
class Actor:
    """A caller acting within one tenant with one role.

    Exactly one of ``membership`` (a signed-in user or a user's cloud key) and
    ``service_account`` (a service account's cloud key) is set. DRF sees it as the request's
    user (``is_authenticated``).
    """

    tenant: Tenant
    role: str
    membership: Membership | None = None
    service_account: ServiceAccount | None = None
    api_key: ApiKey | None = None

    is_authenticated = True
    is_anonymous = False

    @property
    def user(self) -> AbstractBaseUser | None:
        return self.membership.user if self.membership is not None else None

    @property
    def principal(self) -> str:
        owner = self.membership or self.service_account
        assert owner is not None
        return owner.principal

    @property
    def display_name(self) -> str:
        if self.membership is not None:
            return self.membership.user.get_username()
        assert self.service_account is not None
        return self.service_account.name

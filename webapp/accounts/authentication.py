"""REST authentication with a cloud API key over HTTP Basic, as Confluent Cloud does."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone
from rest_framework import authentication, exceptions

from webapp.accounts.api_keys import secret_matches
from webapp.accounts.identity import SESSION_TENANT_KEY, TENANT_HEADER, Actor, actor_for_user
from webapp.accounts.key_cache import verified_keys
from webapp.accounts.models import ApiKey, ApiKeyKind

# last_used_at is written at most this often per key, so that a busy key does not turn
# every request into a database write.
LAST_USED_RESOLUTION = timedelta(minutes=1)


class CloudApiKeyAuthentication(authentication.BasicAuthentication):
    """``Authorization: Basic base64(<key id>:<secret>)`` with an active cloud key.

    The request's user becomes an :class:`Actor` of the key's tenant with its owner's role.
    Wrong, unknown, revoked and cluster keys all answer the same 401. A key verified lately is
    answered from this process's :mod:`webapp.accounts.key_cache` (no query); a key revoked or an
    owner changed by another process takes effect within its TTL (``WEIR_API_KEY_CACHE_SECONDS``).
    """

    www_authenticate_realm = "weir"

    def authenticate_credentials(self, userid: str, password: str, request=None):  # type: ignore[no-untyped-def]
        cache = verified_keys()
        key = cache.get(userid, password)
        if key is None:
            key = self._verify(userid, password)
            cache.put(userid, password, key)
        return _actor_of(key), key

    @staticmethod
    def _verify(userid: str, password: str) -> ApiKey:
        """The active cloud key with this id and secret, from the database; AuthenticationFailed otherwise."""
        key = (
            ApiKey.objects.select_related("tenant", "owner_service_account", "owner_membership__user")
            .filter(key_id=userid, kind=ApiKeyKind.CLOUD, revoked_at__isnull=True)
            .first()
        )
        if key is None or not secret_matches(password, key.secret_sha256):
            raise exceptions.AuthenticationFailed("Invalid API key or secret.")
        if key.owner_membership is not None and not key.owner_membership.user.is_active:
            raise exceptions.AuthenticationFailed("Invalid API key or secret.")
        now = timezone.now()
        if key.last_used_at is None or now - key.last_used_at > LAST_USED_RESOLUTION:
            ApiKey.objects.filter(pk=key.pk).update(last_used_at=now)
        return key


def _actor_of(key: ApiKey) -> Actor:
    """The caller a verified key acts as: its owner's role in its tenant."""
    if key.owner_membership is not None:
        membership = key.owner_membership
        return Actor(tenant=key.tenant, role=membership.role, membership=membership, api_key=key)
    account = key.owner_service_account
    assert account is not None
    return Actor(tenant=key.tenant, role=account.role, service_account=account, api_key=key)


class SessionActorAuthentication(authentication.SessionAuthentication):
    """The browser's session (with DRF's CSRF check on unsafe methods), as an :class:`Actor`.

    A user in several tenants picks one with the ``X-Weir-Tenant: tn-...`` header or the
    session key ``tenant_id`` (the dashboard's tenant switcher); otherwise its oldest
    membership applies. Naming a tenant the user does not belong to fails authentication
    (401). A signed-in user without any membership (an operator, or someone about to
    accept an invitation) stays a plain Django user: tenant endpoints then refuse it and
    operator endpoints check ``is_staff``.
    """

    def authenticate(self, request):  # type: ignore[no-untyped-def]
        result = super().authenticate(request)
        if result is None:
            return None
        user, _ = result
        requested = request.META.get(TENANT_HEADER) or request.session.get(SESSION_TENANT_KEY)
        actor = actor_for_user(user, requested)
        if actor is None and requested and request.META.get(TENANT_HEADER):
            raise exceptions.AuthenticationFailed("You are not a member of that tenant.")
        if actor is None and requested:
            # A stale session choice (the membership was removed): fall back to any membership.
            actor = actor_for_user(user)
        return (actor or user), None

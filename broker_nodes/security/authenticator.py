"""Authentication of every Broker-service call from its gRPC metadata.

Credentials travel as call metadata, exactly one kind per call:

- a client's cluster API key and secret (``x-weir-api-key`` / ``x-weir-api-secret``, what the
  SDK sends for ``sasl.username`` / ``sasl.password``): the key's tenant, its ACLs decide;
- a tenant token (``x-weir-tenant-token``, :mod:`weir.tenant_tokens`): the control plane (the
  dashboard, the REST API, the lag pipeline) acting as the token's tenant with full rights on
  that tenant's names until the token expires. Its signing key is derived from the internal
  token, so it needs no setting of its own;
- the internal token (``x-weir-internal-token``) alone: the brokers' own components and the
  pipelines, with every tenant's names and the internal topics.

The internal token together with ``x-weir-tenant`` (how the control plane used to act as a
tenant) is refused: one leaked value must not open any tenant it names. ``x-weir-tenant`` is
refused with any credential, so a tenant token for one tenant cannot be pointed at another.

A key is looked up by its public id in the current security snapshot and its secret's
SHA-256 compared in constant time; a key absent from the snapshot (revoked, or never pushed)
is refused. Kafka's SASL/SCRAM looks a key's SCRAM credential up here
(:meth:`Authenticator.scram_credential`; the proof is checked in ``broker_nodes.security.scram``)
and re-checks its StoredKey before each request as PLAIN re-checks the digest. A SCRAM username
that is no key may be a tenant's SCRAM user, ``<name>@<tenant id>`` (``weir.admin_scram``): it
acts as principal ``User:<name>`` of that tenant under the tenant's ACLs (never as a cluster
administrator), and a user deleted or given a new password is refused at its next request. With ``security.required=false`` a call without the internal token is anonymous
and unrestricted (the standalone mode of issue 2). Thread-safe (reads immutable snapshots).
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterable

from broker_nodes import names
from broker_nodes.clock import SYSTEM_CLOCK, Clock
from broker_nodes.security.access import INTERNAL_PRINCIPAL, CallContext, CallerKind, anonymous_context, client_host_of
from broker_nodes.security.key_use import ClientApplication, KeyUse, grpc_application
from broker_nodes.security.scram import ScramCredential
from broker_nodes.security.snapshot import Credential, ScramUser, SecuritySnapshot, SecurityStore
from weir import tenant_tokens
from weir.admin_scram import SCRAM_LOGIN_SEPARATOR
from weir.tenant_tokens import TENANT_TOKEN_HEADER, TenantTokenError

API_KEY_HEADER = "x-weir-api-key"
API_SECRET_HEADER = "x-weir-api-secret"
INTERNAL_TOKEN_HEADER = "x-weir-internal-token"
TENANT_HEADER = "x-weir-tenant"  # no longer accepted: refused with a message naming the tenant token instead
# (user agent, client address) pairs whose ClientApplication is remembered between calls.
MAX_REMEMBERED_APPLICATIONS = 1024
# Compared against when a key is unknown, so that an unknown key costs the same as a wrong secret.
_UNKNOWN_KEY_DIGEST = "0" * 64
_INVALID_KEY_MESSAGE = "invalid API key or secret (unknown, revoked, or not a cluster key)"
_INVALID_SCRAM_LOGIN_MESSAGE = (
    "invalid SCRAM user or password (a tenant's SCRAM user logs in as <name>@<tenant id>; deleted, or no credential for this mechanism)"
)


class AuthenticationError(Exception):
    """Credentials missing, unknown, revoked or wrong (gRPC UNAUTHENTICATED); the message says which, never whose."""

    retriable = False


class CredentialsUnavailableError(Exception):
    """security.required is on and no security snapshot has arrived yet (gRPC UNAVAILABLE)."""

    retriable = True

    def __init__(self) -> None:
        super().__init__("waiting for credentials from the control plane")


def secret_digest(secret: str) -> str:
    """The hex SHA-256 of a cluster key's secret: what security snapshots hold instead of the secret."""
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def internal_token_matches(presented: str, expected: str) -> bool:
    """Constant-time comparison; an empty expected token (none configured) matches nothing."""
    return bool(expected) and hmac.compare_digest(presented.encode("utf-8"), expected.encode("utf-8"))


class Authenticator:
    """Turns a call's metadata and peer into a :class:`CallContext` or an authentication error."""

    def __init__(self, *, security_required: bool, internal_token: str, security_store: SecurityStore, clock: Clock = SYSTEM_CLOCK) -> None:
        self._security_required = security_required
        self._internal_token = internal_token
        # None without an internal token: such a broker (standalone) verifies no tenant token.
        self._tenant_token_key = tenant_tokens.derive_key(internal_token) if internal_token else None
        self._store = security_store
        self._clock = clock
        # Per cluster key: its last successful authentication and its recent applications.
        self.key_use = KeyUse()
        # (user agent, client address) -> its ClientApplication: clients send the same pair on
        # every call of a connection, and building it (cleaning each value) cost microseconds per call.
        self._grpc_applications: dict[tuple[str | None, str], ClientApplication] = {}

    def last_used(self) -> dict[str, int]:
        """When each cluster key last authenticated a call here (since this process started)."""
        return self.key_use.last_used()

    def note_grpc_application(self, call: CallContext, metadata: Iterable[tuple[str, str | bytes]], client_host: str) -> None:
        """Record the application of a gRPC call authenticated without its peer (the interceptor
        cannot see it) once the servicer knows the client's address; no-op for other callers."""
        if call.kind == CallerKind.CLIENT and call.api_key:
            user_agent = next((value for key, value in metadata if key == "user-agent" and isinstance(value, str)), None)
            self.key_use.seen(call.api_key, self._grpc_application(user_agent, client_host), self._clock.milliseconds())

    def _grpc_application(self, user_agent: str | None, client_host: str) -> ClientApplication:
        """``grpc_application(user_agent, client_host)``, remembered for the next calls (at most
        ``MAX_REMEMBERED_APPLICATIONS`` pairs: past that the memory starts again, as user agents are client-supplied)."""
        key = (user_agent, client_host)
        app = self._grpc_applications.get(key)
        if app is None:
            if len(self._grpc_applications) >= MAX_REMEMBERED_APPLICATIONS:
                self._grpc_applications = {}
            app = self._grpc_applications[key] = grpc_application(user_agent, client_host)
        return app

    @property
    def security_required(self) -> bool:
        return self._security_required

    def authenticate(self, metadata: Iterable[tuple[str, str | bytes]], peer: str) -> CallContext:
        """The caller of one call, from its metadata and gRPC peer string.

        Raises :class:`AuthenticationError` (its message names the problem, never a
        credential's value) or :class:`CredentialsUnavailableError`.
        """
        headers = {key: value for key, value in metadata if isinstance(value, str)}
        client_host = client_host_of(peer)
        if TENANT_HEADER in headers:
            raise AuthenticationError(
                f"{TENANT_HEADER} is no longer accepted: a call acting as a tenant carries a tenant token "
                f"({TENANT_TOKEN_HEADER}) from the control plane, never the internal token with a tenant id"
            )
        presented_kinds = [header for header in (INTERNAL_TOKEN_HEADER, TENANT_TOKEN_HEADER, API_KEY_HEADER) if header in headers]
        if len(presented_kinds) > 1:
            raise AuthenticationError(f"give one credential per call, not {' and '.join(presented_kinds)}")
        token = headers.get(INTERNAL_TOKEN_HEADER)
        if token is not None:
            if not internal_token_matches(token, self._internal_token):
                raise AuthenticationError("the internal token is wrong (or this broker has none configured)")
            return CallContext("", INTERNAL_PRINCIPAL, client_host, CallerKind.INTERNAL)
        tenant_token = headers.get(TENANT_TOKEN_HEADER)
        if tenant_token is not None:
            return self._tenant_context(tenant_token, client_host)
        if not self._security_required:
            return anonymous_context(client_host)
        snapshot = self._store.snapshot
        if snapshot is None:
            raise CredentialsUnavailableError()
        api_key = headers.get(API_KEY_HEADER)
        secret = headers.get(API_SECRET_HEADER)
        if not api_key or secret is None:
            raise AuthenticationError("this broker requires a cluster API key: set sasl.username to the key and sasl.password to the secret")
        # Without a peer (the interceptor) the servicer records the application once it knows the address.
        client = grpc_application(headers.get("user-agent"), client_host) if peer else None
        return self.authenticate_api_key(api_key, secret_digest(secret), client_host, client)

    def authenticate_api_key(self, api_key: str, secret_sha256: str, client_host: str, client: ClientApplication | None = None) -> CallContext:
        """The caller holding cluster key ``api_key`` whose secret has the SHA-256 ``secret_sha256`` (hex, :func:`secret_digest`).

        The one check of a cluster key, for gRPC metadata and Kafka SASL/PLAIN alike; the Kafka
        listener calls it again before every request of a connection (with the digest it kept,
        never the secret), so a revoked key or changed ACLs apply at once. Without
        ``security.required`` every caller is anonymous, as on the gRPC side. Raises
        :class:`AuthenticationError` or :class:`CredentialsUnavailableError`. ``client``, when
        given, is recorded as an application of the key (:mod:`broker_nodes.security.key_use`).
        """
        if not self._security_required:
            return anonymous_context(client_host)
        snapshot = self._store.snapshot
        if snapshot is None:
            raise CredentialsUnavailableError()
        credential = snapshot.credentials.get(api_key)
        expected = credential.secret_sha256 if credential is not None else _UNKNOWN_KEY_DIGEST
        if not hmac.compare_digest(secret_sha256, expected) or credential is None:
            raise AuthenticationError(_INVALID_KEY_MESSAGE)
        return self._client_context(credential, snapshot, client_host, client)

    def scram_credential(self, api_key: str, mechanism: str) -> ScramCredential:
        """Cluster key ``api_key``'s credential for SCRAM ``mechanism``, for the exchange to check a proof against.

        Refused (AuthenticationError) for an unknown or revoked key and for a key created before
        SCRAM support, which has no SCRAM credential (its secret was never kept, so none can be
        made): the message tells the user to create a new key or use PLAIN. Also used without
        ``security.required`` (a SCRAM server cannot answer without a credential), when a
        snapshot is there.
        """
        snapshot = self._store.snapshot
        if snapshot is None:
            if not self._security_required:
                raise AuthenticationError("this broker runs without security and holds no SCRAM credentials: connect without SASL or with PLAIN")
            raise CredentialsUnavailableError()
        credential = snapshot.credentials.get(api_key)
        if credential is None:
            user = snapshot.scram_users.get(api_key)
            user_scram = user.scram.get(mechanism) if user is not None else None
            if user_scram is None:
                raise AuthenticationError(_INVALID_SCRAM_LOGIN_MESSAGE if SCRAM_LOGIN_SEPARATOR in api_key else _INVALID_KEY_MESSAGE)
            return user_scram
        scram = credential.scram.get(mechanism)
        if scram is None:
            raise AuthenticationError(
                f"API key {api_key} has no {mechanism} credentials (keys created before SCRAM support have none): "
                "create a new cluster API key, or use sasl.mechanism=PLAIN with this one"
            )
        return scram

    def authenticate_scram_key(self, api_key: str, mechanism: str, stored_key: bytes, client_host: str, client: ClientApplication | None = None) -> CallContext:
        """The caller of a connection that completed SCRAM ``mechanism`` as ``api_key`` with StoredKey ``stored_key``.

        SCRAM's counterpart of :meth:`authenticate_api_key`, called before every request of the
        connection: the key must still be in the current snapshot with the same credential,
        so a revoked key closes the connection at its next request.
        """
        if not self._security_required:
            return anonymous_context(client_host)
        snapshot = self._store.snapshot
        if snapshot is None:
            raise CredentialsUnavailableError()
        credential = snapshot.credentials.get(api_key)
        if credential is None and api_key in snapshot.scram_users:
            return self._scram_user_context(snapshot.scram_users[api_key], mechanism, stored_key, snapshot, client_host)
        scram = credential.scram.get(mechanism) if credential is not None else None
        if credential is None or scram is None or not hmac.compare_digest(scram.stored_key, stored_key):
            raise AuthenticationError(_INVALID_KEY_MESSAGE)
        return self._client_context(credential, snapshot, client_host, client)

    def _scram_user_context(self, user: ScramUser, mechanism: str, stored_key: bytes, snapshot: SecuritySnapshot, client_host: str) -> CallContext:
        """The context of a tenant's SCRAM user whose credential still has ``stored_key``: its ACLs decide."""
        scram = user.scram.get(mechanism)
        if scram is None or not hmac.compare_digest(scram.stored_key, stored_key):
            raise AuthenticationError(_INVALID_SCRAM_LOGIN_MESSAGE)
        return CallContext(user.tenant_id, user.principal, client_host, CallerKind.CLIENT, snapshot.acls_of(user.tenant_id), scram_user=user.name)

    def _client_context(self, credential: Credential, snapshot: SecuritySnapshot, client_host: str, client: ClientApplication | None) -> CallContext:
        """The context of a client holding a valid cluster key (and the key's use noted, by ``client`` when known)."""
        self.key_use.used(credential.api_key, self._clock.milliseconds(), client)
        return CallContext(
            credential.tenant_id,
            credential.principal,
            client_host,
            CallerKind.CLIENT,
            snapshot.acls_of(credential.tenant_id),
            api_key=credential.api_key,
            cluster_admin=credential.cluster_admin,
        )

    def _tenant_context(self, tenant_token: str, client_host: str) -> CallContext:
        """The context of a valid tenant token: the control plane acting as its tenant (full
        rights on that tenant's names only, as the internal token with a tenant used to give)."""
        if self._tenant_token_key is None:
            raise AuthenticationError("this broker has no internal token, so it cannot verify tenant tokens")
        try:
            grant = tenant_tokens.verify(self._tenant_token_key, tenant_token, now_ms=self._clock.milliseconds())
        except TenantTokenError as error:
            raise AuthenticationError(str(error)) from None
        if names.TENANT_SEPARATOR in grant.tenant_id:
            raise AuthenticationError("the tenant token names something that is not a tenant id")
        return CallContext(grant.tenant_id, INTERNAL_PRINCIPAL, client_host, CallerKind.INTERNAL)

"""SASL on a Kafka-protocol connection: the PLAIN mechanism and one connection's authentication state.

Kafka clients authenticate right after connecting (KIP-43, KIP-152): optionally ApiVersions,
then SaslHandshake naming a mechanism, then the mechanism's tokens in SaslAuthenticate
requests (or, after a SaslHandshake v0, as raw size-prefixed frames without a request header,
which old clients send). Only then may other requests follow; the listener closes a connection
that sends anything else first (Kafka's ILLEGAL_SASL_STATE behaviour).

PLAIN (RFC 4616): the token is ``[authzid] NUL username NUL password``; the username is the
tenant's cluster API key and the password its secret, checked by the broker's
:class:`~broker_nodes.security.authenticator.Authenticator` on the same path as the gRPC
metadata. The connection keeps the key and the secret's SHA-256 (never the secret) and
re-resolves its caller before every request (:meth:`SaslSession.call_context`), so a revoked
key or changed ACLs apply to open connections at once.

SCRAM is not offered: brokers hold only the SHA-256 of secrets, and SCRAM needs salted
credentials stored when a key is created. A client asking for it gets UNSUPPORTED_SASL_MECHANISM
with the enabled list.

A broker without ``security.required`` serves unauthenticated connections as the anonymous
caller (as its gRPC port does) and still accepts PLAIN with any credentials.

Not thread-safe: a connection runs one request at a time, so one session is used by one
thread at a time.
"""

from __future__ import annotations

import enum
import logging
from dataclasses import dataclass, field

from kio.schema.errors import ErrorCode

from broker_nodes.security.access import CallContext, anonymous_context
from broker_nodes.security.authenticator import AuthenticationError, Authenticator, CredentialsUnavailableError, secret_digest

logger = logging.getLogger(__name__)

PLAIN = "PLAIN"
ENABLED_MECHANISMS = (PLAIN,)
SASL_HANDSHAKE_KEY = 17
SASL_AUTHENTICATE_KEY = 36
API_VERSIONS_KEY = 18
MAX_PLAIN_FIELD_BYTES = 255  # RFC 4616's limit on each of authzid, authcid and passwd


class SaslPlainError(ValueError):
    """A PLAIN token that does not have RFC 4616's form; the message says what is wrong, never a value."""

    retriable = False


@dataclass(frozen=True)
class PlainCredentials:
    """The fields of one PLAIN token. The password never appears in a repr."""

    authorization_id: str
    username: str
    password: str = field(repr=False)


def parse_plain(token: bytes) -> PlainCredentials:
    """Split a PLAIN token ``[authzid] NUL authcid NUL passwd`` (UTF-8); raise SaslPlainError when malformed."""
    parts = token.split(b"\x00")
    if len(parts) != 3:
        raise SaslPlainError(f"a PLAIN token has three fields separated by NUL bytes, this one has {len(parts)}")
    try:
        authorization_id, username, password = (part.decode("utf-8") for part in parts)
    except UnicodeDecodeError:
        raise SaslPlainError("a PLAIN token must be UTF-8") from None
    if not username or not password:
        raise SaslPlainError("a PLAIN token needs a username (the cluster API key) and a password (its secret)")
    if any(len(part) > MAX_PLAIN_FIELD_BYTES for part in parts):
        raise SaslPlainError(f"a PLAIN token's fields are at most {MAX_PLAIN_FIELD_BYTES} bytes each")
    return PlainCredentials(authorization_id, username, password)


class SaslState(enum.Enum):
    OPEN = "open"  # no SASL yet on a broker without security: served anonymously, a handshake may start
    HANDSHAKE = "handshake"  # security required: only ApiVersions or SaslHandshake may come
    AUTHENTICATE = "authenticate"  # after SaslHandshake v1: only SaslAuthenticate may come
    RAW_TOKEN = "raw_token"  # after SaslHandshake v0: the next frame is a bare PLAIN token
    AUTHENTICATED = "authenticated"
    FAILED = "failed"  # the connection is closed after the answer that says why


@dataclass(frozen=True)
class AuthenticationOutcome:
    """What one SaslAuthenticate (or raw token) achieved: NONE, or the error code and a message for the client."""

    error_code: ErrorCode
    message: str | None = None

    @property
    def succeeded(self) -> bool:
        return self.error_code == ErrorCode.none


class SaslSession:
    """One connection's authentication: which SASL step it is at, and who it authenticated as."""

    def __init__(self, authenticator: Authenticator, client_host: str) -> None:
        self._authenticator = authenticator
        self._client_host = client_host
        self.state = SaslState.HANDSHAKE if authenticator.security_required else SaslState.OPEN
        self._api_key: str | None = None
        self._secret_sha256 = ""

    @property
    def authenticated(self) -> bool:
        """Whether requests other than ApiVersions and SASL's are served (after PLAIN, or anonymous without security)."""
        return self.state in (SaslState.OPEN, SaslState.AUTHENTICATED)

    def takes(self, api_key: int) -> bool:
        """Whether this session (not a registered handler) answers a request with ``api_key`` now: SASL's own steps before authentication."""
        return api_key in (SASL_HANDSHAKE_KEY, SASL_AUTHENTICATE_KEY) and self.state in (SaslState.OPEN, SaslState.HANDSHAKE, SaslState.AUTHENTICATE)

    def allows(self, api_key: int) -> bool:
        """Whether a request with ``api_key`` may come now; one that may not closes the connection."""
        if self.authenticated:
            return True
        if self.state == SaslState.HANDSHAKE:
            return api_key in (API_VERSIONS_KEY, SASL_HANDSHAKE_KEY)
        if self.state == SaslState.AUTHENTICATE:
            return api_key == SASL_AUTHENTICATE_KEY
        return False

    def handshake(self, mechanism: str, version: int) -> ErrorCode:
        """SaslHandshake: NONE and the next state for PLAIN; UNSUPPORTED_SASL_MECHANISM (then close) otherwise."""
        if self.state not in (SaslState.OPEN, SaslState.HANDSHAKE):
            self.state = SaslState.FAILED
            return ErrorCode.illegal_sasl_state
        if mechanism != PLAIN:
            self.state = SaslState.FAILED
            return ErrorCode.unsupported_sasl_mechanism
        self.state = SaslState.RAW_TOKEN if version == 0 else SaslState.AUTHENTICATE
        return ErrorCode.none

    def authenticate(self, token: bytes) -> AuthenticationOutcome:
        """Check a PLAIN token; on success the session is authenticated, otherwise it has FAILED."""
        if self.state not in (SaslState.AUTHENTICATE, SaslState.RAW_TOKEN):
            self.state = SaslState.FAILED
            return AuthenticationOutcome(ErrorCode.illegal_sasl_state, "SaslAuthenticate must follow a SaslHandshake naming PLAIN")
        self.state = SaslState.FAILED
        try:
            credentials = parse_plain(token)
            if credentials.authorization_id and credentials.authorization_id != credentials.username:
                raise AuthenticationError("an authorization id other than the username (the API key) is not supported")
            digest = secret_digest(credentials.password)
            self._authenticator.authenticate_api_key(credentials.username, digest, self._client_host)
        except (SaslPlainError, AuthenticationError, CredentialsUnavailableError) as error:
            logger.info("Kafka SASL/PLAIN authentication from %s failed: %s", self._client_host, error)
            return AuthenticationOutcome(ErrorCode.sasl_authentication_failed, f"Authentication failed: {error}")
        self._api_key, self._secret_sha256 = credentials.username, digest
        self.state = SaslState.AUTHENTICATED
        logger.debug("Kafka SASL/PLAIN authentication from %s succeeded", self._client_host)
        return AuthenticationOutcome(ErrorCode.none)

    def call_context(self) -> CallContext:
        """The caller of the next request, resolved against the current security snapshot.

        Raises AuthenticationError (or CredentialsUnavailableError) when the key was revoked
        since the connection authenticated: the connection is then closed.
        """
        if self._api_key is None:
            if self.state != SaslState.OPEN:
                raise AuthenticationError("this connection has not authenticated")
            return anonymous_context(self._client_host)
        return self._authenticator.authenticate_api_key(self._api_key, self._secret_sha256, self._client_host)

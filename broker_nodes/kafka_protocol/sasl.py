"""SASL on a Kafka-protocol connection: PLAIN, SCRAM-SHA-256/512, and one connection's authentication state.

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

SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677, as Kafka's ``ScramSaslServer``): two
tokens each way, client-first -> server-first, client-final -> server-final, carried in
SaslAuthenticate's ``auth_bytes`` (or raw frames after a SaslHandshake v0). The messages and
the proof are checked by :class:`~broker_nodes.security.scram.ScramExchange` against the key's
credential from the :class:`~broker_nodes.security.authenticator.Authenticator`; keys created
before SCRAM support have none and are told to use PLAIN or a new key. A failed step answers
SASL_AUTHENTICATION_FAILED with the reason and closes, as PLAIN does. The connection then keeps
the key and its StoredKey and re-checks them before every request, as it does PLAIN's digest.
Any other mechanism gets UNSUPPORTED_SASL_MECHANISM with the enabled list.

A broker without ``security.required`` serves unauthenticated connections as the anonymous
caller (as its gRPC port does) and still accepts PLAIN with any credentials.

Not thread-safe: a connection runs one request at a time, so one session is used by one
thread at a time.
"""

from __future__ import annotations

import dataclasses
import enum
import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from kio.schema.errors import ErrorCode

from broker_nodes.security.access import CallContext, anonymous_context
from broker_nodes.security.authenticator import AuthenticationError, Authenticator, CredentialsUnavailableError, secret_digest
from broker_nodes.security.key_use import ClientApplication, application
from broker_nodes.security.scram import SCRAM_MECHANISMS, ScramError, ScramExchange

logger = logging.getLogger(__name__)

PLAIN = "PLAIN"
ENABLED_MECHANISMS = (PLAIN, *SCRAM_MECHANISMS)  # what SaslHandshake lists: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512
SASL_HANDSHAKE_KEY = 17
SASL_AUTHENTICATE_KEY = 36
API_VERSIONS_KEY = 18
KAFKA_DOOR = "kafka"  # CallContext.door of every call through this listener (the audit log names the door)
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
    RAW_TOKEN = "raw_token"  # after SaslHandshake v0: the next frames are bare tokens of the mechanism
    AUTHENTICATED = "authenticated"
    FAILED = "failed"  # the connection is closed after the answer that says why


@dataclass(frozen=True)
class AuthenticationOutcome:
    """What one SaslAuthenticate (or raw token) achieved: NONE and the server's token (SCRAM's), or the error code and a message for the client."""

    error_code: ErrorCode
    message: str | None = None
    auth_bytes: bytes = b""

    @property
    def succeeded(self) -> bool:
        return self.error_code == ErrorCode.none


class SaslSession:
    """One connection's authentication: which SASL step it is at, and who it authenticated as."""

    def __init__(self, authenticator: Authenticator, client_host: str) -> None:
        self._authenticator = authenticator
        self._client_host = client_host
        self.state = SaslState.HANDSHAKE if authenticator.security_required else SaslState.OPEN
        self._scram: ScramExchange | None = None  # after a handshake naming SCRAM-SHA-*
        # After authentication: resolves the caller again against the current snapshot (None: anonymous),
        # noting the application (the key's use) when given.
        self._recheck: Callable[[ClientApplication | None], CallContext] | None = None
        # KIP-511 client software (ApiVersions v3+) and the application last built from it and a client.id.
        self._software: tuple[str, str] = ("", "")
        self._application: ClientApplication | None = None
        self._application_client_id: str | None = None
        self._anonymous: CallContext | None = None  # the caller of an OPEN session (no security), once built

    def note_software(self, name: str | None, version: str | None) -> None:
        """The client software name and version an ApiVersions v3+ request declared (client-supplied)."""
        self._software = (name or "", version or "")
        self._application = None

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
        """SaslHandshake: NONE and the next state for an enabled mechanism; UNSUPPORTED_SASL_MECHANISM (then close) otherwise."""
        if self.state not in (SaslState.OPEN, SaslState.HANDSHAKE):
            self.state = SaslState.FAILED
            return ErrorCode.illegal_sasl_state
        if mechanism not in ENABLED_MECHANISMS:
            self.state = SaslState.FAILED
            return ErrorCode.unsupported_sasl_mechanism
        if mechanism != PLAIN:
            self._scram = ScramExchange(mechanism, self._authenticator.scram_credential)
        self.state = SaslState.RAW_TOKEN if version == 0 else SaslState.AUTHENTICATE
        return ErrorCode.none

    def authenticate(self, token: bytes) -> AuthenticationOutcome:
        """Take the mechanism's next token: authenticated after PLAIN's or SCRAM's last, FAILED after a wrong one."""
        if self.state not in (SaslState.AUTHENTICATE, SaslState.RAW_TOKEN):
            self.state = SaslState.FAILED
            return AuthenticationOutcome(ErrorCode.illegal_sasl_state, "SaslAuthenticate must follow a SaslHandshake naming a mechanism")
        if self._scram is not None:
            return self._scram_step(self._scram, token)
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
        api_key, host = credentials.username, self._client_host
        self._recheck = lambda client: self._authenticator.authenticate_api_key(api_key, digest, host, client)
        self.state = SaslState.AUTHENTICATED
        logger.debug("Kafka SASL/PLAIN authentication from %s succeeded", self._client_host)
        return AuthenticationOutcome(ErrorCode.none)

    def _scram_step(self, exchange: ScramExchange, token: bytes) -> AuthenticationOutcome:
        """One SCRAM token: the server-first answer (still authenticating), or the server-final one (authenticated)."""
        waiting_state, self.state = self.state, SaslState.FAILED
        try:
            reply = exchange.respond(token)
            if not exchange.complete:
                self.state = waiting_state
                return AuthenticationOutcome(ErrorCode.none, auth_bytes=reply)
            api_key, mechanism, stored_key, host = exchange.username, exchange.mechanism, exchange.credential.stored_key, self._client_host
            self._authenticator.authenticate_scram_key(api_key, mechanism, stored_key, host)
        except (ScramError, AuthenticationError, CredentialsUnavailableError) as error:
            logger.info("Kafka SASL/%s authentication from %s failed: %s", exchange.mechanism, self._client_host, error)
            return AuthenticationOutcome(ErrorCode.sasl_authentication_failed, f"Authentication failed: {error}")
        self._recheck = lambda client: self._authenticator.authenticate_scram_key(api_key, mechanism, stored_key, host, client)
        self._scram = None
        self.state = SaslState.AUTHENTICATED
        logger.debug("Kafka SASL/%s authentication from %s succeeded", mechanism, self._client_host)
        return AuthenticationOutcome(ErrorCode.none, auth_bytes=reply)

    def call_context(self, client_id: str | None = None) -> CallContext:
        """The caller of the next request, resolved against the current security snapshot.

        Raises AuthenticationError (or CredentialsUnavailableError) when the key was revoked
        since the connection authenticated: the connection is then closed.
        """
        if self._recheck is None:
            if self.state != SaslState.OPEN:
                raise AuthenticationError("this connection has not authenticated")
            if self._anonymous is None:  # built once: an anonymous caller depends on no security snapshot
                self._anonymous = dataclasses.replace(anonymous_context(self._client_host), door=KAFKA_DOOR)
            return self._anonymous
        app = self._application
        if app is None or client_id != self._application_client_id:  # built again only when the client.id changes
            app = self._application = application(client_id, *self._software, self._client_host)
            self._application_client_id = client_id
        return dataclasses.replace(self._recheck(app), door=KAFKA_DOOR)

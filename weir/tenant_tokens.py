"""Tenant tokens: short-lived credentials that let the control plane act as exactly one tenant.

The web process (dashboard, REST API) and the lag pipeline reach the brokers' data plane on a
tenant's behalf. They used to send the all-tenant internal token with an ``x-weir-tenant``
header, so that one leaked value opened every tenant. They now send a tenant token instead
(SDK key ``weir.tenant.token``, metadata ``x-weir-tenant-token``): a signed statement "tenant
T, for purpose P, until time E", so that a leaked token exposes at most that tenant until it
expires (minutes).

Format (ASCII, fields separated by ``.``)::

    v1.<tenant id, base64url without padding>.<expiry, ms since the epoch>.<purpose>.<signature>

``signature`` is base64url (no padding) of HMAC-SHA256(key, the first four fields joined by
``.``). The tenant id is base64url-encoded so that any character in it (a ``.``, a ``~``,
non-ASCII) can neither split the token nor change what was signed.

The key is derived from the internal token (:func:`derive_key`), so brokers, which hold the
internal token, need no new setting, while the web process may be given only the derived key
(``WEIR_TENANT_TOKEN_KEY``): it can mint tenant tokens but holds no credential that brokers
accept on its own for every tenant.

Both sides import this one module: the control plane mints (:func:`mint`), brokers verify
(:func:`verify`). Both are pure functions of their arguments (time is passed in), so tests
need no sleeps. Nothing here ever puts a token or a key into an error message.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
from dataclasses import dataclass

TENANT_TOKEN_HEADER = "x-weir-tenant-token"  # gRPC metadata carrying the token (SDK key weir.tenant.token)
VERSION = "v1"  # the first field; a new format gets a new version
DATA_PLANE_PURPOSE = "data-plane"  # the only purpose brokers accept today: Broker-service calls
DEFAULT_LIFETIME_MS = 5 * 60 * 1000  # minted tokens live this long unless the minter says otherwise
MAX_LIFETIME_MS = 60 * 60 * 1000  # brokers refuse a token expiring further ahead than this
MAX_TOKEN_LENGTH = 2048  # longer values are refused before any decoding work
KEY_DERIVATION_LABEL = b"weir tenant tokens v1"  # HMAC message that turns the internal token into the signing key
_PURPOSE = re.compile(r"[a-z][a-z0-9-]{0,31}")
_EXPIRY = re.compile(r"[0-9]{1,15}")  # no sign, no spaces, below year 33000
_BASE64URL = re.compile(r"[A-Za-z0-9_-]+")
_FIELD_COUNT = 5


class TenantTokenError(Exception):
    """A tenant token is malformed, wrongly signed, expired, or not for this use.

    The message says which, never the token. Not retriable: the caller must mint a new one.
    """

    retriable = False


@dataclass(frozen=True)
class TenantGrant:
    """What a valid token states: act as ``tenant_id`` for ``purpose`` until ``expires_ms``."""

    tenant_id: str
    purpose: str
    expires_ms: int


def derive_key(internal_token: str) -> bytes:
    """The tenant-token signing key of a cluster whose internal token is ``internal_token``.

    Precondition: ``internal_token`` is not empty (a broker without one verifies nothing).
    """
    if not internal_token:
        raise ValueError("deriving the tenant-token key needs the internal token, and it is empty")
    return hmac.new(internal_token.encode("utf-8"), KEY_DERIVATION_LABEL, hashlib.sha256).digest()


def key_from_hex(text: str) -> bytes:
    """A signing key given as hex (how ``WEIR_TENANT_TOKEN_KEY`` carries it); ValueError naming the problem."""
    try:
        key = bytes.fromhex(text.strip())
    except ValueError:
        raise ValueError("the tenant-token key must be hexadecimal (64 hex digits)") from None
    if len(key) != hashlib.sha256().digest_size:
        raise ValueError(f"the tenant-token key must be {hashlib.sha256().digest_size * 2} hex digits, got {len(key) * 2}")
    return key


def mint(key: bytes, tenant_id: str, *, now_ms: int, lifetime_ms: int = DEFAULT_LIFETIME_MS, purpose: str = DATA_PLANE_PURPOSE) -> str:
    """A token letting its bearer act as ``tenant_id`` for ``purpose`` from ``now_ms`` for ``lifetime_ms``.

    Preconditions: ``tenant_id`` not empty; 0 < ``lifetime_ms`` <= :data:`MAX_LIFETIME_MS`;
    ``purpose`` lower-case letters, digits and ``-``. Violations raise ValueError.
    """
    if not tenant_id:
        raise ValueError("a tenant token names a tenant: the tenant id must not be empty")
    if not 0 < lifetime_ms <= MAX_LIFETIME_MS:
        raise ValueError(f"a tenant token lives more than 0 and at most {MAX_LIFETIME_MS} ms, not {lifetime_ms}")
    if not _PURPOSE.fullmatch(purpose):
        raise ValueError("a tenant token's purpose is 1-32 lower-case letters, digits and '-', starting with a letter")
    signed = ".".join((VERSION, _encode(tenant_id.encode("utf-8")), str(now_ms + lifetime_ms), purpose))
    return f"{signed}.{_encode(_signature(key, signed))}"


def verify(key: bytes, token: str, *, now_ms: int, purpose: str = DATA_PLANE_PURPOSE, max_lifetime_ms: int = MAX_LIFETIME_MS) -> TenantGrant:
    """The grant ``token`` carries, once its signature, expiry and purpose are checked.

    The signature is compared in constant time before any field is trusted. A token is valid
    while ``now_ms < expiry``; one expiring more than ``max_lifetime_ms`` after ``now_ms`` is
    refused too, so that no leaked token outlives that bound whatever its minter chose.
    Raises :class:`TenantTokenError` saying what is wrong (never echoing the token).
    """
    fields = _fields(token)
    signed = ".".join(fields[:4])
    # Compared as text, not decoded bytes: base64 has spare bits in its last character, and a
    # signature that decoded the same from two spellings would let a changed token pass.
    if not hmac.compare_digest(fields[4], _encode(_signature(key, signed))):
        raise TenantTokenError("the tenant token's signature does not match (tampered, or signed with another cluster's key)")
    _, encoded_tenant, expiry, token_purpose = fields[:4]
    if token_purpose != purpose:
        raise TenantTokenError(f"the tenant token is for {token_purpose!r}, not {purpose!r}")
    expires_ms = int(expiry)
    if now_ms >= expires_ms:
        raise TenantTokenError(f"the tenant token expired {now_ms - expires_ms} ms ago; mint a new one")
    if expires_ms - now_ms > max_lifetime_ms:
        raise TenantTokenError(f"the tenant token expires more than {max_lifetime_ms} ms from now, longer than any tenant token may live")
    try:
        tenant_id = _decode(encoded_tenant, "tenant id").decode("utf-8")
    except UnicodeDecodeError:
        raise TenantTokenError("the tenant token is malformed: its tenant id is not UTF-8") from None
    if not tenant_id:
        raise TenantTokenError("the tenant token is malformed: its tenant id is empty")
    return TenantGrant(tenant_id, token_purpose, expires_ms)


def _fields(token: str) -> list[str]:
    """The five fields of a well-shaped token; TenantTokenError when its shape is wrong."""
    if not token or not isinstance(token, str):
        raise TenantTokenError("the tenant token is empty")
    if len(token) > MAX_TOKEN_LENGTH:
        raise TenantTokenError(f"the tenant token is malformed: longer than {MAX_TOKEN_LENGTH} characters")
    fields = token.split(".")
    if len(fields) != _FIELD_COUNT:
        raise TenantTokenError(f"the tenant token is malformed: expected {_FIELD_COUNT} fields separated by '.', got {len(fields)}")
    version, encoded_tenant, expiry, purpose, signature = fields
    if version != VERSION:
        raise TenantTokenError(f"the tenant token is malformed: unknown version (this broker knows {VERSION})")
    if not _BASE64URL.fullmatch(encoded_tenant) or not _BASE64URL.fullmatch(signature):
        raise TenantTokenError("the tenant token is malformed: the tenant id and signature must be base64url")
    if not _EXPIRY.fullmatch(expiry):
        raise TenantTokenError("the tenant token is malformed: the expiry must be milliseconds since the epoch")
    if not _PURPOSE.fullmatch(purpose):
        raise TenantTokenError("the tenant token is malformed: the purpose must be lower-case letters, digits and '-'")
    return fields


def _signature(key: bytes, signed: str) -> bytes:
    return hmac.new(key, signed.encode("ascii"), hashlib.sha256).digest()


def _encode(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def _decode(text: str, what: str) -> bytes:
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError):
        raise TenantTokenError(f"the tenant token is malformed: its {what} is not base64url") from None

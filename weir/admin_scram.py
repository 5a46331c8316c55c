"""confluent-kafka's SCRAM credential types (``ScramMechanism``, ``ScramCredentialInfo``,
``UserScramCredentialsDescription`` and the alterations) and ``ElectionType``.

Weir has two kinds of SCRAM login, both per tenant:

- a cluster API key: the control plane makes its SCRAM-SHA-256 and SCRAM-SHA-512 credentials
  with the key; a Kafka client logs in with the key as username and the secret as password;
- a SCRAM user a tenant's admin makes with ``AdminClient.alter_user_scram_credentials`` (Kafka's
  AlterUserScramCredentials): any name and password of its choosing. User names are per tenant
  (two tenants may each have an ``alice``), so a Kafka client logs in as
  ``<name>@<tenant id>`` (:func:`scram_login_name`, e.g. ``alice@tn-k7q2m9x4hz``) and acts as
  principal ``User:<name>`` in that tenant, under that tenant's ACLs. The split is at the last
  ``@``: a tenant id never contains one, and an API key has none, so the three never collide.

As in Kafka's protocol, the password never leaves the client: :func:`salted_password` computes
RFC 5802's SaltedPassword, which the control plane turns into StoredKey and ServerKey.
The types are here so that code written for confluent-kafka imports unchanged; see AdminClient
for the calls.
"""

from __future__ import annotations

import enum
import hashlib

# A SCRAM user's login name is "<name>@<tenant id>", split at the last "@".
SCRAM_LOGIN_SEPARATOR = "@"
# Kafka's bounds on a SCRAM credential's iteration count (AlterUserScramCredentials).
MIN_SCRAM_ITERATIONS = 4096
MAX_SCRAM_ITERATIONS = 16384
# Mechanism name as Kafka spells it -> hashlib name of its hash function.
SCRAM_HASHES = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}

__all__ = [
    "ElectionType",
    "ScramCredentialInfo",
    "ScramMechanism",
    "UserScramCredentialAlteration",
    "UserScramCredentialDeletion",
    "UserScramCredentialUpsertion",
    "UserScramCredentialsDescription",
]


class ElectionType(enum.IntEnum):
    """Kafka's leader election types (ElectLeaders)."""

    PREFERRED = 0
    UNCLEAN = 1


class ScramMechanism(enum.Enum):
    """Kafka's SCRAM mechanisms; an Enum as confluent-kafka's (it prints as ``ScramMechanism.SCRAM_SHA_256``), ordered by value."""

    UNKNOWN = 0
    SCRAM_SHA_256 = 1
    SCRAM_SHA_512 = 2

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, ScramMechanism):
            return NotImplemented
        return self.value < other.value


class ScramCredentialInfo:
    """A mechanism and its iteration count (never the salt or the keys)."""

    def __init__(self, mechanism: ScramMechanism, iterations: int) -> None:
        self.mechanism = mechanism
        self.iterations = iterations

    def __repr__(self) -> str:
        return f"ScramCredentialInfo({self.mechanism.name}, iterations={self.iterations})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ScramCredentialInfo):
            return NotImplemented
        return (self.mechanism, self.iterations) == (other.mechanism, other.iterations)

    def __hash__(self) -> int:
        return hash((self.mechanism, self.iterations))


class UserScramCredentialsDescription:
    """A user's SCRAM credentials: one ScramCredentialInfo per mechanism."""

    def __init__(self, user: str, scram_credential_infos: list[ScramCredentialInfo]) -> None:
        self.user = user
        self.scram_credential_infos = scram_credential_infos

    def __repr__(self) -> str:
        return f"UserScramCredentialsDescription({self.user}, {self.scram_credential_infos})"


class UserScramCredentialAlteration:
    """Base of the SCRAM credential changes."""

    def __init__(self, user: str) -> None:
        self.user = user


class UserScramCredentialUpsertion(UserScramCredentialAlteration):
    """Create or replace a user's credential for one mechanism."""

    def __init__(self, user: str, scram_credential_info: ScramCredentialInfo, password: bytes, salt: bytes | None = None) -> None:
        super().__init__(user)
        self.scram_credential_info = scram_credential_info
        self.password = password
        self.salt = salt


class UserScramCredentialDeletion(UserScramCredentialAlteration):
    """Delete a user's credential for one mechanism."""

    def __init__(self, user: str, mechanism: ScramMechanism) -> None:
        super().__init__(user)
        self.mechanism = mechanism


def scram_login_name(user: str, tenant_id: str) -> str:
    """The SASL/SCRAM username a Kafka client logs in with as SCRAM user ``user`` of ``tenant_id``."""
    return f"{user}{SCRAM_LOGIN_SEPARATOR}{tenant_id}"


def salted_password(mechanism: str, password: bytes, salt: bytes, iterations: int) -> bytes:
    """RFC 5802's SaltedPassword, ``PBKDF2-HMAC-H(password, salt, iterations)`` for ``mechanism``
    (SCRAM-SHA-256 or SCRAM-SHA-512): what AlterUserScramCredentials carries instead of the password."""
    return hashlib.pbkdf2_hmac(SCRAM_HASHES[mechanism], password, salt, iterations)

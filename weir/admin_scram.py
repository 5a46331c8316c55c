"""confluent-kafka's SCRAM credential types (``ScramMechanism``, ``ScramCredentialInfo``,
``UserScramCredentialsDescription`` and the alterations) and ``ElectionType``.

In Weir a SCRAM "user" is a cluster API key: the control plane makes its SCRAM-SHA-256 and
SCRAM-SHA-512 credentials with the key, for Kafka clients' SASL/SCRAM. The types are here so
that code written for confluent-kafka imports unchanged; see AdminClient for the calls.
"""

from __future__ import annotations

import enum

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


class ScramMechanism(enum.IntEnum):
    UNKNOWN = 0
    SCRAM_SHA_256 = 1
    SCRAM_SHA_512 = 2


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

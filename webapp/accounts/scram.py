"""SCRAM credentials of a cluster key (RFC 5802, RFC 7677), derived once when the key is created.

Kafka clients may authenticate with SASL/SCRAM-SHA-256 or SCRAM-SHA-512 instead of PLAIN. A
SCRAM server never sees the password: it needs, per mechanism, a salt, an iteration count,
``StoredKey = H(HMAC(SaltedPassword, "Client Key"))`` and ``ServerKey = HMAC(SaltedPassword,
"Server Key")`` with ``SaltedPassword = PBKDF2-HMAC-H(password, salt, iterations)``. Only these
are kept (never SaltedPassword, from which a client proof could be forged). They can be made
only while the secret is in hand, that is when the key is created: keys created before SCRAM
existed have none and authenticate with PLAIN (the brokers tell a SCRAM client so).

The brokers' side of the exchange (``broker_nodes.security.scram``) verifies proofs against
StoredKey and signs with ServerKey; this module is the only place the derivation is written.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass

from weir.admin_scram import SCRAM_HASHES  # mechanism name (as Kafka spells it) -> hashlib name

SCRAM_ITERATIONS = 4096  # Kafka's minimum iteration count (and RFC 7677's recommendation)
SCRAM_SALT_BYTES = 32  # random salt per key and mechanism


@dataclass(frozen=True)
class DerivedScramCredential:
    """What the control plane stores and pushes for one mechanism of one key; no value in a repr."""

    mechanism: str
    salt: bytes
    iterations: int
    stored_key: bytes = b""
    server_key: bytes = b""

    def __repr__(self) -> str:
        return f"DerivedScramCredential({self.mechanism}, iterations={self.iterations})"


def derive_scram_credential(mechanism: str, password: str, salt: bytes, iterations: int = SCRAM_ITERATIONS) -> DerivedScramCredential:
    """RFC 5802's StoredKey and ServerKey of ``password`` for ``mechanism`` (a key of :data:`SCRAM_HASHES`)."""
    hash_name = SCRAM_HASHES.get(mechanism)
    if hash_name is None:
        raise ValueError(f"unknown SCRAM mechanism {mechanism!r}: one of {', '.join(SCRAM_HASHES)}")
    return credential_from_salted_password(mechanism, salt, iterations, hashlib.pbkdf2_hmac(hash_name, password.encode("utf-8"), salt, iterations))


def credential_from_salted_password(mechanism: str, salt: bytes, iterations: int, salted_password: bytes) -> DerivedScramCredential:
    """StoredKey and ServerKey from RFC 5802's SaltedPassword, which Kafka's AlterUserScramCredentials
    carries instead of the password (the caller checked the mechanism and the length)."""
    hash_name = SCRAM_HASHES[mechanism]
    client_key = hmac.digest(salted_password, b"Client Key", hash_name)
    stored_key = hashlib.new(hash_name, client_key).digest()
    server_key = hmac.digest(salted_password, b"Server Key", hash_name)
    return DerivedScramCredential(mechanism, salt, iterations, stored_key, server_key)


def new_scram_credentials(password: str) -> list[DerivedScramCredential]:
    """Credentials for every mechanism, each with its own random salt (what a new cluster key gets)."""
    return [derive_scram_credential(mechanism, password, secrets.token_bytes(SCRAM_SALT_BYTES)) for mechanism in SCRAM_HASHES]

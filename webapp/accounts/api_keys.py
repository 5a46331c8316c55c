"""API key secrets: generation with a scannable prefix, hashing, and constant-time checks."""

from __future__ import annotations

import hashlib
import hmac
import secrets

from webapp.public_ids import new_api_key_id

# Leak scanners (GitHub secret scanning and the like) match these prefixes.
SECRET_PREFIXES = {"cloud": "weir_cloud_", "cluster": "weir_cluster_"}


def new_key_pair(kind: str) -> tuple[str, str]:
    """(key id, secret) for a new key of ``kind`` (``cloud`` or ``cluster``); the secret
    carries 256 random bits."""
    return new_api_key_id(), SECRET_PREFIXES[kind] + secrets.token_urlsafe(32)


def hash_secret(secret: str) -> str:
    """Hex SHA-256 of the secret: what the database and brokers keep."""
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def secret_matches(secret: str, stored_sha256: str) -> bool:
    return hmac.compare_digest(hash_secret(secret), stored_sha256)

"""Public identifiers: a short prefix that says what the id names, then random characters.

Database primary keys never leave the control plane; URLs, principals and API responses
use these ids, so nothing can be enumerated by counting.
"""

from __future__ import annotations

import secrets

# Lower-case letters and digits without look-alikes (no 0/o, 1/l/i).
_ALPHABET = "abcdefghjkmnpqrstuvwxyz23456789"
_KEY_ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"


def new_public_id(prefix: str, length: int = 10) -> str:
    """``prefix-`` followed by ``length`` random characters, e.g. ``tn-k7q2m9x4hz``."""
    return f"{prefix}-" + "".join(secrets.choice(_ALPHABET) for _ in range(length))


def new_api_key_id() -> str:
    """The public half of an API key: 16 upper-case characters, as Confluent's keys look."""
    return "".join(secrets.choice(_KEY_ALPHABET) for _ in range(16))


def new_tenant_id() -> str:
    return new_public_id("tn")


def new_service_account_id() -> str:
    return new_public_id("sa")


def new_member_id() -> str:
    return new_public_id("u")


def new_job_id() -> str:
    return new_public_id("job")


def new_acl_id() -> str:
    return new_public_id("acl")

"""Kafka's topic name rules, as the broker applies them (``broker_nodes.topic_registry``).

The control plane may not import broker internals, so the rules are restated here; both
follow Apache Kafka's ``Topic.validate``. Names starting with ``__`` are the brokers'
internal topics and are reserved: a tenant can never create or name one.
"""

from __future__ import annotations

import re

MAX_TOPIC_NAME_LENGTH = 249  # Kafka's limit: partition directory names stay below 255 bytes
RESERVED_TOPIC_PREFIX = "__"  # internal topics (__consumer_offsets, __usage)
_LEGAL_TOPIC_NAME = re.compile(r"^[a-zA-Z0-9._-]+$")


def topic_name_problem(name: str) -> str | None:
    """Why ``name`` cannot name a tenant's topic, or None when it can."""
    if not name:
        return "A topic name must not be empty."
    if name in (".", ".."):
        return "'.' and '..' are not allowed as topic names."
    if len(name) > MAX_TOPIC_NAME_LENGTH:
        return f"A topic name is at most {MAX_TOPIC_NAME_LENGTH} characters; this one has {len(name)}."
    if not _LEGAL_TOPIC_NAME.match(name):
        return "A topic name may contain only ASCII letters, digits, '.', '_' and '-'."
    if name.startswith(RESERVED_TOPIC_PREFIX):
        return f"Names starting with '{RESERVED_TOPIC_PREFIX}' are reserved for internal topics."
    return None

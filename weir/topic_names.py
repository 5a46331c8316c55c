"""Kafka's topic name rules, stated once for the SDK, the brokers and the control plane.

The rules follow Apache Kafka's ``Topic.validate``: a name is 1 to 249 characters drawn from
ASCII letters, digits, ``.``, ``_`` and ``-``, and is neither ``.`` nor ``..`` (both would
turn a partition directory name into a path step). Names starting with ``__`` belong to
internal topics (``__consumer_offsets``, ``__usage``); whether a caller may use one is the
caller's policy, so :func:`validate_topic_name` accepts them and
:func:`is_internal_topic_name` tells them apart.
"""

from __future__ import annotations

import re

MAX_TOPIC_NAME_LENGTH = 249  # Kafka's limit, so that partition directory names stay below 255 bytes
INTERNAL_TOPIC_PREFIX = "__"  # the prefix of the topics brokers keep for themselves
LEGAL_TOPIC_NAME_CHARACTERS = "ASCII letters, digits, '.', '_' and '-'"  # said in error reasons
_LEGAL_TOPIC_NAME = re.compile(r"[a-zA-Z0-9._-]+")  # used with fullmatch: '$' would let a trailing newline in


class InvalidTopicNameError(ValueError):
    """A topic name that breaks Kafka's rules. ``reason`` says which rule, as a lower-case phrase
    that callers may embed in their own messages (INVALID_TOPIC_EXCEPTION on the wire)."""

    retriable = False

    def __init__(self, name: str, reason: str) -> None:
        super().__init__(f"invalid topic name {name!r}: {reason}")
        self.name = name
        self.reason = reason


def validate_topic_name(name: str) -> None:
    """Raise :class:`InvalidTopicNameError` unless ``name`` follows Kafka's topic name rules.

    Internal names (``__`` prefix) pass: refusing them is the caller's decision.
    """
    if not name:
        raise InvalidTopicNameError(name, "a topic name must not be empty")
    if name in (".", ".."):
        raise InvalidTopicNameError(name, "'.' and '..' are not allowed as topic names")
    if len(name) > MAX_TOPIC_NAME_LENGTH:
        raise InvalidTopicNameError(name, f"a topic name is at most {MAX_TOPIC_NAME_LENGTH} characters, this one has {len(name)}")
    if _LEGAL_TOPIC_NAME.fullmatch(name) is None:
        raise InvalidTopicNameError(name, f"a topic name may contain only {LEGAL_TOPIC_NAME_CHARACTERS}")


def is_internal_topic_name(name: str) -> bool:
    """True for the names of internal topics (those starting with ``__``)."""
    return name.startswith(INTERNAL_TOPIC_PREFIX)

"""Kafka's topic name rules, stated once for the brokers, the control plane and the pipelines.

The rules follow Apache Kafka's ``Topic.validate``: a name is 1 to 249 characters drawn from
ASCII letters, digits, ``.``, ``_`` and ``-``, and is neither ``.`` nor ``..`` (both would
turn a partition directory name into a path step). Names starting with ``__`` belong to
internal topics (``__consumer_offsets``, ``__usage``); whether a caller may use one is the
caller's policy, so :func:`validate_topic_name` accepts them and
:func:`is_internal_topic_name` tells them apart.

A tenant's topic is stored under a longer name than the one the tenant chose: brokers keep it
as ``<tenant id>~<name>`` and each partition in a directory ``<tenant id>~<name>-<partition>``,
which must fit one directory entry (``log_formats.log_files.MAX_DIRECTORY_NAME_BYTES``). Kafka's 249
leaves room only for the partition number, so a tenant's names are shorter:
:func:`max_topic_name_length` says by how much, from the tenant id, the separator and the
widest partition number a broker allows. Names are ASCII, so characters and bytes agree.
"""

from __future__ import annotations

import re

from log_formats.log_files import MAX_DIRECTORY_NAME_BYTES, PARTITION_DIRECTORY_SEPARATOR

MAX_TOPIC_NAME_LENGTH = 249  # Kafka's limit, so that partition directory names stay below 255 bytes
INTERNAL_TOPIC_PREFIX = "__"  # the prefix of the topics brokers keep for themselves
TENANT_SEPARATOR = "~"  # brokers store a tenant's topic as ``<tenant id>~<name>``; never legal in a name
MAX_PARTITIONS_PER_TOPIC = 10_000  # brokers refuse more; its widest partition number bounds directory names
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


def max_topic_name_length(tenant_id: str = "") -> int:
    """The longest topic name ``tenant_id`` may use (empty: a topic without a tenant).

    What is left of a directory entry once the tenant prefix (``<tenant id>~``) and the widest
    partition suffix (``-9999``) are in it, and never more than Kafka's 249.
    """
    prefix = f"{tenant_id}{TENANT_SEPARATOR}" if tenant_id else ""
    widest_suffix = f"{PARTITION_DIRECTORY_SEPARATOR}{MAX_PARTITIONS_PER_TOPIC - 1}"
    room = MAX_DIRECTORY_NAME_BYTES - len(prefix.encode("utf-8")) - len(widest_suffix.encode("utf-8"))
    return min(MAX_TOPIC_NAME_LENGTH, room)


def topic_name_length_reason(limit: int) -> str:
    """Why a name is at most ``limit`` characters, as a phrase for errors and help texts."""
    if limit >= MAX_TOPIC_NAME_LENGTH:
        return f"a topic name is at most {limit} characters"
    return f"a topic name is at most {limit} characters: the tenant prefix and partition number must fit a {MAX_DIRECTORY_NAME_BYTES}-byte directory name"


def validate_topic_name(name: str, tenant_id: str = "") -> None:
    """Raise :class:`InvalidTopicNameError` unless ``name`` follows Kafka's topic name rules.

    With ``tenant_id``, the name must also fit a partition directory with that tenant's
    prefix (:func:`max_topic_name_length`). Internal names (``__`` prefix) pass: refusing them
    is the caller's decision.
    """
    if not name:
        raise InvalidTopicNameError(name, "a topic name must not be empty")
    if name in (".", ".."):
        raise InvalidTopicNameError(name, "'.' and '..' are not allowed as topic names")
    limit = max_topic_name_length(tenant_id)
    if len(name) > limit:
        raise InvalidTopicNameError(name, f"{topic_name_length_reason(limit)} (this one has {len(name)})")
    if _LEGAL_TOPIC_NAME.fullmatch(name) is None:
        raise InvalidTopicNameError(name, f"a topic name may contain only {LEGAL_TOPIC_NAME_CHARACTERS}")


def is_internal_topic_name(name: str) -> bool:
    """True for the names of internal topics (those starting with ``__``)."""
    return name.startswith(INTERNAL_TOPIC_PREFIX)


def qualify(tenant_id: str, name: str) -> str:
    """The name brokers store a tenant's topic or group under: ``<tenant id>~<name>``;
    ``name`` unchanged when there is no tenant (standalone and internal names)."""
    if not tenant_id:
        return name
    return f"{tenant_id}{TENANT_SEPARATOR}{name}"


def split_qualified_name(qualified: str) -> tuple[str, str]:
    """(tenant id, plain name) of a name as brokers store it; the tenant id is "" without one.

    Splitting at the first ``~`` is unambiguous because no topic or group name a tenant may
    choose contains it (it is outside :data:`LEGAL_TOPIC_NAME_CHARACTERS`, and the control plane
    refuses it in group and ACL resource names).
    """
    tenant_id, separator, name = qualified.partition(TENANT_SEPARATOR)
    if not separator:
        return "", qualified
    return tenant_id, name

"""What a heartbeating member subscribes to: its named topics and the tenant's topics its regex matches.

Named topics must be readable by the caller (TOPIC_AUTHORIZATION_FAILED otherwise, whether or
not they exist); a topic that does not exist yet is still subscribed, so the member gets it
once it is created. A regex is matched in full (as Java's ``Matcher.matches``) against the
plain names of the caller's tenant's topics, internal topics excluded, and keeps only those
the caller may read. Resolved on every heartbeat, so topics created or deleted, and ACL
changes, reach the group at its members' next heartbeats.
"""

from __future__ import annotations

import functools
import re

from broker_nodes.coordinator.groups.errors import InvalidGroupRequestError
from broker_nodes.coordinator.groups.group import TopicInfo, TopicLookup
from broker_nodes.security.access import CallContext
from broker_nodes.security.authorizer import Operation, ResourceType
from broker_nodes.security.errors import TopicAuthorizationError
from broker_nodes.topic_registry import TopicRegistry


@functools.lru_cache(maxsize=256)
def compile_subscription_regex(regex: str) -> re.Pattern[str]:
    """The compiled subscription regex; InvalidGroupRequestError naming the problem when it does not compile."""
    try:
        return re.compile(regex)
    except re.error as error:
        raise InvalidGroupRequestError(f"subscription regex {regex!r} is invalid: {error}") from None


class TenantSubscriptions:
    """Resolves subscriptions for one call (its tenant and ACLs) against the broker's topics."""

    def __init__(self, registry: TopicRegistry, call: CallContext) -> None:
        self._registry = registry
        self._call = call

    def __call__(self, topic_names: tuple[str, ...], regex: str) -> frozenset[str]:
        """The qualified names of the topics a member with this subscription gets partitions of."""
        call = self._call
        resolved = set()
        for name in topic_names:
            if not name:
                raise InvalidGroupRequestError("a subscribed topic name must not be empty")
            if not call.may(Operation.READ, ResourceType.TOPIC, name):
                raise TopicAuthorizationError(name, "subscribe to")
            resolved.add(call.qualify(name))
        if regex:
            pattern = compile_subscription_regex(regex)
            for topic in self._registry.topics():
                if topic.internal or not call.owns(topic.name):
                    continue
                plain = call.plain(topic.name)
                if pattern.fullmatch(plain) and call.may(Operation.READ, ResourceType.TOPIC, plain):
                    resolved.add(topic.name)
        return frozenset(resolved)


def registry_topics(registry: TopicRegistry) -> TopicLookup:
    """A lookup of topics (qualified names) in the broker's registry."""

    def lookup(name: str) -> TopicInfo | None:
        topic = registry.get(name)
        return None if topic is None else TopicInfo(topic.topic_id, topic.partitions)

    return lookup

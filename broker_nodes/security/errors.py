"""Typed refusals of the security layer; ``broker_nodes.server.errors`` maps them to Kafka codes."""

from __future__ import annotations

MANAGED_TOPICS_MESSAGE = "topics are managed by the control plane: use the REST API or dashboard"


class TopicAuthorizationError(Exception):
    """The caller may not do this to the topic (TOPIC_AUTHORIZATION_FAILED); never says whether it exists."""

    retriable = False

    def __init__(self, topic: str, operation: str) -> None:
        super().__init__(f"not authorized to {operation} topic {topic!r}")
        self.topic = topic
        self.operation = operation


class GroupAuthorizationError(Exception):
    """The caller may not use the consumer group (GROUP_AUTHORIZATION_FAILED)."""

    retriable = False

    def __init__(self, group_id: str, operation: str) -> None:
        super().__init__(f"not authorized to {operation} group {group_id!r}")
        self.group_id = group_id
        self.operation = operation


class ClusterAuthorizationError(Exception):
    """The caller may not do this cluster-wide operation (CLUSTER_AUTHORIZATION_FAILED)."""

    retriable = False

    def __init__(self, operation: str) -> None:
        super().__init__(f"not authorized to {operation} on the cluster")
        self.operation = operation


class ManagedTopicsPolicyError(Exception):
    """Topic administration through the data plane is refused for managed topics (POLICY_VIOLATION)."""

    retriable = False

    def __init__(self, topic: str) -> None:
        super().__init__(MANAGED_TOPICS_MESSAGE)
        self.topic = topic

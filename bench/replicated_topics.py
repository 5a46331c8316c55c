"""Topics for the replication benchmarks: created over REST, awaited through SDK metadata.

Topics are created with ``POST /api/v1/topics`` and the demo's cloud key, not with the
SDK's ``AdminClient.create_topics``: the demo's service account holds no CREATE ACL (its
ACLs allow reading, writing and describing topics starting with ``demo``), and its cloud key
has the developer role, which may create topics but not grant ACLs.

A topic counts as healthy when metadata shows every partition with a leader and every
replica in its ISR: only then does killing a leader measure a failover rather than an outage.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass

from bench.stack import ApiClient
from weir.admin import AdminClient
from weir.errors import KafkaException

CREATED_STATUSES = (200, 201, 202)
HEALTH_POLL_SECONDS = 0.1  # between metadata requests while a topic is not healthy
METADATA_TIMEOUT_SECONDS = 5.0  # one metadata request


class TopicSetupError(Exception):
    """A topic could not be created, or did not become healthy in time; the message says which and why."""

    retriable = False


@dataclass(frozen=True)
class PartitionState:
    """One partition as metadata shows it: leader (-1: none), replicas and in-sync replicas."""

    partition: int
    leader: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]

    @property
    def healthy(self) -> bool:
        return self.leader >= 0 and bool(self.replicas) and set(self.isr) >= set(self.replicas)


def create_topic(api: ApiClient, name: str, partitions: int, replication_factor: int, configs: Mapping[str, str]) -> None:
    """Create ``name`` over REST; TopicSetupError with the API's answer when it refuses."""
    body = {
        "topic_name": name,
        "partitions_count": partitions,
        "replication_factor": replication_factor,
        "configs": [{"name": key, "value": value} for key, value in configs.items()],
    }
    try:
        status, answer = api.request("POST", "/topics", body)
    except OSError as error:
        raise TopicSetupError(f"POST /topics for {name!r}: {error}") from None
    if status not in CREATED_STATUSES:
        raise TopicSetupError(f"POST /topics for {name!r} answered {status}: {answer}")


def partition_states(admin: AdminClient, topic: str) -> list[PartitionState]:
    """What metadata says about ``topic`` now (empty when the brokers do not know it yet)."""
    metadata = admin.list_topics(topic, timeout=METADATA_TIMEOUT_SECONDS).topics.get(topic)
    if metadata is None or metadata.error is not None:
        return []
    return [
        PartitionState(partition.id, partition.leader, tuple(partition.replicas), tuple(partition.isrs))
        for partition in sorted(metadata.partitions.values(), key=lambda partition: partition.id)
    ]


def wait_until_healthy(admin: AdminClient, topic: str, partitions: int, timeout_seconds: float) -> list[PartitionState]:
    """Poll metadata until all ``partitions`` of ``topic`` are healthy; their states.

    TopicSetupError naming the last state seen when ``timeout_seconds`` pass first.
    """
    deadline = time.monotonic() + timeout_seconds
    last_seen: object = "no metadata yet"
    while True:
        try:
            states = partition_states(admin, topic)
        except KafkaException as error:
            states, last_seen = [], error
        if len(states) == partitions and all(state.healthy for state in states):
            return states
        if states:
            last_seen = states
        if time.monotonic() + HEALTH_POLL_SECONDS > deadline:
            raise TopicSetupError(f"topic {topic!r} was not fully in sync within {timeout_seconds:g} s; last seen: {last_seen}")
        time.sleep(HEALTH_POLL_SECONDS)

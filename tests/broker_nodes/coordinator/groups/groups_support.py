"""A consumer group driven directly (no broker): topics, a clock, member ids, and heartbeat shorthands."""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field

from broker_nodes.coordinator.groups.group import ConsumerGroup, GroupSettings, Heartbeat, HeartbeatAnswer, Subscription, TopicInfo
from broker_nodes.coordinator.groups.member import TopicPartition

SETTINGS = GroupSettings(session_timeout_ms=10_000, heartbeat_interval_ms=1_000, rebalance_timeout_ms=30_000)


@dataclass
class GroupHarness:
    """One group with the topics it can see; ``now`` is the time the next call happens at (ms)."""

    topics: dict[str, TopicInfo] = field(default_factory=dict)
    settings: GroupSettings = SETTINGS
    group: ConsumerGroup = field(default_factory=lambda: ConsumerGroup("g"))
    now: int = 1_000_000
    _ids: itertools.count = field(default_factory=lambda: itertools.count(1))

    def add_topic(self, name: str, partitions: int) -> None:
        self.topics[name] = TopicInfo(f"00000000-0000-0000-0000-{len(self.topics) + 1:012d}", partitions)

    def resolve(self, names: tuple[str, ...], regex: str) -> frozenset[str]:
        matched = {topic for topic in self.topics if regex and re.fullmatch(regex, topic)}
        return frozenset(names) | frozenset(matched)

    def heartbeat(self, request: Heartbeat) -> HeartbeatAnswer:
        """Apply a heartbeat to a copy and keep it, as the coordinator does after writing its records."""
        working = self.group.copy()
        answer = working.heartbeat(request, self.now, self.settings, self.resolve, self.topics.get, lambda: f"member-{next(self._ids)}")
        self.group = working
        return answer

    def join(self, *topics: str, regex: str = "", instance_id: str = "", assignor: str = "", member_id: str = "", **options: object) -> HeartbeatAnswer:
        return self.heartbeat(
            Heartbeat(member_id, 0, instance_id=instance_id, subscription=Subscription(topics, regex), server_assignor=assignor, owned=frozenset(), **options)  # type: ignore[arg-type]
        )

    def beat(self, answer: HeartbeatAnswer, owned: frozenset[TopicPartition] | None = None, **options: object) -> HeartbeatAnswer:
        return self.heartbeat(Heartbeat(answer.member_id, answer.member_epoch, owned=owned, **options))  # type: ignore[arg-type]

    def expire(self, advance_ms: int) -> list[str]:
        self.now += advance_ms
        working = self.group.copy()
        removed = working.expire(self.now, self.topics.get)
        self.group = working
        return [removal.member_id for removal in removed]


def partitions(topic: str, *numbers: int) -> frozenset[TopicPartition]:
    return frozenset((topic, number) for number in numbers)

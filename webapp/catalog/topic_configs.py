"""A topic's full config list as Kafka's DescribeConfigs reports it: every declared key with
its effective value, whether it is the default, and where the value comes from."""

from __future__ import annotations

from dataclasses import dataclass

from webapp.catalog.models import Topic
from weir.topic_config import TOPIC_CONFIGS

SOURCE_TOPIC_OVERRIDE = "DYNAMIC_TOPIC_CONFIG"  # Kafka's ConfigSource for a per-topic override
SOURCE_DEFAULT = "DEFAULT_CONFIG"  # the declared default


@dataclass(frozen=True)
class TopicConfigEntry:
    name: str
    value: str
    is_default: bool
    source: str
    type: str
    documentation: str


def describe_topic_configs(topic: Topic) -> list[TopicConfigEntry]:
    """Every declared config of ``topic``, by name; values as text, as Kafka sends them."""
    entries = []
    for name in sorted(TOPIC_CONFIGS):
        key = TOPIC_CONFIGS[name]
        override = topic.configs.get(name)
        entries.append(
            TopicConfigEntry(
                name=name,
                value=override if override is not None else key.default,
                is_default=override is None,
                source=SOURCE_DEFAULT if override is None else SOURCE_TOPIC_OVERRIDE,
                type=key.type,
                documentation=key.documentation,
            )
        )
    return entries

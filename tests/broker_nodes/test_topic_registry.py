import json

import pytest

from broker_nodes.topic_registry import (
    InvalidPartitionsError,
    InvalidReplicationFactorError,
    InvalidTopicError,
    TopicAlreadyExistsError,
    TopicRegistry,
    UnknownTopicOrPartitionError,
)
from weir.topic_config import InvalidConfigError


@pytest.fixture
def registry(tmp_path):
    registry = TopicRegistry(tmp_path)
    registry.load()
    return registry


def test_created_topic_survives_reload(tmp_path, registry):
    created = registry.create_topic("orders", 3, 1, {"retention.ms": "1000"})
    reloaded = TopicRegistry(tmp_path)
    reloaded.load()
    assert reloaded.get("orders") == created
    assert dict(reloaded.get("orders").configs) == {"retention.ms": "1000"}


def test_file_is_replaced_atomically_without_leftovers(tmp_path, registry):
    registry.create_topic("a", 1, 1, {})
    registry.create_topic("b", 1, 1, {})
    assert sorted(path.name for path in tmp_path.iterdir()) == ["topics.json"]
    document = json.loads((tmp_path / "topics.json").read_text())
    assert [topic["name"] for topic in document["topics"]] == ["a", "b"]


@pytest.mark.parametrize(
    "name, fragment",
    [
        ("../evil", "only ASCII letters"),
        (".", "'.' and '..'"),
        ("..", "'.' and '..'"),
        ("", "must not be empty"),
        ("a" * 250, "at most 249"),
        ("has space", "only ASCII letters"),
        ("ümlaut", "only ASCII letters"),
        ("__internal", "reserved for internal topics"),
    ],
)
def test_invalid_names_are_refused_with_the_rule(registry, name, fragment):
    with pytest.raises(InvalidTopicError) as raised:
        registry.create_topic(name, 1, 1, {})
    assert fragment in str(raised.value)
    assert registry.topics() == []


def test_longest_legal_name_is_accepted(registry):
    name = "a" * 249
    assert registry.create_topic(name, 1, 1, {}).name == name


def test_internal_topic_may_be_created_by_the_broker_but_not_deleted(registry):
    registry.create_topic("__consumer_offsets", 2, 1, {}, internal=True)
    with pytest.raises(InvalidTopicError):
        registry.delete_topic("__consumer_offsets")


def test_duplicate_topic_is_refused(registry):
    registry.create_topic("orders", 1, 1, {})
    with pytest.raises(TopicAlreadyExistsError):
        registry.create_topic("orders", 1, 1, {})


def test_replication_factor_above_one_broker_is_refused(registry):
    with pytest.raises(InvalidReplicationFactorError) as raised:
        registry.create_topic("orders", 1, 3, {})
    assert "only 1 broker" in str(raised.value)


@pytest.mark.parametrize("partitions", [0, -3, 10_001])
def test_partition_count_out_of_range_is_refused(registry, partitions):
    with pytest.raises(InvalidPartitionsError):
        registry.create_topic("orders", partitions, 1, {})


def test_bad_config_is_refused_and_nothing_is_created(registry):
    with pytest.raises(InvalidConfigError):
        registry.create_topic("orders", 1, 1, {"retention.ms": "soon"})
    assert registry.get("orders") is None


def test_validate_only_creates_nothing(tmp_path, registry):
    registry.create_topic("orders", 1, 1, {}, validate_only=True)
    assert registry.get("orders") is None
    assert not (tmp_path / "topics.json").exists()


def test_recreated_topic_gets_a_new_id(registry):
    first = registry.create_topic("orders", 1, 1, {})
    registry.delete_topic("orders")
    second = registry.create_topic("orders", 1, 1, {})
    assert first.topic_id != second.topic_id


def test_partitions_only_grow(registry):
    registry.create_topic("orders", 2, 1, {})
    assert registry.create_partitions("orders", 5).partitions == 5
    for count in (5, 3):
        with pytest.raises(InvalidPartitionsError):
            registry.create_partitions("orders", count)
    assert registry.get("orders").partitions == 5


def test_unknown_topic_raises_unknown_topic_or_partition(registry):
    with pytest.raises(UnknownTopicOrPartitionError):
        registry.delete_topic("missing")
    with pytest.raises(UnknownTopicOrPartitionError):
        registry.create_partitions("missing", 4)
    with pytest.raises(UnknownTopicOrPartitionError):
        registry.set_configs("missing", {})


def test_set_configs_replaces_overrides(registry):
    registry.create_topic("orders", 1, 1, {"retention.ms": "1000"})
    changed = registry.set_configs("orders", {"cleanup.policy": "compact"})
    assert dict(changed.configs) == {"cleanup.policy": "compact"}
    assert registry.get("orders") == changed

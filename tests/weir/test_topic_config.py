"""The declared topic config table: defaults, types, ranges, unknown keys."""

from __future__ import annotations

import pytest

from weir.topic_config import TOPIC_CONFIGS, InvalidConfigError, effective_topic_configs, validate_topic_configs


def test_every_default_parses_within_its_own_range():
    values = effective_topic_configs({})
    assert set(values) == set(TOPIC_CONFIGS)
    assert values["cleanup.policy"] == ("delete",)
    assert values["retention.ms"] == 7 * 24 * 3600 * 1000


def test_overrides_are_typed():
    values = validate_topic_configs({"cleanup.policy": "compact,delete", "min.cleanable.dirty.ratio": "0.25", "unclean.leader.election.enable": "TRUE"})
    assert values == {"cleanup.policy": ("compact", "delete"), "min.cleanable.dirty.ratio": 0.25, "unclean.leader.election.enable": True}


@pytest.mark.parametrize(
    "name, value, message",
    [
        ("retention.ms", "abc", "expected a value of type LONG"),
        ("retention.ms", "-2", "at least -1"),
        ("segment.bytes", str(2**31), "at most 2147483647"),
        ("cleanup.policy", "shred", "must be one of delete, compact"),
        ("cleanup.policy", "delete,shred", "must be one of delete, compact"),
        ("min.cleanable.dirty.ratio", "1.5", "at most 1"),
        ("message.timestamp.type", "WallClock", "must be one of CreateTime, LogAppendTime"),
        ("unclean.leader.election.enable", "yes", "BOOLEAN"),
    ],
)
def test_bad_values_name_the_key_and_the_rule(name, value, message):
    with pytest.raises(InvalidConfigError, match=message) as raised:
        validate_topic_configs({name: value})
    assert raised.value.name == name
    assert name in str(raised.value)


@pytest.mark.parametrize("value", ["", " ", " , "])
def test_an_empty_cleanup_policy_is_kafka_4s_neither_delete_nor_compact(value):
    # KIP-1030 (Kafka 4.0): an empty cleanup.policy is valid, as incremental SUBTRACT of its last member leaves it.
    assert validate_topic_configs({"cleanup.policy": value}) == {"cleanup.policy": ()}
    assert effective_topic_configs({"cleanup.policy": value})["cleanup.policy"] == ()


def test_unknown_key_is_refused():
    with pytest.raises(InvalidConfigError, match="unknown topic config"):
        validate_topic_configs({"retention.hours": "5"})

"""The group.consumer.* broker settings."""

from __future__ import annotations

import pytest

from broker_nodes.config import BrokerConfigError, load_broker_config
from broker_nodes.coordinator.groups.group import GroupSettings
from broker_nodes.server.broker import group_settings


def config(*settings: str):  # type: ignore[no-untyped-def]
    return load_broker_config(node_id=1, listen="127.0.0.1:0", data_dir="/nonexistent", configs=list(settings))


def test_defaults_are_kafkas_with_a_low_minimum_session_timeout() -> None:
    assert group_settings(config()) == GroupSettings(
        session_timeout_ms=45_000,
        min_session_timeout_ms=1_000,
        max_session_timeout_ms=60_000,
        heartbeat_interval_ms=5_000,
        max_size=2**31 - 1,
        assignors=("sticky", "range", "roundrobin"),
    )


def test_assignors_are_checked_and_the_first_is_the_default() -> None:
    assert group_settings(config("group.consumer.assignors=range,sticky")).assignors == ("range", "sticky")
    with pytest.raises(BrokerConfigError, match="must be one of sticky, range, roundrobin"):
        config("group.consumer.assignors=range,fancy")


def test_default_session_timeout_must_lie_within_the_allowed_range() -> None:
    with pytest.raises(
        BrokerConfigError, match="45000 must lie between group.consumer.min.session.timeout.ms=1000 and group.consumer.max.session.timeout.ms=30000"
    ):
        config("group.consumer.max.session.timeout.ms=30000")


def test_members_are_told_a_heartbeat_interval_within_their_session() -> None:
    settings = GroupSettings(heartbeat_interval_ms=5_000)
    assert (settings.heartbeat_interval_for(45_000), settings.heartbeat_interval_for(3_000)) == (5_000, 1_000)

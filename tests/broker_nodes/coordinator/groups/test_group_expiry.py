"""Offsets of a group expire only once it is empty, counted from then; an empty group without offsets goes too."""

from __future__ import annotations

import pytest

from broker_nodes.clock import ManualClock
from broker_nodes.config import load_broker_config
from broker_nodes.coordinator.groups.errors import GroupIdNotFoundError
from broker_nodes.coordinator.groups.group import GroupState, Heartbeat, Subscription
from broker_nodes.coordinator.offset_store import OffsetCommitEntry
from broker_nodes.server.broker import Broker

RETENTION_MS = 10_000


@pytest.fixture
def broker(tmp_path):  # type: ignore[no-untyped-def]
    broker = Broker(load_broker_config(node_id=1, listen="127.0.0.1:0", data_dir=tmp_path, configs=["offsets.topic.num.partitions=2"]), clock=ManualClock())
    broker.start()
    broker.topic_admin.create_topic("orders", 2, 1, {})
    yield broker
    broker.shutdown()


def subscribed(names: tuple[str, ...], regex: str) -> frozenset[str]:
    return frozenset(names)


def test_offsets_of_a_group_expire_retention_after_it_became_empty(broker) -> None:  # type: ignore[no-untyped-def]
    coordinator = broker.group_coordinator
    # The session outlasts the test's time steps, so the broker's own timer never removes the member.
    joined = coordinator.heartbeat("billing", Heartbeat("", 0, subscription=Subscription(("orders",), ""), session_timeout_ms=60_000), subscribed)
    assert broker.offset_store.commit("billing", joined.member_id, [OffsetCommitEntry("orders", 0, 5, -1, "")], member_epoch=joined.member_epoch) == [None]
    assert broker.offset_store.commit("simple", "", [OffsetCommitEntry("orders", 1, 9, -1, "")]) == [None]

    broker.clock.advance(2 * RETENTION_MS)
    assert coordinator.expire_offsets(RETENTION_MS) == 1  # only the member-less group's offset: the active group keeps its own
    assert [value.offset for _, _, value in broker.offset_store.fetch("billing", None)] == [5]

    coordinator.heartbeat("billing", Heartbeat(joined.member_id, -1), subscribed)
    assert coordinator.describe("billing").state == GroupState.EMPTY
    broker.clock.advance(RETENTION_MS - 1_000)
    assert coordinator.expire_offsets(RETENTION_MS) == 0
    broker.clock.advance(2_000)
    assert coordinator.expire_offsets(RETENTION_MS) == 1
    assert broker.offset_store.fetch("billing", None) == []
    with pytest.raises(GroupIdNotFoundError):
        coordinator.describe("billing")


def test_empty_group_with_offsets_stays_until_they_expire(broker) -> None:  # type: ignore[no-untyped-def]
    coordinator = broker.group_coordinator
    joined = coordinator.heartbeat("billing", Heartbeat("", 0, subscription=Subscription(("orders",), ""), session_timeout_ms=60_000), subscribed)
    coordinator.heartbeat("billing", Heartbeat(joined.member_id, -1), subscribed)
    broker.clock.advance(RETENTION_MS // 2)
    # Committed after the group emptied: its offsets count from the commit.
    assert broker.offset_store.commit("billing", "", [OffsetCommitEntry("orders", 0, 5, -1, "")]) == [None]
    broker.clock.advance(RETENTION_MS)
    assert coordinator.expire_offsets(RETENTION_MS) == 0
    assert coordinator.describe("billing").state == GroupState.EMPTY
    broker.clock.advance(RETENTION_MS)
    assert coordinator.expire_offsets(RETENTION_MS) == 1
    with pytest.raises(GroupIdNotFoundError):
        coordinator.describe("billing")

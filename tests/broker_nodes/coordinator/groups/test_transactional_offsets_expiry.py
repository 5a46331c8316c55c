"""Offsets of an open transaction hold their group and their key: neither expiry nor empty-group deletion touches them (Kafka's hasOffsets)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from broker_nodes.clock import ManualClock
from broker_nodes.config import load_broker_config
from broker_nodes.coordinator.groups.errors import GroupIdNotFoundError
from broker_nodes.coordinator.groups.group import GroupState, Heartbeat, Subscription
from broker_nodes.coordinator.offset_store import OffsetCommitEntry
from broker_nodes.server.broker import Broker

RETENTION_MS = 10_000
PRODUCER_ID, PRODUCER_EPOCH = 4000, 0


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[Broker]:
    broker = Broker(load_broker_config(node_id=1, listen="127.0.0.1:0", data_dir=tmp_path, configs=["offsets.topic.num.partitions=1"]), clock=ManualClock())
    broker.start()
    broker.topic_admin.create_topic("orders", 2, 1, {})
    yield broker
    broker.shutdown()


def subscribed(names: tuple[str, ...], regex: str) -> frozenset[str]:
    return frozenset(names)


def test_an_empty_group_with_offsets_of_an_open_transaction_is_kept_until_it_ends(broker: Broker) -> None:
    clock = broker.clock
    assert isinstance(clock, ManualClock)
    coordinator = broker.group_coordinator
    joined = coordinator.heartbeat("billing", Heartbeat("", 0, subscription=Subscription(("orders",), ""), session_timeout_ms=60_000), subscribed)
    assert broker.offset_store.commit("billing", joined.member_id, [OffsetCommitEntry("orders", 0, 5, -1, "")], member_epoch=joined.member_epoch) == [None]
    entries = [OffsetCommitEntry("orders", 0, 7, -1, ""), OffsetCommitEntry("orders", 1, 3, -1, "")]
    assert coordinator.commit_transactional_offsets("billing", PRODUCER_ID, PRODUCER_EPOCH, joined.member_id, joined.member_epoch, entries) == [None, None]
    coordinator.heartbeat("billing", Heartbeat(joined.member_id, -1), subscribed)
    assert coordinator.describe("billing").state == GroupState.EMPTY

    clock.advance(2 * RETENTION_MS)
    assert coordinator.expire_offsets(RETENTION_MS) == 0  # orders-0's commit is the open transaction's key too
    assert coordinator.describe("billing").state == GroupState.EMPTY
    assert broker.offset_store.unstable_partitions("billing") == {("orders", 0), ("orders", 1)}

    broker.offset_store.transaction_completed(0, PRODUCER_ID, PRODUCER_EPOCH + 1, commit=False)
    assert broker.offset_store.unstable_partitions("billing") == set()
    assert coordinator.expire_offsets(RETENTION_MS) == 1  # the plain commit, now alone
    with pytest.raises(GroupIdNotFoundError):
        coordinator.describe("billing")

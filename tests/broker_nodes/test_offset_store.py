"""Committed offsets through a started broker, with a manual clock (expiry) and reloads."""

import pytest

from broker_nodes.clock import ManualClock
from broker_nodes.config import load_broker_config
from broker_nodes.coordinator.offset_store import OFFSETS_TOPIC, OffsetCommitEntry
from broker_nodes.server.broker import Broker
from broker_nodes.topic_registry import UnknownTopicOrPartitionError

MINUTE_MS = 60_000


@pytest.fixture
def clock():
    return ManualClock()


def start_broker(data_dir, clock):
    broker = Broker(load_broker_config(node_id=1, listen="127.0.0.1:0", data_dir=data_dir, configs=["offsets.topic.num.partitions=4"]), clock=clock)
    broker.start()
    return broker


@pytest.fixture
def broker(tmp_path, clock):
    broker = start_broker(tmp_path, clock)
    broker.topic_admin.create_topic("orders", 2, 1, {})
    yield broker
    broker.shutdown()


def entry(partition, offset, metadata=""):
    return OffsetCommitEntry("orders", partition, offset, -1, metadata)


def test_commit_stores_valid_entries_and_reports_invalid_ones(broker):
    outcomes = broker.offset_store.commit("billing", "", [entry(0, 5), entry(9, 1)])
    assert outcomes[0] is None
    assert isinstance(outcomes[1], UnknownTopicOrPartitionError)
    assert [(topic, partition, value.offset) for topic, partition, value in broker.offset_store.fetch("billing", None)] == [("orders", 0, 5)]


def test_offsets_older_than_retention_expire_with_tombstones_that_survive_a_reload(tmp_path, broker, clock):
    broker.offset_store.commit("old", "", [entry(0, 1)])
    clock.advance(10 * MINUTE_MS)
    broker.offset_store.commit("new", "", [entry(1, 2)])
    assert broker.offset_store.expire(5 * MINUTE_MS) == 1
    assert broker.offset_store.fetch("old", None) == []
    assert len(broker.offset_store.fetch("new", None)) == 1
    broker.shutdown()
    reloaded = start_broker(tmp_path, clock)
    try:
        assert reloaded.offset_store.fetch("old", None) == []
        assert [value.offset for _, _, value in reloaded.offset_store.fetch("new", None)] == [2]
    finally:
        reloaded.shutdown()


def test_groups_are_spread_over_the_offsets_partitions(broker):
    for index in range(20):
        broker.offset_store.commit(f"group-{index}", "", [entry(0, index)])
    used = [partition for partition in range(4) if broker.log_manager.get_log(OFFSETS_TOPIC, partition).log_end_offset > 0]
    assert len(used) > 1
    assert {broker.offset_store.partition_for(f"group-{index}") for index in range(20)} == set(used)

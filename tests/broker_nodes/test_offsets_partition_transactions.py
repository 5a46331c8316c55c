"""An offsets partition's transactional commits: pending per producer, visible at COMMIT by log position, dropped at ABORT,
and a marker that lands while the partition is loading applied once the load ends."""

from __future__ import annotations

from broker_nodes.coordinator.offsets_partition import OffsetsPartition
from log_formats.offset_commit_records import OffsetAndMetadata

ORDERS_0, ORDERS_1 = ("orders", 0), ("orders", 1)
PRODUCER, OTHER_PRODUCER = 7, 8


def value(offset: int) -> OffsetAndMetadata:
    return OffsetAndMetadata(offset, -1, "", 1_000)


def loaded() -> OffsetsPartition:
    partition = OffsetsPartition(0, 0, "topic-id")
    with partition.lock:
        partition.activate()
    return partition


def test_commit_makes_a_transactions_offsets_visible_unless_a_later_plain_commit_exists() -> None:
    partition = loaded()
    partition.add_transactional(PRODUCER, "g", [(ORDERS_0, value(5)), (ORDERS_1, value(5))], first_log_offset=10)
    partition.replay("g", ORDERS_1, value(2), log_offset=12)  # a plain commit after the transaction's records
    assert partition.committed("g") == {ORDERS_1: value(2)}
    assert partition.unstable_partitions("g") == {ORDERS_0, ORDERS_1}
    assert partition.transaction_completed(PRODUCER, commit=True) == 1
    assert partition.committed("g") == {ORDERS_0: value(5), ORDERS_1: value(2)}
    assert partition.unstable_partitions("g") == set() and not partition.has_transactional("g")


def test_abort_drops_only_that_producers_offsets() -> None:
    partition = loaded()
    partition.replay("g", ORDERS_0, value(1), log_offset=0)
    partition.add_transactional(PRODUCER, "g", [(ORDERS_0, value(5))], first_log_offset=1)
    partition.add_transactional(OTHER_PRODUCER, "g", [(ORDERS_1, value(9))], first_log_offset=2)
    assert partition.transaction_completed(PRODUCER, commit=False) == 0
    assert partition.committed("g") == {ORDERS_0: value(1)}
    assert partition.unstable_partitions("g") == {ORDERS_1}


def test_a_marker_during_loading_is_applied_when_the_load_ends() -> None:
    partition = OffsetsPartition(0, 0, "topic-id")
    partition.add_transactional(PRODUCER, "g", [(ORDERS_0, value(5))], first_log_offset=3)  # replayed from the log
    assert partition.transaction_completed(PRODUCER, commit=True) == 0  # its marker came after the end the load reads to
    assert partition.committed("g") == {}
    with partition.lock:
        partition.activate()
    assert partition.committed("g") == {ORDERS_0: value(5)}


def test_a_transactions_key_is_not_expired() -> None:
    partition = loaded()
    partition.replay("g", ORDERS_0, value(1), log_offset=0)
    partition.replay("g", ORDERS_1, value(1), log_offset=1)
    partition.add_transactional(PRODUCER, "g", [(ORDERS_0, value(5))], first_log_offset=2)
    with partition.lock:
        assert partition.expired(now_ms=100_000, retention_ms=10) == [("g", ORDERS_1)]

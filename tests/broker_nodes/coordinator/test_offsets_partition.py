"""The per-leadership cache of one offsets partition: log order wins, pending commits never expire."""

from broker_nodes.coordinator.offsets_partition import OffsetsPartition
from log_formats.offset_commit_records import OffsetAndMetadata

ORDERS_0 = ("tn-a~orders", 0)


def value(offset: int, timestamp: int = 1_000) -> OffsetAndMetadata:
    return OffsetAndMetadata(offset, -1, "", timestamp)


def test_replay_applies_records_in_log_order_and_tombstones_remove() -> None:
    state = OffsetsPartition(0, 1, "topic-id")
    state.replay("g", ORDERS_0, value(5), log_offset=0)
    state.replay("g", ORDERS_0, value(7), log_offset=1)
    assert state.committed("g") == {ORDERS_0: value(7)}
    state.replay("g", ORDERS_0, None, log_offset=2)
    assert state.committed("g") == {}


def test_commits_completing_out_of_order_keep_the_one_later_in_the_log() -> None:
    state = OffsetsPartition(0, 1, "topic-id")
    with state.lock:
        state.begin_commit("g", [ORDERS_0])  # appended at log offset 10
    with state.lock:
        state.begin_commit("g", [ORDERS_0])  # appended at log offset 11
    state.complete_commit("g", [(ORDERS_0, value(11))], 11, stored=True)
    state.complete_commit("g", [(ORDERS_0, value(10))], 10, stored=True)
    assert state.committed("g") == {ORDERS_0: value(11)}


def test_commit_that_did_not_reach_the_replicas_leaves_the_previous_offset() -> None:
    state = OffsetsPartition(0, 1, "topic-id")
    state.replay("g", ORDERS_0, value(3), log_offset=0)
    with state.lock:
        state.begin_commit("g", [ORDERS_0])
    state.complete_commit("g", [(ORDERS_0, value(9))], 1, stored=False)
    assert state.committed("g") == {ORDERS_0: value(3)}


def test_expiry_skips_keys_with_a_pending_commit_until_it_completes() -> None:
    state = OffsetsPartition(0, 1, "topic-id")
    state.replay("old", ORDERS_0, value(1, timestamp=100), log_offset=0)
    state.replay("busy", ORDERS_0, value(2, timestamp=100), log_offset=1)
    with state.lock:
        state.begin_commit("busy", [ORDERS_0])
        assert state.expired(now_ms=1_500, retention_ms=1_000) == [("old", ORDERS_0)]
        state.remove([("old", ORDERS_0)])
    assert state.committed("old") == {}
    state.complete_commit("busy", [(ORDERS_0, value(3, timestamp=100))], 2, stored=True)
    with state.lock:
        assert state.expired(now_ms=1_500, retention_ms=1_000) == [("busy", ORDERS_0)]


def test_a_new_leadership_starts_inactive_until_activated() -> None:
    state = OffsetsPartition(3, 4, "topic-id")
    assert not state.active
    with state.lock:
        state.activate()
    assert state.active

"""The evaluator's pure parts: transaction markers over __consumer_offsets records, the windows
and rings of the book, the trends beyond Burrow, and the state that survives a restart."""

from __future__ import annotations

import pytest

from log_formats.offset_commit_records import OffsetAndMetadata, OffsetCommitKey, encode_offset_commit_key, encode_offset_commit_value
from spark_pipelines import lag_trends
from spark_pipelines.lag_book import BookSettings, LagBook, PartitionFacts, roll_up
from spark_pipelines.lag_offsets_log import Commit, InvalidReplicaStateError, OffsetsLogReplica

TENANT = "tn-alpha"
PARTITION = (TENANT, "orders", 0)
KEY = (TENANT, "billing", "orders", 0)


def record(group: str, offset: int | None, timestamp_ms: int = 1_000, topic: str = "orders") -> tuple[bytes, bytes | None]:
    key = encode_offset_commit_key(OffsetCommitKey(group, topic, 0))
    value = None if offset is None else encode_offset_commit_value(OffsetAndMetadata(offset, -1, "", timestamp_ms))
    return key, value


def test_transactional_commits_count_only_after_their_commit_marker_and_never_after_abort() -> None:
    replica = OffsetsLogReplica()
    assert replica.record(0, 10, *record(f"{TENANT}~billing", 5), producer_id=7, transactional=True) == []
    plain = replica.record(0, 11, *record("tn-beta~other", 3), producer_id=-1, transactional=False)
    assert [commit.key for commit in plain] == [("tn-beta", "other", "orders", 0)]  # another tenant is not held back
    assert replica.pending_count() == 1
    committed = replica.marker(0, 7, commit=True)
    assert committed == [Commit(KEY, 5, 1_000, 10)]
    replica.record(0, 20, *record(f"{TENANT}~billing", 9), producer_id=8, transactional=True)
    assert replica.marker(0, 8, commit=False) == [] and replica.pending_count() == 0
    assert replica.marker(1, 7, commit=True) == []  # a marker of another partition ends nothing here


def test_pending_commits_survive_a_restart_and_bad_documents_are_refused() -> None:
    replica = OffsetsLogReplica()
    replica.record(3, 40, *record(f"{TENANT}~billing", 5), producer_id=7, transactional=True)
    restored = OffsetsLogReplica.from_document(replica.to_document())
    assert restored.marker(3, 7, commit=True) == [Commit(KEY, 5, 1_000, 40)]
    with pytest.raises(InvalidReplicaStateError, match="partition or producer id"):
        OffsetsLogReplica.from_document([{"producer_id": 1}])


def test_group_records_and_groups_without_a_tenant_are_counted_not_returned() -> None:
    replica = OffsetsLogReplica()
    assert replica.record(0, 1, *record("standalone", 5), producer_id=-1, transactional=False) == []
    assert replica.record(0, 2, b"\x00\x02group", b"", producer_id=-1, transactional=False) == []
    assert replica.record(0, 3, b"\x00", None, producer_id=-1, transactional=False) == []
    assert replica.counts["untenanted"] == 1 and replica.counts["group_record"] == 1 and replica.counts["undecodable"] == 1


def test_a_commit_before_the_first_end_offset_is_held_then_gets_the_pessimistic_lag() -> None:
    book = LagBook()
    book.apply(Commit(KEY, 4, 1_000, 0))
    assert book.evaluate(2_000, {}) == ([], [])  # nothing known yet: not shown as OK
    assert book.partitions() == {PARTITION}
    book.observe(PARTITION, PartitionFacts(end_offset=10, log_start_offset=0))
    (partition,), (group,) = book.evaluate(2_000, {(PARTITION, 4): 500})
    assert (partition.committed_offset, partition.offset_lag, partition.status, partition.time_lag_seconds) == (4, 6, "STOP", 1.5)
    assert (group.status, group.max_lag, group.total_lag, group.worst_topic, group.worst_status) == ("ERROR", 6, 6, "orders", "STOP")


def test_a_plain_commit_after_a_transactions_record_wins_over_its_later_commit_marker() -> None:
    book = LagBook()
    book.observe(PARTITION, PartitionFacts(20, 0))
    book.apply(Commit(KEY, 12, 2_000, 11))  # plain commit, record 11
    book.apply(Commit(KEY, 8, 1_000, 10))  # the transaction's commit (record 10), made visible by a later COMMIT
    (partition,), _ = book.evaluate(3_000, {})
    assert partition.committed_offset == 12


def test_rings_keep_window_size_observations_and_a_stalled_consumer_turns_stop() -> None:
    book = LagBook(BookSettings(window_size=3))
    for index in range(3):
        book.observe(PARTITION, PartitionFacts(10 + index, 0))
        book.apply(Commit(KEY, 10 + index, index * 1_000, index))  # caught up at every commit
    (partition,), _ = book.evaluate(2_500, {})
    assert partition.status == "OK" and partition.offset_lag == 0
    for index in range(3):  # produced on, no more commits: the ring moves past the last commit
        book.observe(PARTITION, PartitionFacts(20 + index, 0))
    (partition,), (group,) = book.evaluate(10_000, {(PARTITION, 12): 9_000})
    assert (partition.status, partition.offset_lag, group.status) == ("STOP", 10, "ERROR")
    assert partition.lag_rate is not None and partition.lag_rate > 0 and partition.catch_up_seconds is None


def test_tombstones_and_deleted_topics_forget_windows_and_changes_are_tracked_for_saving() -> None:
    book = LagBook()
    book.observe(PARTITION, PartitionFacts(10, 0))
    book.apply(Commit(KEY, 5, 1_000, 1))
    changed, forgotten = book.take_changed_windows()
    assert list(changed) == [KEY] and changed[KEY]["commits"] == [[5, 1_000, 1, 5]] and not forgotten
    restored = LagBook()
    restored.load_window(KEY, changed[KEY])
    restored.observe(PARTITION, PartitionFacts(10, 0))
    assert restored.evaluate(1_000, {})[0][0].committed_offset == 5
    book.apply(Commit(KEY, None, None, 2))
    assert book.take_changed_windows() == ({}, {KEY}) and book.window_count() == 0
    restored.forget_partition(PARTITION)
    assert restored.take_changed_windows()[1] == {KEY}
    with pytest.raises(ValueError, match="no commits"):
        restored.load_window(KEY, {"commits": []})


def test_trends_rate_catch_up_and_retention() -> None:
    assert lag_trends.lag_rate([(0, 100), (10_000, 50)]) == pytest.approx(-5.0)
    assert lag_trends.lag_rate([(0, 100)]) is None and lag_trends.lag_rate([(5, 1), (5, 2)]) is None
    assert lag_trends.catch_up_seconds(50, -5.0) == pytest.approx(10.0)
    assert lag_trends.catch_up_seconds(50, 0.0) is None and lag_trends.catch_up_seconds(0, 3.0) == 0.0
    seconds = lag_trends.retention_seconds(committed_offset=5, log_start_offset=0, next_record_timestamp_ms=1_000, retention_ms=60_000, now_ms=31_000)
    assert seconds == pytest.approx(30.0)
    assert lag_trends.retention_seconds(committed_offset=5, log_start_offset=9, next_record_timestamp_ms=None, retention_ms=None, now_ms=0) == 0.0
    assert lag_trends.retention_seconds(committed_offset=5, log_start_offset=0, next_record_timestamp_ms=1, retention_ms=-1, now_ms=0) is None
    status = lag_trends.retention_status
    assert status(offset_lag=5, committed_offset=5, log_start_offset=9, seconds_left=0.0, catch_up=None, horizon_seconds=60) == "LOST"
    assert status(offset_lag=5, committed_offset=5, log_start_offset=0, seconds_left=30.0, catch_up=1.0, horizon_seconds=60) == "AT_RISK"
    assert status(offset_lag=5, committed_offset=5, log_start_offset=0, seconds_left=600.0, catch_up=900.0, horizon_seconds=60) == "AT_RISK"
    assert status(offset_lag=5, committed_offset=5, log_start_offset=0, seconds_left=600.0, catch_up=100.0, horizon_seconds=60) == "OK"
    assert status(offset_lag=5, committed_offset=5, log_start_offset=0, seconds_left=600.0, catch_up=None, horizon_seconds=60) == "OK"


def test_retention_risk_reaches_the_partition_and_the_group() -> None:
    book = LagBook(BookSettings(risk_horizon_seconds=60))
    book.observe(PARTITION, PartitionFacts(100, 0, retention_ms=120_000))
    book.apply(Commit(KEY, 10, 50_000, 1))
    (partition,), (group,) = book.evaluate(100_000, {(PARTITION, 10): 20_000})
    assert partition.retention_seconds == pytest.approx(40.0) and partition.retention_status == "AT_RISK"
    assert group.retention_risk and group.retention_seconds == pytest.approx(40.0)
    assert roll_up(TENANT, "empty", []).status == "OK"

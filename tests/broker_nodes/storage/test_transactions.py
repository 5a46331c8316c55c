"""Transactions in the partition log: transactional batches, markers, LSO, .txnindex, read_committed reads."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from broker_nodes.storage.errors import (
    InvalidProducerEpochError,
    InvalidRecordError,
    InvalidTxnStateError,
    OutOfOrderSequenceError,
    TransactionCoordinatorFencedError,
)
from broker_nodes.storage.log import PartitionLog
from broker_nodes.storage.producer_state import ProducerStateManager
from broker_nodes.storage.transaction_index import AbortedTransaction
from log_formats.control_records import EndTransactionMarker, encode_marker_batch, read_marker_batch
from log_formats.log_files import TXN_INDEX_ENTRY, TXN_INDEX_SUFFIX, segment_file_name
from tests.broker_nodes.storage.conftest import START_MS, make_batch
from weir.read_committed import committed_batches
from weir.records import RecordBatchBuilder, batch_records_bytes, decode_records, iter_batch_positions, read_batch_header

LEADER_EPOCH = 3


def txn_batch(producer_id: int, sequence: int, values: list[bytes], *, epoch: int = 0, keys: list[bytes] | None = None) -> bytes:
    builder = RecordBatchBuilder(producer_id=producer_id, producer_epoch=epoch, base_sequence=sequence, transactional=True)
    for index, value in enumerate(values):
        builder.append(START_MS, keys[index] if keys else None, value)
    return builder.build()


def marker(log: PartitionLog, producer_id: int, *, commit: bool, epoch: int = 0, coordinator_epoch: int = 0) -> int:
    return log.append_marker(producer_id, epoch, commit=commit, coordinator_epoch=coordinator_epoch, leader_epoch=LEADER_EPOCH, now_ms=START_MS).first_offset


def committed_values(log: PartitionLog, start: int | None = None) -> list[bytes | None]:
    """Every value a read_committed consumer reads from ``start`` to the LSO, fetching in small pieces."""
    offset = log.log_start_offset if start is None else start
    values: list[bytes | None] = []
    for _ in range(10_000):
        info = log.read(offset, 200, read_committed=True)
        if not info.records:
            return values
        assert info.aborted_transactions is not None
        aborted = [(entry.producer_id, entry.first_offset) for entry in info.aborted_transactions]
        for position, header in committed_batches(info.records, aborted):
            records = decode_records(batch_records_bytes(info.records, position, header), header, offset)
            values.extend(value for _, _, _, value, _ in records)
        offset = max(header.next_offset for _, header in iter_batch_positions(info.records))
    raise AssertionError("the read did not reach the last stable offset")


def test_transactional_batches_hold_back_the_last_stable_offset_until_commit(open_log) -> None:
    log = open_log()
    log.append_as_leader(make_batch([b"plain"]), LEADER_EPOCH)
    first = log.append_as_leader(txn_batch(7, 0, [b"t1", b"t2"]), LEADER_EPOCH).first_offset
    log.append_as_leader(txn_batch(7, 2, [b"t3"]), LEADER_EPOCH)
    assert first == 1
    assert log.high_watermark == 4
    assert log.last_stable_offset == 1
    assert committed_values(log) == [b"plain"]
    commit_offset = marker(log, 7, commit=True)
    assert commit_offset == 4
    assert log.last_stable_offset == log.high_watermark == 5
    assert committed_values(log) == [b"plain", b"t1", b"t2", b"t3"]
    assert log.producer_state(7).current_txn_first_offset == -1


def test_two_interleaved_producers_move_the_lso_to_the_oldest_open_transaction(open_log) -> None:
    log = open_log()
    log.append_as_leader(txn_batch(1, 0, [b"a0"]), LEADER_EPOCH)  # 0
    log.append_as_leader(txn_batch(2, 0, [b"b0"]), LEADER_EPOCH)  # 1
    log.append_as_leader(txn_batch(1, 1, [b"a1"]), LEADER_EPOCH)  # 2
    assert log.last_stable_offset == 0
    marker(log, 1, commit=True)  # 3
    assert log.last_stable_offset == 1
    log.append_as_leader(txn_batch(1, 2, [b"a2"]), LEADER_EPOCH)  # 4: producer 1's next transaction
    marker(log, 2, commit=False)  # 5
    assert log.last_stable_offset == 4
    assert committed_values(log) == [b"a0", b"a1"]
    marker(log, 1, commit=True)  # 6
    assert log.last_stable_offset == 7
    assert committed_values(log) == [b"a0", b"a1", b"a2"]


def test_abort_is_indexed_and_returned_with_an_overlapping_read_committed_read(open_log) -> None:
    log = open_log()
    log.append_as_leader(txn_batch(9, 0, [b"doomed-1", b"doomed-2"]), LEADER_EPOCH)  # 0-1
    log.append_as_leader(make_batch([b"plain"]), LEADER_EPOCH)  # 2
    abort_offset = marker(log, 9, commit=False)  # 3
    entry = AbortedTransaction(producer_id=9, first_offset=0, last_offset=abort_offset, last_stable_offset=abort_offset + 1)
    assert log.segments[-1].txn_index.entries == (entry,)
    assert log.read(0, 1 << 20, read_committed=True).aborted_transactions == (entry,)
    assert log.read(2, 1 << 20, read_committed=True).aborted_transactions == (entry,)
    assert log.read(0, 1 << 20).aborted_transactions is None
    assert committed_values(log) == [b"plain"]
    after = log.append_as_leader(make_batch([b"later"]), LEADER_EPOCH).first_offset
    assert log.read(after, 1 << 20, read_committed=True).aborted_transactions == ()


def test_aborted_transactions_are_collected_across_segments(open_log) -> None:
    log = open_log({"segment.bytes": "1024"})
    aborted = []
    expected_values = []
    for round_number in range(6):
        producer = 100 + round_number
        transactional_value, plain_value = b"x%d" % round_number + b"." * 200, b"y%d" % round_number + b"." * 200
        first = log.append_as_leader(txn_batch(producer, 0, [transactional_value]), LEADER_EPOCH).first_offset
        log.append_as_leader(make_batch([plain_value]), LEADER_EPOCH)
        committed = round_number % 2 == 1
        last = marker(log, producer, commit=committed)
        expected_values += [transactional_value, plain_value] if committed else [plain_value]
        if not committed:
            aborted.append((producer, first, last))
    assert log.segment_count > 2
    found = log.aborted_transactions(0, log.log_end_offset)
    assert [(entry.producer_id, entry.first_offset, entry.last_offset) for entry in found] == aborted
    middle = aborted[1]
    assert [entry.producer_id for entry in log.aborted_transactions(middle[1], middle[2])] == [middle[0]]
    assert committed_values(log) == expected_values


def test_marker_rules_fence_old_epochs_and_old_coordinators(open_log) -> None:
    log = open_log()
    log.append_as_leader(txn_batch(5, 0, [b"v"], epoch=2), LEADER_EPOCH)
    with pytest.raises(InvalidProducerEpochError):
        marker(log, 5, commit=True, epoch=1)
    marker(log, 5, commit=True, epoch=2, coordinator_epoch=4)
    with pytest.raises(TransactionCoordinatorFencedError):
        marker(log, 5, commit=False, epoch=2, coordinator_epoch=3)
    # A marker for a producer without an open transaction is written, as Kafka does.
    end = log.log_end_offset
    assert marker(log, 5, commit=False, epoch=2, coordinator_epoch=4) == end
    assert marker(log, 77, commit=True) == end + 1
    assert log.last_stable_offset == log.log_end_offset


def test_producer_batches_are_checked_inside_transactions(open_log) -> None:
    log = open_log()
    with pytest.raises(InvalidRecordError, match="control batches"):
        log.append_as_leader(
            encode_marker_batch(1, 0, EndTransactionMarker(True, 0), timestamp_ms=START_MS, partition_leader_epoch=-1),
            LEADER_EPOCH,
        )
    with pytest.raises(InvalidRecordError, match="producer id"):
        log.append_as_leader(_transactional_without_producer(), LEADER_EPOCH)
    log.append_as_leader(txn_batch(4, 0, [b"a"], epoch=1), LEADER_EPOCH)
    with pytest.raises(OutOfOrderSequenceError):
        log.append_as_leader(txn_batch(4, 5, [b"b"], epoch=1), LEADER_EPOCH)
    with pytest.raises(InvalidProducerEpochError):
        log.append_as_leader(txn_batch(4, 1, [b"b"], epoch=0), LEADER_EPOCH)
    with pytest.raises(InvalidTxnStateError):
        log.append_as_leader(make_batch([b"c"], producer_id=4, producer_epoch=1, base_sequence=1), LEADER_EPOCH)
    assert log.append_as_leader(txn_batch(4, 0, [b"a"], epoch=1), LEADER_EPOCH).duplicate


def _transactional_without_producer() -> bytes:
    builder = RecordBatchBuilder(transactional=True)
    builder.append(START_MS, None, b"v")
    return builder.build()


def test_marker_batch_round_trips_through_the_control_record_codec() -> None:
    data = encode_marker_batch(42, 7, EndTransactionMarker(False, 11), timestamp_ms=START_MS, partition_leader_epoch=2)
    header = read_batch_header(data)
    assert header.is_control and header.is_transactional
    assert (header.producer_id, header.producer_epoch, header.base_sequence, header.records_count) == (42, 7, -1, 1)
    records = decode_records(batch_records_bytes(data, 0, header), header)
    _, _, key, value, _ = records[0]
    assert key == b"\x00\x00\x00\x00" and value == b"\x00\x00\x00\x00\x00\x0b"
    assert read_marker_batch(data, 0, header) == EndTransactionMarker(False, 11)


def _txn_index_path(log: PartitionLog, base_offset: int) -> Path:
    return log.directory / segment_file_name(base_offset, TXN_INDEX_SUFFIX)


def _write_aborted_history(log: PartitionLog) -> list[AbortedTransaction]:
    for round_number in range(8):
        producer = 10 + round_number % 3
        log.append_as_leader(txn_batch(producer, round_number // 3, [b"p" * 150]), LEADER_EPOCH)
        log.append_as_leader(make_batch([b"q" * 150]), LEADER_EPOCH)
        marker(log, producer, commit=round_number % 3 == 0)
    return list(log.aborted_transactions(0, log.log_end_offset))


@pytest.mark.parametrize("damage", ["delete", "torn"])
def test_txn_index_is_rebuilt_after_clean_shutdown_when_missing_or_torn(open_log, damage: str) -> None:
    log = open_log({"segment.bytes": "1024"})
    expected = _write_aborted_history(log)
    assert expected and log.segment_count > 2
    victim = next(segment for segment in log.segments if segment.txn_index.entries)
    path = victim.txn_index.path
    log.write_producer_snapshot()
    log.close()
    if damage == "delete":
        os.unlink(path)
    else:
        with open(path, "ab") as file:
            file.write(b"\x00" * (TXN_INDEX_ENTRY.size // 2))
    reopened = open_log({"segment.bytes": "1024"}, clean_shutdown=True)
    assert reopened.recovery.txn_index_rebuild_from == victim.base_offset
    assert list(reopened.aborted_transactions(0, reopened.log_end_offset)) == expected
    assert path.stat().st_size % TXN_INDEX_ENTRY.size == 0


def test_txn_index_is_rebuilt_by_recovery_after_an_unclean_shutdown(open_log) -> None:
    log = open_log({"segment.bytes": "1024"})
    expected = _write_aborted_history(log)
    last_segment = log.segments[-1]
    log.close()
    for segment in log.segments:
        segment.txn_index.path.write_bytes(b"")  # nothing was fsynced: the entries were lost
    reopened = open_log({"segment.bytes": "1024"}, clean_shutdown=False, recovery_point=0)
    assert reopened.recovery.recovered
    assert reopened.recovery.txn_index_rebuild_from == log.segments[0].base_offset
    assert list(reopened.aborted_transactions(0, reopened.log_end_offset)) == expected
    assert reopened.segments[-1].base_offset == last_segment.base_offset


@pytest.mark.parametrize("clean_shutdown", [True, False])
def test_restart_with_an_open_transaction_keeps_the_last_stable_offset(open_log, clean_shutdown: bool) -> None:
    log = open_log({"segment.bytes": "1024"})
    for number in range(10):
        log.append_as_leader(make_batch([b"before-%d" % number + b"." * 150]), LEADER_EPOCH)
    first = log.append_as_leader(txn_batch(3, 0, [b"open"]), LEADER_EPOCH).first_offset
    for number in range(10):
        log.append_as_leader(make_batch([b"after-%d" % number + b"." * 150]), LEADER_EPOCH)
    assert log.segments[-1].base_offset > first  # the open transaction starts in an older segment
    if clean_shutdown:
        log.write_producer_snapshot()
    log.close()
    reopened = open_log({"segment.bytes": "1024"}, clean_shutdown=clean_shutdown, recovery_point=0 if not clean_shutdown else log.log_end_offset)
    assert reopened.last_stable_offset == first
    assert reopened.producer_state(3).current_txn_first_offset == first
    marker(reopened, 3, commit=False)
    assert reopened.last_stable_offset == reopened.log_end_offset
    assert [(entry.producer_id, entry.first_offset) for entry in reopened.aborted_transactions(0, reopened.log_end_offset)] == [(3, first)]


def test_producer_snapshot_version_1_is_still_read(tmp_path: Path) -> None:
    import struct

    import crc32c

    body = struct.pack(">qhi", 8, 2, 1) + struct.pack(">iiqqq", 0, 4, 10, 14, START_MS)
    data = struct.pack(">hIi", 1, crc32c.crc32c(body), 1) + body
    (tmp_path / "00000000000000000015.snapshot").write_bytes(data)
    state = ProducerStateManager(tmp_path)
    assert state.load_latest_snapshot(100) == 15
    entry = state.entry(8)
    assert entry is not None and (entry.epoch, entry.last_sequence, entry.current_txn_first_offset, entry.coordinator_epoch) == (2, 4, -1, -1)
    assert state.first_unstable_offset() is None


def test_truncating_below_a_marker_reopens_the_transaction_and_drops_its_index_entry(open_log) -> None:
    log = open_log()
    first = log.append_as_leader(txn_batch(6, 0, [b"t"]), LEADER_EPOCH).first_offset
    abort_offset = marker(log, 6, commit=False)
    assert log.last_stable_offset == log.log_end_offset
    log.truncate_to(abort_offset)
    assert log.log_end_offset == abort_offset
    assert log.last_stable_offset == first
    assert log.aborted_transactions(0, 10) == ()
    assert _txn_index_path(log, 0).stat().st_size == 0
    marker(log, 6, commit=True)
    assert committed_values(log) == [b"t"]


def test_retention_deletes_a_segment_with_its_txn_index(open_log) -> None:
    log = open_log({"segment.bytes": "1024", "retention.ms": "1", "file.delete.delay.ms": "0"})
    _write_aborted_history(log)
    doomed = [segment.base_offset for segment in log.segments[:-1]]
    assert any(_txn_index_path(log, base).stat().st_size for base in doomed)
    log.apply_retention(START_MS + 10_000)
    for base in doomed:
        assert not _txn_index_path(log, base).exists()
    assert log.last_stable_offset >= log.log_start_offset
    assert all(entry.last_offset >= log.log_start_offset for entry in log.aborted_transactions(log.log_start_offset, log.log_end_offset))


def test_last_stable_offset_never_falls_below_the_log_start(open_log) -> None:
    log = open_log({"segment.bytes": "1024", "retention.ms": "1", "file.delete.delay.ms": "0"})
    first = log.append_as_leader(txn_batch(2, 0, [b"open" * 20]), LEADER_EPOCH).first_offset
    for _ in range(12):
        log.append_as_leader(make_batch([b"z" * 300]), LEADER_EPOCH)
    log.increase_log_start_offset(8)
    assert log.log_start_offset == 8 > first
    assert log.last_stable_offset == 8


def test_follower_replaying_the_leaders_bytes_has_the_same_transactions(open_log, tmp_path: Path) -> None:
    leader = open_log({"segment.bytes": "1024"})
    _write_aborted_history(leader)
    leader.append_as_leader(txn_batch(50, 0, [b"open"]), LEADER_EPOCH)
    follower = open_log({"segment.bytes": "1024"}, directory=tmp_path / "follower" / "orders-0")
    offset = 0
    while offset < leader.log_end_offset:
        data = leader.read(offset, 700, max_offset=leader.log_end_offset).records
        follower.append_as_follower(data)
        offset = follower.log_end_offset
    follower.update_high_watermark(leader.high_watermark)  # replication sends it with every fetch answer
    assert follower.last_stable_offset == leader.last_stable_offset
    assert follower.aborted_transactions(0, follower.log_end_offset) == leader.aborted_transactions(0, leader.log_end_offset)
    assert committed_values(follower) == committed_values(leader)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.integers(0, 3), st.sampled_from(["data", "commit", "abort", "plain"])), min_size=1, max_size=40))
def test_read_committed_never_returns_an_aborted_record_and_lso_is_the_first_open_offset(tmp_path_factory, steps) -> None:
    directory = tmp_path_factory.mktemp("prop") / "orders-0"
    from broker_nodes.storage.log_config import LogConfig

    log = PartitionLog.open(directory, LogConfig.from_overrides({"segment.bytes": "1024"}))
    try:
        sequences = dict.fromkeys(range(4), 0)
        open_first: dict[int, int] = {}
        pending: dict[int, list[bytes]] = {producer: [] for producer in range(4)}
        committed: list[bytes] = []
        aborted: set[bytes] = set()
        for step, (producer, action) in enumerate(steps):
            value = b"%d-%d" % (producer, step)
            if action == "data":
                offset = log.append_as_leader(txn_batch(producer, sequences[producer], [value]), LEADER_EPOCH).first_offset
                sequences[producer] += 1
                open_first.setdefault(producer, offset)
                pending[producer].append(value)
            elif action == "plain":
                log.append_as_leader(make_batch([value]), LEADER_EPOCH)
                committed.append(value)
            else:
                log.append_marker(producer, 0, commit=action == "commit", coordinator_epoch=0, leader_epoch=LEADER_EPOCH)
                if action == "commit":
                    committed.extend(pending[producer])
                else:
                    aborted.update(pending[producer])
                pending[producer] = []
                open_first.pop(producer, None)
            expected_lso = min(open_first.values(), default=log.high_watermark)
            assert log.last_stable_offset == expected_lso
        read = committed_values(log)
        assert not aborted & set(read)
        assert set(read) <= set(committed)
        log.close()
        reopened = PartitionLog.open(directory, LogConfig.from_overrides({"segment.bytes": "1024"}), clean_shutdown=False)
        assert reopened.last_stable_offset == min(open_first.values(), default=reopened.high_watermark)
        assert committed_values(reopened) == read
        reopened.close()
    finally:
        if not log.closed:
            log.close()


def test_compaction_keeps_markers_transactional_bits_and_committed_values_over_aborted_ones(open_log, clock) -> None:
    from broker_nodes.storage.cleaner import LogCleaner

    log = open_log({"cleanup.policy": "compact", "segment.bytes": "1024", "file.delete.delay.ms": "0"})
    filler = b"." * 100
    log.append_as_leader(txn_batch(1, 0, [b"committed" + filler, b"old" + filler], keys=[b"k", b"other"]), LEADER_EPOCH)
    marker(log, 1, commit=True)
    log.append_as_leader(txn_batch(2, 0, [b"aborted" + filler], keys=[b"k"]), LEADER_EPOCH)
    marker(log, 2, commit=False)
    for number in range(12):  # supersede "other" many times and roll a few segments
        log.append_as_leader(txn_batch(1, 2 + number, [b"new-%d" % number + filler], keys=[b"other"]), LEADER_EPOCH)
        marker(log, 1, commit=True)
    log.append_as_leader(make_batch([b"tail"], keys=[b"tail"]), LEADER_EPOCH)
    before = committed_values(log)
    markers_before = [header.base_offset for segment in log.segments for _, header in segment.iter_headers() if header.is_control]
    result = LogCleaner(clock).clean(log, clock.milliseconds(), force=True)
    assert result is not None and result.records_removed > 0
    headers = [header for segment in log.segments for _, header in segment.iter_headers()]
    assert [header.base_offset for header in headers if header.is_control] == markers_before
    assert all(header.is_transactional for header in headers if header.producer_id in (1, 2))
    after = committed_values(log)
    assert b"committed" + filler in after  # the aborted value of k superseded nothing
    assert b"aborted" + filler not in after
    assert len(after) < len(before) and [value for value in before if value in after] == after
    assert b"old" + filler not in after and b"tail" in after
    assert log.aborted_transactions(0, log.log_end_offset)[0].producer_id == 2


def test_recompressed_transactional_batches_stay_transactional(open_log) -> None:
    log = open_log({"compression.type": "gzip"})
    first = log.append_as_leader(txn_batch(21, 0, [b"squeeze" * 20, b"me" * 30]), LEADER_EPOCH).first_offset
    stored = [header for segment in log.segments for _, header in segment.iter_headers()]
    assert stored[0].is_transactional and stored[0].compression != 0
    assert log.last_stable_offset == first
    marker(log, 21, commit=False)
    assert committed_values(log) == []

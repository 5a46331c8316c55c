from __future__ import annotations

from pathlib import Path

import pytest

from broker_nodes.storage.errors import InvalidProducerEpochError, OutOfOrderSequenceError
from broker_nodes.storage.producer_state import ProducerStateManager
from tests.broker_nodes.storage.conftest import make_batch, read_all

PRODUCER = 7001


def idempotent(sequence: int, count: int = 2, epoch: int = 0) -> bytes:
    return make_batch([b"v%d" % number for number in range(count)], producer_id=PRODUCER, producer_epoch=epoch, base_sequence=sequence)


def test_retried_batch_returns_original_offsets_without_appending(open_log) -> None:
    log = open_log()
    first = log.append_as_leader(idempotent(0), 0)
    log.append_as_leader(idempotent(2), 0)
    retried = log.append_as_leader(idempotent(0), 0)
    assert retried.duplicate
    assert (retried.first_offset, retried.last_offset) == (first.first_offset, first.last_offset)
    assert log.log_end_offset == 4
    assert len(read_all(log)) == 4


def test_sequence_gap_is_out_of_order(open_log) -> None:
    log = open_log()
    log.append_as_leader(idempotent(0), 0)
    with pytest.raises(OutOfOrderSequenceError) as raised:
        log.append_as_leader(idempotent(5), 0)
    assert (raised.value.expected_sequence, raised.value.received_sequence) == (2, 5)
    assert log.log_end_offset == 2


def test_unknown_producer_must_start_at_sequence_zero(open_log) -> None:
    log = open_log()
    with pytest.raises(OutOfOrderSequenceError):
        log.append_as_leader(idempotent(3), 0)


def test_older_epoch_is_fenced(open_log) -> None:
    log = open_log()
    log.append_as_leader(idempotent(0, epoch=2), 0)
    with pytest.raises(InvalidProducerEpochError) as raised:
        log.append_as_leader(idempotent(2, epoch=1), 0)
    assert (raised.value.current_epoch, raised.value.received_epoch) == (2, 1)


def test_new_epoch_must_start_at_sequence_zero(open_log) -> None:
    log = open_log()
    log.append_as_leader(idempotent(0, epoch=0), 0)
    with pytest.raises(OutOfOrderSequenceError):
        log.append_as_leader(idempotent(2, epoch=1), 0)
    log.append_as_leader(idempotent(0, epoch=1), 0)
    assert log.producer_state(PRODUCER).epoch == 1


def test_only_the_last_five_batches_are_recognised_as_duplicates(open_log) -> None:
    log = open_log()
    for number in range(6):
        log.append_as_leader(idempotent(number * 2), 0)
    with pytest.raises(OutOfOrderSequenceError):
        log.append_as_leader(idempotent(0), 0)
    assert log.append_as_leader(idempotent(2), 0).duplicate


def test_state_survives_reopening_after_clean_shutdown(open_log) -> None:
    log = open_log({"segment.bytes": "1024"})
    for number in range(12):
        log.append_as_leader(idempotent(number * 2), 0)
    log.flush()
    log.write_producer_snapshot()
    log.close()
    reopened = open_log({"segment.bytes": "1024"})
    assert reopened.append_as_leader(idempotent(22), 0).duplicate
    assert reopened.append_as_leader(idempotent(24), 0).first_offset == 24


def test_state_is_rebuilt_from_the_log_without_a_final_snapshot(open_log) -> None:
    log = open_log({"segment.bytes": "1024"})
    for number in range(12):
        log.append_as_leader(idempotent(number * 2), 0)
    log.close()
    reopened = open_log({"segment.bytes": "1024"}, clean_shutdown=False)
    assert reopened.producer_state(PRODUCER).last_sequence == 23
    with pytest.raises(OutOfOrderSequenceError):
        reopened.append_as_leader(idempotent(30), 0)


def test_snapshot_keeps_the_last_two_files_and_rejects_corruption(tmp_path: Path) -> None:
    manager = ProducerStateManager(tmp_path)
    for offset in (10, 20, 30):
        manager.take_snapshot(offset)
    assert manager.snapshot_offsets() == [20, 30]
    (tmp_path / "00000000000000000030.snapshot").write_bytes(b"\x00\x01garbage")
    assert manager.load_latest_snapshot(100) == 20
    assert manager.snapshot_offsets() == [20]


def test_a_clean_shutdown_of_an_empty_log_writes_no_snapshot(open_log) -> None:
    log = open_log()
    log.flush()
    log.write_producer_snapshot()
    directory = log.directory
    log.close()
    assert not ProducerStateManager(directory).snapshot_offsets()
    reopened = open_log()
    assert reopened.active_producers() == []
    assert reopened.append_as_leader(idempotent(0), 0).first_offset == 0


def test_a_snapshot_already_at_the_log_end_is_not_written_again(open_log, monkeypatch: pytest.MonkeyPatch) -> None:
    log = open_log()
    log.append_as_leader(idempotent(0), 0)
    log.write_producer_snapshot()
    assert ProducerStateManager(log.directory).snapshot_offsets() == [2]
    taken: list[int] = []
    monkeypatch.setattr(ProducerStateManager, "take_snapshot", lambda manager, offset: taken.append(offset))
    log.write_producer_snapshot()  # nothing appended since: the snapshot on disk is the state at the log end
    assert taken == []
    log.append_as_leader(idempotent(2), 0)
    log.write_producer_snapshot()
    assert taken == [4]

"""weir-dump-log on a partition with transactions: markers as COMMIT/ABORT and the .txnindex checked."""

from __future__ import annotations

import io
from pathlib import Path

from broker_nodes.storage.log import PartitionLog
from broker_nodes.storage.log_config import LogConfig
from log_formats.dump_log import dump, files_to_dump
from log_formats.log_files import TXN_INDEX_ENTRY, TXN_INDEX_ENTRY_VERSION, TXN_INDEX_SUFFIX, segment_file_name
from weir.records import RecordBatchBuilder

START_MS = 1_700_000_000_000


def transactional(producer_id: int, value: bytes) -> bytes:
    builder = RecordBatchBuilder(producer_id=producer_id, producer_epoch=0, base_sequence=0, transactional=True)
    builder.append(START_MS, None, value)
    return builder.build()


def partition_with_transactions(tmp_path: Path) -> Path:
    directory = tmp_path / "orders-0"
    log = PartitionLog.open(directory, LogConfig.from_overrides({}))
    log.append_as_leader(transactional(7, b"doomed"), 0)  # 0
    log.append_as_leader(transactional(8, b"kept"), 0)  # 1
    log.append_marker(7, 0, commit=False, coordinator_epoch=3, leader_epoch=0, now_ms=START_MS)  # 2
    log.append_marker(8, 0, commit=True, coordinator_epoch=4, leader_epoch=0, now_ms=START_MS)  # 3
    log.close()
    return directory


def run(path: Path, **options) -> tuple[object, str]:
    out = io.StringIO()
    report = dump(path, out, **options)
    return report, out.getvalue()


def test_dump_prints_markers_and_the_aborted_transaction_index(tmp_path: Path) -> None:
    directory = partition_with_transactions(tmp_path)
    txn_index = directory / segment_file_name(0, TXN_INDEX_SUFFIX)
    assert files_to_dump(directory)[-1] == txn_index
    report, text = run(directory, print_data=True)
    assert report.ok, report.problems
    assert "isTransactional: true isControl: true" in text
    assert "endTxnMarker: ABORT coordinatorEpoch: 3" in text
    assert "endTxnMarker: COMMIT coordinatorEpoch: 4" in text
    assert f"Dumping {txn_index}" in text
    assert "version: 0 producerId: 7 firstOffset: 0 lastOffset: 2 lastStableOffset: 1" in text


def test_dump_reports_a_txn_index_entry_that_names_no_marker(tmp_path: Path) -> None:
    directory = partition_with_transactions(tmp_path)
    txn_index = directory / segment_file_name(0, TXN_INDEX_SUFFIX)
    with open(txn_index, "ab") as file:
        file.write(TXN_INDEX_ENTRY.pack(TXN_INDEX_ENTRY_VERSION, 9, 1, 1, 4))  # offset 1 is a data batch
        file.write(TXN_INDEX_ENTRY.pack(5, 9, 3, 0, 4))  # unknown version, first above last, last not increasing
    report, _ = run(txn_index)
    messages = [problem.message for problem in report.problems]
    assert any("no control batch of the log is at its last offset 1" in message for message in messages)
    assert any("last offset 1 is not above the previous entry's last offset 2" in message for message in messages)
    assert any("entry version 5 is not 0" in message for message in messages)
    assert any("first offset 3 is above the last offset 0" in message for message in messages)

"""The transactional Jepsen checks catch what they look for, on made-up histories and reads."""

from __future__ import annotations

from tests.support.transaction_history import (
    ABORT,
    ABORTED,
    COMMIT,
    COMMITTED,
    UNKNOWN,
    ReadRecord,
    TransactionKey,
    TransactionRecord,
    check_exactly_once,
    check_no_aborted_reads,
    check_no_lost_commits,
    check_no_torn_transactions,
    check_offsets,
    parse_value,
    record_value,
)


def transaction(number: int, intent: str, outcome: str, partitions: tuple[int, ...]) -> TransactionRecord:
    records = tuple((partition, record_value("p1", number, intent, index, len(partitions))) for index, partition in enumerate(partitions))
    return TransactionRecord(TransactionKey("p1", number), intent, outcome, records)


COMMITTED_ONE = transaction(1, COMMIT, COMMITTED, (0, 1))
ABORTED_TWO = transaction(2, ABORT, ABORTED, (0, 1))
COMMITTED_THREE = transaction(3, COMMIT, COMMITTED, (0, 0))
FAILED_FOUR = transaction(4, COMMIT, ABORTED, (1,))  # the commit failed and abort_transaction() returned
UNKNOWN_FIVE = transaction(5, COMMIT, UNKNOWN, (1,))
HISTORY = [COMMITTED_ONE, ABORTED_TWO, COMMITTED_THREE, FAILED_FOUR, UNKNOWN_FIVE]

# What the replicas store: partition -> offset -> value (offsets 2, 5, 8 and 1:2, 1:4 are markers).
STORED = {
    0: {0: COMMITTED_ONE.records[0][1], 1: ABORTED_TWO.records[0][1], 3: COMMITTED_THREE.records[0][1], 4: COMMITTED_THREE.records[1][1]},
    1: {0: COMMITTED_ONE.records[1][1], 1: ABORTED_TWO.records[1][1], 3: FAILED_FOUR.records[0][1], 5: UNKNOWN_FIVE.records[0][1]},
}
CORRECT_READS = [
    ReadRecord(0, 0, STORED[0][0]),
    ReadRecord(0, 3, STORED[0][3]),
    ReadRecord(0, 4, STORED[0][4]),
    ReadRecord(1, 0, STORED[1][0]),
    ReadRecord(1, 5, STORED[1][5]),  # an unknown outcome may be visible (whole)
]


def all_checks(reads: list[ReadRecord]) -> list[str]:
    return check_no_aborted_reads(reads, HISTORY) + check_no_torn_transactions(reads) + check_no_lost_commits(reads, HISTORY) + check_offsets(reads, STORED)


def test_values_name_their_transaction_intent_and_place() -> None:
    identity = parse_value(record_value("p-1:x", 12, COMMIT, 2, 5))
    assert (identity.key, identity.intent, identity.index, identity.count) == (TransactionKey("p-1:x", 12), COMMIT, 2, 5)


def test_a_correct_read_passes_every_check() -> None:
    assert all_checks(CORRECT_READS) == []
    # An unknown outcome may as well be invisible.
    assert all_checks(CORRECT_READS[:-1]) == []


def test_a_record_of_an_aborted_transaction_is_an_aborted_read() -> None:
    problems = check_no_aborted_reads([*CORRECT_READS, ReadRecord(0, 1, STORED[0][1])], HISTORY)
    assert len(problems) == 1 and "aborted read" in problems[0] and "p1:000002:abort" in problems[0]


def test_a_commit_that_failed_and_was_aborted_is_an_aborted_read_when_visible() -> None:
    problems = check_no_aborted_reads([ReadRecord(1, 3, STORED[1][3])], HISTORY)
    assert len(problems) == 1 and "outcome aborted" in problems[0]


def test_part_of_a_transaction_is_torn() -> None:
    problems = check_no_torn_transactions([read for read in CORRECT_READS if read.offset != 4 or read.partition != 0])
    assert problems == ["torn transaction p1#3: 1 of 2 records visible, missing indexes [1]"]


def test_a_record_read_twice_is_reported() -> None:
    problems = check_no_torn_transactions([*CORRECT_READS, CORRECT_READS[0]])
    assert len(problems) == 1 and problems[0].startswith("read twice: p1:000001:commit:0/2")


def test_a_committed_transaction_not_read_is_a_lost_commit() -> None:
    reads = [read for read in CORRECT_READS if parse_value(read.value).key.number != 3]
    problems = check_no_lost_commits(reads, HISTORY)
    assert len(problems) == 1 and problems[0].startswith("lost commit p1#3: 2 of 2 records not read")


def test_a_committed_record_read_from_another_partition_is_lost() -> None:
    moved = [ReadRecord(1, 0, read.value) if read.offset == 0 and read.partition == 0 else read for read in CORRECT_READS]
    assert any(problem.startswith("lost commit p1#1") for problem in check_no_lost_commits(moved, HISTORY))


def test_offsets_that_go_back_are_reported() -> None:
    reads = [CORRECT_READS[0], CORRECT_READS[2], CORRECT_READS[1], *CORRECT_READS[3:]]
    assert any("do not increase" in problem for problem in check_offsets(reads, STORED))


def test_a_read_that_is_not_the_stored_record_at_its_offset_is_reported() -> None:
    reads = [ReadRecord(0, 0, STORED[0][3]), *CORRECT_READS[1:]]
    assert any("the log holds" in problem for problem in check_offsets(reads, STORED))


def test_a_skipped_record_of_a_visible_transaction_is_a_gap() -> None:
    stored = {**STORED, 0: {**STORED[0], 6: record_value("p1", 1, COMMIT, 0, 2)}}
    problems = check_offsets(CORRECT_READS, stored)
    assert problems == ["partition 0: gap at 6: p1:000001:commit:0/2 skipped, yet its transaction p1#1 is visible"]


def test_skipping_markers_and_whole_aborted_ranges_is_no_gap() -> None:
    assert check_offsets(CORRECT_READS, STORED) == []


def test_exactly_once_holds_when_every_input_is_in_the_output_once() -> None:
    assert check_exactly_once([b"in-0", b"in-1"], [b"out:in-1", b"out:in-0"]) == []


def test_exactly_once_catches_a_duplicate_a_missing_and_a_foreign_output() -> None:
    assert check_exactly_once([b"in-0", b"in-1"], [b"out:in-0", b"out:in-0", b"out:in-1"]) == ["output out:in-0 read 2 times"]
    assert check_exactly_once([b"in-0", b"in-1"], [b"out:in-0"]) == ["1 inputs never in the output, e.g. ['out:in-1']"]
    assert check_exactly_once([b"in-0"], [b"out:in-0", b"out:in-9"]) == ["output out:in-9 comes from no input"]

"""bench.replication_stages: brokers' stage stamps lined up per record, the critical follower chosen, gaps counted."""

from __future__ import annotations

from pathlib import Path

from bench.replication_stages import (
    ACKS_DONE,
    ANSWER_ARRIVED,
    ANSWER_BUILT,
    ANSWER_RETURNED,
    APPEND,
    APPENDED,
    FETCH_ARRIVED,
    FETCH_DEQUEUED,
    FETCH_SENT,
    FETCH_WOKE,
    HIGH_WATERMARK,
    OTHER_FOLLOWER,
    STAGES,
    TOTAL,
    Stamp,
    breakdown,
    merge,
    read_stamps,
    report,
)

TOPIC = "tn-x~demo-round-trip-rf3-abc"


def record_stamps(offset: int, start: int, slow_follower: int, fast_follower: int) -> list[Stamp]:
    """One record's stamps, 1 us apart per stage; ``slow_follower``'s fetch reaches the leader 5 us after the other's."""
    stamps = [Stamp(APPEND, TOPIC, 0, offset, -1, start + 10_000)]
    for replica, delay in ((fast_follower, 0), (slow_follower, 5_000)):
        base = start + 10_000 + delay
        stamps += [
            Stamp(FETCH_WOKE, "", -1, -1, replica, base + 1_000),
            Stamp(ANSWER_BUILT, TOPIC, 0, offset, replica, base + 2_000),
            Stamp(ANSWER_RETURNED, TOPIC, 0, offset, replica, base + 3_000),
            Stamp(ANSWER_ARRIVED, TOPIC, 0, offset, replica, base + 4_000),
            Stamp(APPENDED, TOPIC, 0, offset + 1, replica, base + 5_000),
            Stamp(FETCH_SENT, TOPIC, 0, offset + 1, replica, base + 6_000),
            Stamp(FETCH_DEQUEUED, TOPIC, 0, offset + 1, replica, base + 7_000),
            Stamp(FETCH_ARRIVED, TOPIC, 0, offset + 1, replica, base + 8_000),
        ]
    stamps += [Stamp(HIGH_WATERMARK, TOPIC, 0, offset + 1, -1, start + 24_000), Stamp(ACKS_DONE, TOPIC, 0, offset + 1, -1, start + 25_000)]
    return stamps


def test_each_stage_is_measured_on_the_follower_the_high_watermark_waited_for() -> None:
    stamps = record_stamps(7, 1_000_000, slow_follower=3, fast_follower=2)
    result = breakdown(stamps, "demo-round-trip-rf3-abc", {7: (1_000_000, 1_000_000 + 27_000)})
    assert result.records == 1 and result.incomplete == 0
    # client -> append 10 us; then the slow follower's stages, each 1 us after a 5 us later wake-up.
    assert [result.stages[name][0] for name in STAGES] == [10_000, 6_000, *[1_000] * 9, 2_000]
    assert sum(result.stages[name][0] for name in STAGES) == result.stages[TOTAL][0] == 27_000
    assert result.stages[OTHER_FOLLOWER] == [8_000]  # the fast follower's fetch came back 8 us after the append


def test_a_record_missing_a_stamp_is_left_out_and_counted() -> None:
    stamps = [stamp for stamp in record_stamps(1, 0, 3, 2) if stamp.stage != ANSWER_ARRIVED or stamp.replica != 2]
    stamps += record_stamps(2, 100_000, 2, 3)
    result = breakdown(stamps, "rf3-abc", {1: (0, 30_000), 2: (100_000, 130_000)})
    assert (result.records, result.incomplete) == (1, 1)


def test_stamps_of_other_topics_are_ignored() -> None:
    result = breakdown(record_stamps(1, 0, 3, 2), "another-topic", {1: (0, 30_000)})
    assert (result.records, result.incomplete) == (0, 1)


def test_stamp_files_are_read_and_breakdowns_merge_into_one_report(tmp_path: Path) -> None:
    path = tmp_path / "stamps.123"
    lines = [f"{s.stage}\t{s.topic}\t{s.partition}\t{s.offset}\t{s.replica}\t{s.nanoseconds}" for s in record_stamps(4, 0, 2, 3)]
    path.write_text("\n".join([*lines, "a torn line"]) + "\n", encoding="utf-8")
    stamps = read_stamps([path])
    assert len(stamps) == len(lines)
    first = breakdown(stamps, "rf3-abc", {4: (0, 30_000)})
    merged = merge(first, first)
    assert merged.records == 2 and len(merged.stages[TOTAL]) == 2
    text = report(merged)
    assert "2 records" in text and any(line.startswith("follower append") for line in text.splitlines())

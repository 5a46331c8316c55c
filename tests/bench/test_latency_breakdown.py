"""The latency breakdown's arithmetic: stages per record from the timestamps of both processes and of the broker."""

from __future__ import annotations

from array import array
from pathlib import Path

import pytest

from bench.latency_breakdown import STAGES, RunTrace, cpu_per_record, format_table, read_broker_stamps, run, stage_samples
from log_formats import consumer_fetch_trace
from log_formats.replication_trace import APPEND, format_line

CLIENT_STAGES = [stage for stage in STAGES if not stage.startswith(" ") or "round trip" in stage or "two above" in stage]


def test_stages_are_the_differences_of_consecutive_timestamps_and_add_up_to_end_to_end() -> None:
    # Record 0 (fetched from offset 0): due 0, produce() returned 100, Produce started 300, answered 900; fetch answer 1000, queued 1200, consumed 1500.
    trace = RunTrace(
        topic="t",
        due=[0],
        returned=[100],
        sent={0: 300},
        acknowledged={0: 900},
        received=array("q", (0, 0, 250, -1, 1000, 1200, 1500)),
        producer_cpu_ns=50_000,
        broker_cpu_ns=70_000,
    )
    samples = stage_samples([trace])
    # The two hand-offs together (fetch answer -> consume() returned) come before end to end.
    assert [samples[stage] for stage in CLIENT_STAGES] == [[100], [200], [700], [600], [200], [300], [500], [1500]]
    # Without the broker's stamps its sub-stages have no samples and are left out of the table.
    assert all(not samples[stage] for stage in STAGES if stage not in CLIENT_STAGES)
    assert cpu_per_record([trace]) == (50.0, 0.0, 70.0)
    table = format_table(samples)
    assert "end to end" in table and "appended" not in table


def test_records_the_producer_has_no_send_time_for_are_left_out() -> None:
    trace = RunTrace(
        topic="t", due=[0, 10], returned=[1, 11], sent={1: 20}, acknowledged={1: 30}, received=array("q", (0, 0, 0, -1, 5, 6, 7, 1, 1, 0, -1, 40, 50, 60))
    )
    assert stage_samples([trace])["end to end"] == [50]


def test_broker_stamps_split_the_broker_stage(tmp_path: Path) -> None:
    # Offsets 0 and 1 in one batch appended at 400; the Fetch from 0 (sent at 320, after the answer before it
    # came at 310) arrived at 350 (parked), woke at 450, built its answer at 500, returned it at 550; the
    # consumer got it at 1000. Another topic's stamps are ignored.
    lines = [
        format_line(consumer_fetch_trace.FETCH_ARRIVED, "t", 0, 0, -1, 350),
        format_line(APPEND, "t", 0, 0, -1, 400),
        format_line(APPEND, "other", 0, 0, -1, 1),
        format_line(consumer_fetch_trace.FETCH_WOKE, "t", 0, 0, -1, 450),
        format_line(consumer_fetch_trace.ANSWER_BUILT, "t", 0, 0, -1, 500),
        format_line(consumer_fetch_trace.ANSWER_RETURNED, "t", 0, 0, -1, 550),
    ]
    path = tmp_path / "trace.123"
    path.write_text("".join(lines), encoding="utf-8")
    trace = RunTrace(
        topic="t",
        due=[0, 0],
        returned=[100, 100],
        sent={0: 300, 1: 300},
        acknowledged={0: 900, 1: 900},
        received=array("q", (0, 0, 320, 310, 1000, 1200, 1500, 1, 0, 320, 310, 1000, 1200, 1500)),
    )
    samples = stage_samples([trace], read_broker_stamps([str(path)]))
    split = [samples[stage] for stage in STAGES if stage.startswith("  of it:") and stage not in CLIENT_STAGES]
    # Produce started -> appended, appended -> woke, woke -> built, built -> returned, returned -> at consumer: they add up to the broker stage.
    assert split == [[100, 100], [50, 50], [50, 50], [50, 50], [450, 450]]
    # The Fetch was parked when the batch was appended: the wake-up, not a wait for the next Fetch.
    assert [samples[stage] for stage in STAGES if stage.startswith("    ")] == [[50, 50], [], [], []]
    assert samples["broker (produce+append+fetch wake+answer)"] == [700, 700]
    assert "appended" in format_table(samples)


def test_a_record_appended_while_no_fetch_was_parked_waits_for_the_next_fetch(tmp_path: Path) -> None:
    # Offset 5 appended at 400; the answer before (from 4) reached the SDK at 380, which sent the Fetch from 5
    # at 430; it reached the broker at 500 and read at once; built at 520, returned at 530, at the consumer at 800.
    lines = [
        format_line(APPEND, "t", 0, 5, -1, 400),
        format_line(consumer_fetch_trace.FETCH_ARRIVED, "t", 0, 5, -1, 500),
        format_line(consumer_fetch_trace.ANSWER_BUILT, "t", 0, 5, -1, 520),
        format_line(consumer_fetch_trace.ANSWER_RETURNED, "t", 0, 5, -1, 530),
    ]
    path = tmp_path / "trace.7"
    path.write_text("".join(lines), encoding="utf-8")
    trace = RunTrace(
        topic="t",
        due=[0] * 6,
        returned=[100] * 6,
        sent={5: 300},
        acknowledged={5: 700},
        received=array("q", (5, 5, 430, 380, 800, 900, 950)),
    )
    samples = stage_samples([trace], read_broker_stamps([str(path)]))
    waits = [samples[stage] for stage in STAGES if stage.startswith("    ")]
    # Appended -> read 100, of it the SDK's turnaround 50 and the Fetch's way in 70 (they overlap the append).
    assert waits == [[], [100], [50], [70]]
    assert samples["broker (produce+append+fetch wake+answer)"] == [500]


def test_a_run_on_its_own_broker_splits_the_broker_stage_by_its_stamps() -> None:
    # A real broker process (traced), producer and receiving process; only the rows' presence is checked.
    report = run(bootstrap=None, rate=200, seconds=0.5, runs=1)
    assert "end to end" in report
    for stage in ("Produce started -> appended", "appended -> Fetch reads", "Fetch read -> outcomes built", "returned -> answer at consumer"):
        assert stage in report, report


def test_an_acks_all_run_on_three_brokers_it_starts_splits_the_leaders_stage() -> None:
    report = run(bootstrap=None, rate=200, seconds=0.5, runs=1, acks="all", replication_factor=3)
    assert "acks=all, replication factor 3" in report
    assert "broker" in report.splitlines()[-2] and "(the leader)" in report, report
    for stage in ("Produce started -> appended", "appended -> Fetch reads", "returned -> answer at consumer"):
        assert stage in report, report


def test_a_replication_factor_beyond_the_started_brokers_is_refused() -> None:
    with pytest.raises(ValueError, match="replication factor of 1 to 3"):
        run(bootstrap=None, rate=200, seconds=0.5, runs=1, replication_factor=4)

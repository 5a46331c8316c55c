"""The latency breakdown's arithmetic: stages per record from the timestamps of both processes."""

from __future__ import annotations

from array import array

from bench.latency_breakdown import STAGES, RunTrace, cpu_per_record, format_table, stage_samples


def test_stages_are_the_differences_of_consecutive_timestamps_and_add_up_to_end_to_end() -> None:
    # Record 0: due 0, produce() returned 100, Produce started 300, answered 900; fetch answer 1000, queued 1200, consumed 1500.
    trace = RunTrace(
        due=[0], returned=[100], sent={0: 300}, acknowledged={0: 900}, received=array("q", (0, 1000, 1200, 1500)), producer_cpu_ns=50_000, broker_cpu_ns=70_000
    )
    samples = stage_samples([trace])
    # The two hand-offs together (fetch answer -> consume() returned) come before end to end.
    assert [samples[stage] for stage in STAGES] == [[100], [200], [700], [600], [200], [300], [500], [1500]]
    assert cpu_per_record([trace]) == (50.0, 0.0, 70.0)
    assert "end to end" in format_table(samples)


def test_records_the_producer_has_no_send_time_for_are_left_out() -> None:
    trace = RunTrace(due=[0, 10], returned=[1, 11], sent={1: 20}, acknowledged={1: 30}, received=array("q", (0, 5, 6, 7, 1, 40, 50, 60)))
    assert stage_samples([trace])["end to end"] == [50]

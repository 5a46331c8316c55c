"""The lag job's saved state: the document round trip (through the writer's table too), what a
malformed document is told, and the job's options from the environment."""

from __future__ import annotations

import pytest

from spark_pipelines.jobs.lag import InvalidLagOptionError, LagOptions
from spark_pipelines.lag_state import InvalidLagStateError, LagState
from webapp.metering import writer

WINDOW_ROWS = [
    {
        "tenant_id": "tn-a1",
        "group": "billing",
        "topic": "orders",
        "partition": 1,
        "slot": 1,
        "committed_offset": 30,
        "commit_timestamp_ms": 2_000,
        "commit_order": 11,
        "lag_at_commit": None,
        "last_commit_ms": 2_500,
    },
    {
        "tenant_id": "tn-a1",
        "group": "billing",
        "topic": "orders",
        "partition": 1,
        "slot": 0,
        "committed_offset": 20,
        "commit_timestamp_ms": 1_000,
        "commit_order": 10,
        "lag_at_commit": 7,
        "last_commit_ms": 2_500,
    },
    {
        "tenant_id": "tn-b2",
        "group": "billing",
        "topic": "orders",
        "partition": 0,
        "slot": 0,
        "committed_offset": 3,
        "commit_timestamp_ms": 1_500,
        "commit_order": 4,
        "lag_at_commit": 5,
        "last_commit_ms": 1_500,
    },
]
END_OFFSET_ROWS = [
    {"tenant_id": "tn-a1", "topic": "orders", "partition": 1, "observed_at_ms": 60_000, "end_offset": 37},
    {"tenant_id": "tn-a1", "topic": "orders", "partition": 1, "observed_at_ms": 0, "end_offset": 27},
]
OFFSETS = {"__consumer_offsets": {"0": 12, "1": 5}}


def test_state_document_round_trips_windows_history_and_cursor() -> None:
    document = LagState.from_rows(OFFSETS, WINDOW_ROWS, END_OFFSET_ROWS).to_document()
    assert document == {
        "version": 1,
        "offsets": OFFSETS,
        "windows": [
            {
                "tenant_id": "tn-a1",
                "group": "billing",
                "topic": "orders",
                "partition": 1,
                "last_commit_ms": 2_500,
                "commits": [[20, 1_000, 10, 7], [30, 2_000, 11, None]],
            },
            {"tenant_id": "tn-b2", "group": "billing", "topic": "orders", "partition": 0, "last_commit_ms": 1_500, "commits": [[3, 1_500, 4, 5]]},
        ],
        "end_offsets": [{"tenant_id": "tn-a1", "topic": "orders", "partition": 1, "observed": [[0, 27], [60_000, 37]]}],
    }
    loaded = LagState.from_document(document, window_size=10)
    key = lambda row: (row["tenant_id"], row["partition"], row["slot"])  # noqa: E731
    assert sorted(loaded.windows, key=key) == sorted(WINDOW_ROWS, key=key)
    assert sorted(loaded.end_offsets, key=lambda row: row["observed_at_ms"]) == sorted(END_OFFSET_ROWS, key=lambda row: row["observed_at_ms"])
    assert loaded.offsets == OFFSETS


def test_loading_with_a_smaller_window_keeps_the_newest_commits_renumbered() -> None:
    document = LagState.from_rows(OFFSETS, WINDOW_ROWS, END_OFFSET_ROWS).to_document()
    loaded = LagState.from_document(document, window_size=1)
    assert [(row["tenant_id"], row["slot"], row["committed_offset"]) for row in loaded.windows] == [("tn-a1", 0, 30), ("tn-b2", 0, 3)]
    assert [row["end_offset"] for row in loaded.end_offsets] == [37]


def test_first_run_starts_empty() -> None:
    assert LagState.from_document({}, window_size=10) == LagState()


@pytest.mark.parametrize(
    "document, problem",
    [
        ({"version": 2}, "expected version 1"),
        ({"version": 1, "windows": {}}, "'windows' must be a list"),
        (
            {"version": 1, "windows": [{"tenant_id": "tn-a1", "group": "g", "topic": "t", "partition": 0, "last_commit_ms": 1, "commits": [[1, 2, 3]]}]},
            "is not [offset",
        ),
        ({"version": 1, "windows": [{"tenant_id": "", "group": "g", "topic": "t", "partition": 0, "last_commit_ms": 1, "commits": []}]}, "lacks a non-empty"),
        ({"version": 1, "end_offsets": [{"tenant_id": "tn-a1", "topic": "t", "partition": "0", "observed": []}]}, "a partition number must be an integer"),
        ({"version": 1, "offsets": {"__consumer_offsets": {"0": -1}}}, "offsets >= 0"),
    ],
)
def test_malformed_state_is_refused_naming_the_problem(document, problem) -> None:
    with pytest.raises(InvalidLagStateError, match="unusable") as raised:
        LagState.from_document(document, window_size=10)
    assert problem in raised.value.problem


@pytest.mark.django_db
def test_state_survives_the_writers_table() -> None:
    document = LagState.from_rows(OFFSETS, WINDOW_ROWS, END_OFFSET_ROWS).to_document()
    writer.save_state("lag", document)
    assert writer.load_state("lag") == document
    assert LagState.from_document(writer.load_state("lag"), window_size=10).to_document() == document


def test_options_come_from_the_environment_and_bad_values_name_the_variable() -> None:
    assert LagOptions.from_env({}) == LagOptions()
    options = LagOptions.from_env({"WEIR_LAG_WINDOW_SIZE": "15", "WEIR_LAG_MIN_DISTANCE_SECONDS": "1.5", "WEIR_LAG_RETENTION_RISK_FRACTION": "0.25"})
    assert (options.window_size, options.min_distance_ms, options.retention_risk_fraction) == (15, 1500, 0.25)
    with pytest.raises(InvalidLagOptionError, match="WEIR_LAG_WINDOW_SIZE='0'"):
        LagOptions.from_env({"WEIR_LAG_WINDOW_SIZE": "0"})
    with pytest.raises(InvalidLagOptionError, match="WEIR_LAG_RETENTION_RISK_FRACTION"):
        LagOptions.from_env({"WEIR_LAG_RETENTION_RISK_FRACTION": "lots"})

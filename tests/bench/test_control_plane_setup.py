"""bench.control_plane without a stack: its PostgreSQL database per run and its verdicts."""

from __future__ import annotations

import shutil
import subprocess
from datetime import UTC

import pytest

from bench.control_plane import POSTGRES_ADMIN_URL, PostgresDatabase, RunResult, verdicts
from bench.measurements import LatencySummary


def database_exists(name: str) -> bool:
    completed = subprocess.run(
        ["psql", POSTGRES_ADMIN_URL, "-Atc", f"SELECT count(*) FROM pg_database WHERE datname = '{name}'"], capture_output=True, text=True, timeout=60
    )
    assert completed.returncode == 0, completed.stderr
    return completed.stdout.strip() == "1"


@pytest.mark.skipif(shutil.which("psql") is None, reason="needs psql and the machine's PostgreSQL")
def test_each_run_gets_a_fresh_postgres_database_dropped_afterwards() -> None:
    with PostgresDatabase() as first, PostgresDatabase() as second:
        assert first.name != second.name and first.name.startswith("weir_bench_")
        assert first.url.endswith("/" + first.name) and first.url.startswith("postgres://")
        assert database_exists(first.name) and database_exists(second.name)
    assert not database_exists(first.name) and not database_exists(second.name)


def test_verdicts_name_issue_3_targets_and_issue_19_goals() -> None:
    result = RunResult(readiness_seconds=[0.08, 0.5, 0.09], api_latency=LatencySummary.from_nanoseconds([40_000_000] * 99 + [60_000_000]))
    ready, api = verdicts([result])
    assert ready == "topic ready (median of run medians): 90 ms; issue 3 target < 1,000 ms: met; issue 19 goal <= 100 ms at 1,000 topics per tenant: met"
    assert api.startswith("API p99 (median of runs): ")
    assert api.endswith("issue 3 target < 100 ms at 50 requests/s: met; issue 19 goal <= 50 ms at 200 requests/s on PostgreSQL: met")


class _JobsApi:
    """Answers GET /jobs/<id> with fixed timestamps (job "gone" is unknown)."""

    def request(self, method: str, path: str, body: object = None) -> tuple[int, object]:
        if path == "/jobs/job-1":
            return 200, {"created_at": "2026-01-01T00:00:00.010000Z", "started_at": "2026-01-01T00:00:00.030000Z", "finished_at": "2026-01-01T00:00:00.100000Z"}
        return 404, {}


def test_readiness_is_split_into_the_jobs_stages_and_a_job_without_timestamps_is_left_out() -> None:
    from datetime import datetime

    from bench.control_plane import ReadinessStages, readiness_stages, stages_table

    posted = datetime(2026, 1, 1, tzinfo=UTC).timestamp()
    stages = readiness_stages(_JobsApi(), [("job-1", posted, posted + 0.150), ("gone", posted, posted + 1.0)])  # type: ignore[arg-type]

    assert [tuple(round(value * 1000, 3) for value in stage.values()) for stage in stages] == [(10.0, 20.0, 70.0, 50.0)]
    table = stages_table([RunResult(stages=stages), RunResult()])
    assert [column.header for column in table.columns][1:] == list(ReadinessStages.NAMES)
    assert table.row_count == 2


def test_the_cpu_of_a_process_tree_counts_its_children() -> None:
    import os
    import sys

    from bench.control_plane import process_tree_cpu_seconds

    busy = "import sys; sum(range(5_000_000)); print('done', flush=True); sys.stdin.read()"
    child = subprocess.Popen([sys.executable, "-c", busy], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "done"
        spent = process_tree_cpu_seconds(child.pid)
        assert spent > 0
        assert process_tree_cpu_seconds(os.getpid()) >= spent  # the child is below this process
    finally:
        child.kill()
        child.wait()


def test_a_run_under_other_conditions_than_issue_19s_is_not_judged_against_its_goals() -> None:
    result = RunResult(readiness_seconds=[0.05], api_latency=LatencySummary.from_nanoseconds([10_000_000] * 100))
    ready, api = verdicts([result], topics_per_tenant=20, rate=50, database="SQLite")
    assert ready.endswith("issue 19 goal <= 100 ms at 1,000 topics per tenant: not judged (20 topics per tenant here)")
    assert api.endswith("issue 19 goal <= 50 ms at 200 requests/s on PostgreSQL: not judged (50 requests/s on SQLite here)")


def test_the_readiness_cpu_table_gives_each_kinds_cpu_per_ready_topic() -> None:
    from bench.control_plane import readiness_cpu_table

    measured = RunResult(readiness_seconds=[0.1, 0.2], readiness_cpu_seconds={"brokers": 0.05, "web": 0.01})
    table = readiness_cpu_table([measured, RunResult()])

    assert [column.header for column in table.columns] == ["run", "brokers", "web"]
    assert list(table.columns[1].cells) == ["25.0", "-"]
    assert list(table.columns[2].cells) == ["5.0", "-"]

"""The launcher: a pipeline runs as a subprocess and its run is recorded RUNNING, then
SUCCEEDED with rows and result or FAILED with the reason and the stderr tail; a second
concurrent run is refused; runs left RUNNING by a dead launcher are failed later.

Small Python scripts stand in for the Spark jobs (``job_script``), printing the result line
or failing as a job would.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.db import IntegrityError, transaction
from django.utils import timezone

from webapp.metering import launcher
from webapp.metering.models import PipelineRun, RunStatus

pytestmark = pytest.mark.django_db

SUCCEEDING_JOB = """
import sys
print("reading __usage", file=sys.stderr)
print("some chatter on stdout")
print('WEIR-PIPELINE-RESULT {"rows": 7, "tenants": 2}')
"""
FAILING_JOB = """
import sys
print("starting", file=sys.stderr)
print("x" * 9000, file=sys.stderr)
print("Traceback: the DataSource could not reach any broker", file=sys.stderr)
sys.exit(3)
"""

JobScript = Callable[[str], list[str]]


def test_a_successful_job_is_recorded_with_rows_duration_and_result(job_script: JobScript) -> None:
    run = launcher.launch("usage", "schedule", command=job_script(SUCCEEDING_JOB))

    assert (run.pipeline, run.status, run.trigger, run.rows_written, run.error) == ("usage", RunStatus.SUCCEEDED, "schedule", 7, "")
    assert run.result == {"rows": 7, "tenants": 2}
    assert run.duration_seconds is not None and run.duration_seconds > 0
    assert run.finished_at is not None and run.finished_at >= run.started_at
    assert run.public_id.startswith("run-")


def test_a_failing_job_is_recorded_with_its_exit_status_and_stderr_tail(job_script: JobScript) -> None:
    run = launcher.launch("lag", command=job_script(FAILING_JOB))

    assert run.status == RunStatus.FAILED and run.rows_written is None
    assert run.error.startswith("exited with status 3\n")
    assert run.error.endswith("Traceback: the DataSource could not reach any broker")
    assert "starting" not in run.error  # only the tail is kept
    assert len(run.error) <= launcher.STDERR_TAIL_CHARS + 100


@pytest.mark.parametrize(
    "body,reason",
    [
        ("print('done')", "without printing a WEIR-PIPELINE-RESULT line"),
        ("print('WEIR-PIPELINE-RESULT {not json')", "its result line is not JSON"),
        ("print('WEIR-PIPELINE-RESULT {\"rows\": -1}')", "non-negative integer"),
    ],
)
def test_a_job_that_exits_zero_without_a_valid_result_line_fails(job_script: JobScript, body: str, reason: str) -> None:
    run = launcher.launch("usage", command=job_script(body))

    assert run.status == RunStatus.FAILED
    assert reason in run.error


def test_a_job_past_its_timeout_is_stopped_with_its_children(job_script: JobScript, tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    body = f"""
import subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
open({str(pid_file)!r}, "w").write(str(child.pid))
print("waiting", file=sys.stderr, flush=True)
time.sleep(120)
"""
    started = time.monotonic()
    run = launcher.launch("lag", command=job_script(body), timeout=2)

    assert time.monotonic() - started < 60
    assert run.status == RunStatus.FAILED
    assert run.error.startswith("timed out after 2 s and was stopped") and "waiting" in run.error
    child = int(pid_file.read_text())
    deadline = time.monotonic() + 10
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(child), "the job's own child process (Spark's JVM) outlived the timeout"


def test_a_command_that_cannot_start_fails_the_run(tmp_path: Path) -> None:
    run = launcher.launch("usage", command=[str(tmp_path / "no-such-program")])

    assert run.status == RunStatus.FAILED
    assert "the job could not start" in run.error


def test_a_second_run_of_a_running_pipeline_is_refused(job_script: JobScript) -> None:
    running = PipelineRun.objects.create(pipeline="usage", trigger="schedule", started_at=timezone.now() - timedelta(seconds=30))

    with pytest.raises(launcher.PipelineAlreadyRunning) as refused:
        launcher.launch("usage", command=job_script(SUCCEEDING_JOB))

    assert f"The usage pipeline is already running (run {running.public_id}, schedule, started 30 s ago" in refused.value.message
    assert PipelineRun.objects.count() == 1
    # Another pipeline is not blocked by it.
    assert launcher.launch("lag", command=job_script(SUCCEEDING_JOB)).status == RunStatus.SUCCEEDED


def test_the_database_refuses_two_running_runs_of_one_pipeline(db: None) -> None:
    PipelineRun.objects.create(pipeline="lag", trigger="schedule", started_at=timezone.now())

    with pytest.raises(IntegrityError), transaction.atomic():
        PipelineRun.objects.create(pipeline="lag", trigger="manual", started_at=timezone.now())
    PipelineRun.objects.create(pipeline="lag", trigger="manual", started_at=timezone.now(), status=RunStatus.FAILED)


def test_a_run_left_running_by_a_dead_launcher_is_failed_and_the_next_launch_proceeds(job_script: JobScript, settings: Any) -> None:
    settings.WEIR_PIPELINE_TIMEOUT_SECONDS = 100
    now = timezone.now()
    stale = PipelineRun.objects.create(pipeline="lag", trigger="schedule", started_at=now - timedelta(seconds=100 + launcher.STALE_GRACE_SECONDS + 1))
    recent = PipelineRun.objects.create(pipeline="usage", trigger="schedule", started_at=now - timedelta(seconds=100))

    run = launcher.launch("lag", command=job_script(SUCCEEDING_JOB))

    stale.refresh_from_db()
    recent.refresh_from_db()
    assert run.status == RunStatus.SUCCEEDED
    assert stale.status == RunStatus.FAILED and stale.error.startswith(launcher.STALE_RUN_REASON)
    assert recent.status == RunStatus.RUNNING  # within its timeout: its launcher may be alive
    assert launcher.fail_stale_runs(now=now + timedelta(seconds=launcher.STALE_GRACE_SECONDS + 1)) == [recent.public_id]


def test_runs_older_than_the_days_kept_are_pruned(job_script: JobScript, settings: Any) -> None:
    settings.WEIR_METERING_HISTORY_DAYS = 2
    old = PipelineRun.objects.create(pipeline="usage", trigger="schedule", started_at=timezone.now() - timedelta(days=3), status=RunStatus.SUCCEEDED)

    launcher.launch("usage", command=job_script(SUCCEEDING_JOB))

    assert not PipelineRun.objects.filter(pk=old.pk).exists()
    assert PipelineRun.objects.count() == 1


def test_unknown_pipelines_and_triggers_are_refused(db: None) -> None:
    with pytest.raises(launcher.UnknownPipeline, match="the pipelines are usage, lag"):
        launcher.launch("billing")
    with pytest.raises(ValueError, match="trigger"):
        launcher.launch("usage", "cron")
    assert not PipelineRun.objects.exists()


def test_lag_is_not_launched_as_a_job_and_says_what_evaluates_it(db: None) -> None:
    with pytest.raises(launcher.NotAJob, match="spark_pipelines.lag_monitor"):
        launcher.launch("lag")
    assert not PipelineRun.objects.exists()


def test_the_default_command_runs_the_job_module_with_the_settings_module() -> None:
    assert launcher.job_command("usage") == [sys.executable, "-m", "spark_pipelines.jobs.usage"]
    assert launcher.job_environment()["DJANGO_SETTINGS_MODULE"] == os.environ.get("DJANGO_SETTINGS_MODULE", "webapp.settings")
    assert (launcher.REPOSITORY_ROOT / "spark_pipelines").is_dir()


def test_the_job_runs_from_the_repository_root_with_the_environment(job_script: JobScript, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WEIR_TEST_MARKER", "passed-through")
    body = """
import json, os
print("WEIR-PIPELINE-RESULT " + json.dumps({"rows": 0, "cwd": os.getcwd(), "marker": os.environ.get("WEIR_TEST_MARKER"), "settings": os.environ.get("DJANGO_SETTINGS_MODULE")}))
"""
    run = launcher.launch("usage", command=job_script(body))

    assert run.result == {"rows": 0, "cwd": str(launcher.REPOSITORY_ROOT), "marker": "passed-through", "settings": os.environ["DJANGO_SETTINGS_MODULE"]}


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie (exited, not yet reaped by its parent) counts as gone.
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except (FileNotFoundError, IndexError):
        return False

"""``manage.py run_pipeline``, the Celery task, and the beat schedule of the pipelines."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from io import StringIO
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from tests.webapp.metering.test_launcher import FAILING_JOB, SUCCEEDING_JOB
from webapp import celery as celery_module
from webapp.metering import launcher, tasks
from webapp.metering.models import PipelineRun, RunStatus

pytestmark = pytest.mark.django_db

JobScript = Callable[[str], list[str]]


@pytest.fixture
def job(monkeypatch: pytest.MonkeyPatch, job_script: JobScript) -> Callable[[str], None]:
    """``job(body)``: every pipeline's command is now this script."""

    def use(body: str) -> None:
        command = job_script(body)
        monkeypatch.setattr(launcher, "job_command", lambda pipeline: command)

    return use


def test_run_pipeline_prints_the_outcome_of_a_manual_run(job: Callable[[str], None]) -> None:
    job(SUCCEEDING_JOB)
    output = StringIO()

    call_command("run_pipeline", "usage", stdout=output)

    run = PipelineRun.objects.get()
    assert (run.status, run.trigger) == (RunStatus.SUCCEEDED, "manual")
    assert output.getvalue().startswith(f"usage {run.public_id} SUCCEEDED in ")
    assert output.getvalue().rstrip().endswith(" s, 7 rows written")


def test_run_pipeline_fails_with_the_jobs_error(job: Callable[[str], None]) -> None:
    job(FAILING_JOB)
    output = StringIO()

    with pytest.raises(CommandError, match="the lag pipeline failed: exited with status 3") as failed:
        call_command("run_pipeline", "lag", stdout=output)

    assert "could not reach any broker" in str(failed.value)
    assert " FAILED in " in output.getvalue()


def test_run_pipeline_refuses_while_the_pipeline_runs(job: Callable[[str], None]) -> None:
    job(SUCCEEDING_JOB)
    PipelineRun.objects.create(pipeline="lag", trigger="schedule", started_at=timezone.now())

    with pytest.raises(CommandError, match="The lag pipeline is already running"):
        call_command("run_pipeline", "lag")
    with pytest.raises(CommandError, match="--timeout must be a positive"):
        call_command("run_pipeline", "usage", "--timeout", "0")
    with pytest.raises(CommandError, match="invalid choice"):
        call_command("run_pipeline", "billing")


def test_the_task_runs_a_scheduled_run_and_skips_while_one_runs(job: Callable[[str], None]) -> None:
    job(SUCCEEDING_JOB)

    done = tasks.run_pipeline("usage")
    PipelineRun.objects.create(pipeline="lag", trigger="manual", started_at=timezone.now() - timedelta(seconds=5))
    skipped = tasks.run_pipeline("lag")

    run = PipelineRun.objects.get(pipeline="usage")
    assert done == f"usage {run.public_id} SUCCEEDED" and run.trigger == "schedule"
    assert skipped.startswith("skipped: The lag pipeline is already running")


def test_a_queued_lag_run_is_skipped_saying_why(db: None) -> None:
    assert tasks.run_pipeline("lag").startswith("skipped: The lag pipeline is not launched as a job")
    with pytest.raises(CommandError, match="spark_pipelines.lag_monitor"):
        call_command("run_pipeline", "lag")


def test_beat_runs_usage_at_its_interval_and_never_the_lag_job() -> None:
    celery_module.app.finalize(auto=True)  # as worker and beat do at start: on_after_finalize runs
    schedule = celery_module.app.conf.beat_schedule

    usage = schedule["run the usage pipeline"]
    assert (usage["task"], usage["args"], usage["schedule"], usage["options"]["expires"]) == ("webapp.metering.tasks.run_pipeline", ("usage",), 3600, 3600)
    assert "run the lag pipeline" not in schedule  # the lag evaluator runs continuously (spark_pipelines.lag_monitor)
    assert "webapp.metering.tasks.run_pipeline" in celery_module.app.tasks


class RecordingSender:
    def __init__(self) -> None:
        self.added: list[tuple[float, Any, str]] = []

    def signature(self, name: str, **options: Any) -> tuple[str, dict[str, Any]]:
        return (name, options)

    def add_periodic_task(self, interval: float, signature: Any, name: str) -> None:
        self.added.append((interval, signature, name))


def test_beat_schedule_follows_the_settings(settings: Any) -> None:
    settings.WEIR_USAGE_PIPELINE_INTERVAL_SECONDS = 600
    configured = RecordingSender()
    celery_module.schedule_pipelines(configured)  # type: ignore[arg-type]
    settings.WEIR_PIPELINES_ENABLED = False
    disabled = RecordingSender()
    celery_module.schedule_pipelines(disabled)  # type: ignore[arg-type]

    assert [(interval, signature[1]["args"], name) for interval, signature, name in configured.added] == [
        (600, ("usage",), "run the usage pipeline"),
    ]
    assert disabled.added == []

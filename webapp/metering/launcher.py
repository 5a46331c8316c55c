"""Runs one pipeline as a subprocess and records the run as a :class:`PipelineRun`.

A pipeline runs as ``python -m spark_pipelines.jobs.<pipeline>`` in its own process (and
process group), so that no JVM ever lives in a web or worker process, with this process's
environment plus ``DJANGO_SETTINGS_MODULE``, from the repository root. The job writes its
results itself (through :mod:`webapp.metering.writer`) and prints one final stdout line
``WEIR-PIPELINE-RESULT {"rows": N, ...}``.

A run's life: RUNNING (created before the process starts) -> SUCCEEDED (exit status 0 and a
valid result line: ``rows_written`` and ``result`` come from it) or FAILED (non-zero exit,
no or an invalid result line, timeout, or the process could not start: ``error`` says
which, followed by the tail of the job's stderr).

The job never outlives its launcher: it is started with :func:`server_runtime.lifeline.spawn` (the kernel
signals it when the launcher dies, and the launcher's guardian ends its process group, Spark's
JVM included, even after a ``kill -9``), and a SIGTERM to the launcher while the job runs (a
Celery worker stopping) stops the job's group and records the run FAILED before going on.

At most one run per pipeline is RUNNING: a partial unique index on the table refuses the
second one, whichever process launches it, and :func:`launch` raises
:class:`PipelineAlreadyRunning`. A launcher that dies (a killed worker) leaves its run
RUNNING; since a live launcher kills its job at the timeout, a run still RUNNING a minute
after its timeout has no launcher any more and the next launch of the pipeline marks it
FAILED (:func:`fail_stale_runs`) before starting its own.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import IO, Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from server_runtime.lifeline import signal_group, spawn
from webapp.fleet import facade as fleet_facade
from webapp.metering.models import Pipeline, PipelineRun, RunStatus, RunTrigger
from webapp.metering.writer import history_days

logger = logging.getLogger(__name__)

RESULT_PREFIX = "WEIR-PIPELINE-RESULT "
# The last characters of the job's stderr kept in a failed run's error.
STDERR_TAIL_CHARS = 4000
# Bytes of the end of stdout searched for the result line (a job prints it last).
STDOUT_TAIL_BYTES = 256 * 1024
# A run still RUNNING this long after its timeout was left by a launcher that died.
STALE_GRACE_SECONDS = 60.0
# After the timeout: SIGTERM to the job's process group, then SIGKILL after this long.
KILL_GRACE_SECONDS = 10.0
DEFAULT_TIMEOUT_SECONDS = 900.0
REPOSITORY_ROOT = Path(__file__).resolve().parents[2]
STALE_RUN_REASON = "the launcher stopped before the run finished (its worker died?)"

Clock = Callable[[], datetime]


class LaunchError(Exception):
    """A pipeline could not be launched; ``message`` is safe to show."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class LauncherStopped(BaseException):
    """The launcher got SIGTERM while its job ran (a Celery worker or ``run_pipeline`` stopping).
    A BaseException, like KeyboardInterrupt, so that no ``except Exception`` swallows the stop."""

    retriable = False

    def __init__(self, signal_number: int) -> None:
        super().__init__(f"the launcher received {_signal_name(signal_number)}")


class UnknownPipeline(LaunchError):
    def __init__(self, pipeline: str) -> None:
        super().__init__(f"Unknown pipeline {pipeline!r}; the pipelines are {', '.join(Pipeline.values)}.")
        self.pipeline = pipeline


class NotAJob(LaunchError):
    """The pipeline has no job to launch (lag is evaluated continuously by its own process)."""

    def __init__(self, pipeline: str) -> None:
        super().__init__(
            f"The {pipeline} pipeline is not launched as a job: consumer lag is evaluated continuously by "
            "`python -m spark_pipelines.lag_monitor` (make up starts it; deploy/ runs it as lag-monitor)."
        )
        self.pipeline = pipeline


class PipelineAlreadyRunning(LaunchError):
    """Another run of the pipeline is RUNNING; ``running`` is it (None if it ended meanwhile)."""

    def __init__(self, pipeline: str, running: PipelineRun | None, now: datetime) -> None:
        if running is not None:
            age = max(0.0, (now - running.started_at).total_seconds())
            detail = f"run {running.public_id}, {running.trigger}, started {age:.0f} s ago at {running.started_at.isoformat()}"
        else:
            detail = "a run that was just ending"
        super().__init__(
            f"The {pipeline} pipeline is already running ({detail}); this launch is refused. "
            f"A run left RUNNING by a launcher that died is marked FAILED {stale_after_seconds():g} s after it started."
        )
        self.pipeline = pipeline
        self.running = running


@dataclass(frozen=True)
class JobOutcome:
    """How one job process ended: ``error`` is empty exactly when it succeeded."""

    rows: int | None
    result: dict[str, Any] | None
    error: str
    elapsed_seconds: float

    @property
    def succeeded(self) -> bool:
        return not self.error


def timeout_seconds() -> float:
    return float(getattr(settings, "WEIR_PIPELINE_TIMEOUT_SECONDS", DEFAULT_TIMEOUT_SECONDS))


def stale_after_seconds() -> float:
    return timeout_seconds() + STALE_GRACE_SECONDS


def job_command(pipeline: str) -> list[str]:
    """The command that runs ``pipeline``: its job module under this interpreter. Raises
    :class:`NotAJob` for lag, which has no job (``spark_pipelines.lag_monitor`` runs continuously)."""
    if pipeline == Pipeline.LAG:
        raise NotAJob(pipeline)
    return [sys.executable, "-m", f"spark_pipelines.jobs.{pipeline}"]


def job_environment() -> dict[str, str]:
    """This process's environment for the job, with the brokers to read from: WEIR_BOOTSTRAP_SERVERS
    when set (``make up`` sets it for its children), else the brokers registered in the control
    plane's database, so that ``manage.py run_pipeline`` beside a stack on other ports finds them."""
    environment = {**os.environ, "DJANGO_SETTINGS_MODULE": os.environ.get("DJANGO_SETTINGS_MODULE") or "webapp.settings"}
    if not environment.get("WEIR_BOOTSTRAP_SERVERS"):
        registered = fleet_facade.bootstrap_servers()
        if registered:
            environment["WEIR_BOOTSTRAP_SERVERS"] = registered
    return environment


def launch(
    pipeline: str,
    trigger: str = RunTrigger.MANUAL,
    *,
    command: Sequence[str] | None = None,
    timeout: float | None = None,
    clock: Clock = timezone.now,
) -> PipelineRun:
    """Run ``pipeline`` now and return its finished run (SUCCEEDED or FAILED).

    ``command`` replaces :func:`job_command` (tests run a small script); ``timeout`` replaces
    ``WEIR_PIPELINE_TIMEOUT_SECONDS``. Raises :class:`UnknownPipeline`, :class:`NotAJob` (lag), and
    :class:`PipelineAlreadyRunning` without starting anything when a run is RUNNING.
    """
    if pipeline not in Pipeline.values:
        raise UnknownPipeline(pipeline)
    if trigger not in RunTrigger.values:
        raise ValueError(f"trigger must be one of {', '.join(RunTrigger.values)}, not {trigger!r}")
    argv = list(command or job_command(pipeline))
    now = clock()
    fail_stale_runs(pipeline, now)
    run = _start(pipeline, trigger, now)
    logger.info("pipeline %s: run %s started (%s)", pipeline, run.public_id, trigger)
    try:
        outcome = run_job_process(argv, timeout if timeout is not None else timeout_seconds())
    except BaseException as error:
        # The launcher itself failed or is being stopped (worker shutdown): the job was
        # stopped; record why, then let the error go on.
        _finish(run, JobOutcome(rows=None, result=None, error=f"the launcher stopped: {error!r}", elapsed_seconds=0.0), clock())
        raise
    _finish(run, outcome, clock())
    prune_runs(clock())
    run.refresh_from_db()
    logger.info(
        "pipeline %s: run %s %s in %.1f s%s",
        pipeline,
        run.public_id,
        run.status,
        outcome.elapsed_seconds,
        f", {run.rows_written} rows" if run.rows_written is not None else "",
    )
    return run


def fail_stale_runs(pipeline: str | None = None, now: datetime | None = None) -> list[str]:
    """Mark FAILED the runs (of ``pipeline``, or of every pipeline) RUNNING for longer than
    the timeout plus a grace minute; returns their public ids."""
    now = now or timezone.now()
    cutoff = now - timedelta(seconds=stale_after_seconds())
    stale = PipelineRun.objects.filter(status=RunStatus.RUNNING, started_at__lt=cutoff)
    if pipeline is not None:
        stale = stale.filter(pipeline=pipeline)
    public_ids = list(stale.values_list("public_id", flat=True))
    if public_ids:
        PipelineRun.objects.filter(public_id__in=public_ids, status=RunStatus.RUNNING).update(
            status=RunStatus.FAILED, finished_at=now, error=f"{STALE_RUN_REASON}: still RUNNING {stale_after_seconds():g} s after it started"
        )
        logger.warning("pipeline runs left RUNNING by a dead launcher marked FAILED: %s", ", ".join(public_ids))
    return public_ids


def prune_runs(now: datetime) -> int:
    """Delete finished runs older than ``WEIR_METERING_HISTORY_DAYS``; returns how many."""
    cutoff = now - timedelta(days=history_days())
    deleted, _ = PipelineRun.objects.filter(started_at__lt=cutoff).exclude(status=RunStatus.RUNNING).delete()
    return deleted


def run_job_process(command: list[str], timeout: float) -> JobOutcome:
    """Run ``command`` in its own process group, wait at most ``timeout`` seconds, and read
    its result line and stderr tail. Never raises for the job's failures (only when this
    process is interrupted, after stopping the job)."""
    started = time.monotonic()
    with tempfile.TemporaryFile() as stdout, tempfile.TemporaryFile() as stderr:
        try:
            process = spawn(command, stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr, env=job_environment(), cwd=REPOSITORY_ROOT)
        except OSError as error:
            return JobOutcome(
                rows=None, result=None, error=f"the job could not start ({' '.join(command)}): {error}", elapsed_seconds=time.monotonic() - started
            )
        try:
            with _sigterm_stops_the_launcher():
                returncode = process.wait(timeout=timeout)
            timed_out = False
        except subprocess.TimeoutExpired:
            _stop(process)
            returncode = process.returncode
            timed_out = True
        except BaseException:
            _stop(process)
            raise
        elapsed = time.monotonic() - started
        return _outcome(returncode, timed_out, timeout, _read_tail(stdout, STDOUT_TAIL_BYTES), _read_tail(stderr, STDERR_TAIL_CHARS * 4), elapsed)


def parse_result_line(stdout: str) -> dict[str, Any] | None:
    """The JSON of the last ``WEIR-PIPELINE-RESULT`` line of ``stdout``; None without one.
    Raises ValueError when that line is not a JSON object with a non-negative integer ``rows``."""
    for line in reversed(stdout.splitlines()):
        if line.startswith(RESULT_PREFIX):
            try:
                result = json.loads(line[len(RESULT_PREFIX) :])
            except json.JSONDecodeError as error:
                raise ValueError(f"its result line is not JSON ({error})") from None
            rows = result.get("rows") if isinstance(result, dict) else None
            if not isinstance(rows, int) or isinstance(rows, bool) or rows < 0:
                raise ValueError('its result line has no non-negative integer "rows"')
            return result
    return None


def _outcome(returncode: int, timed_out: bool, timeout: float, stdout: str, stderr: str, elapsed: float) -> JobOutcome:
    tail = stderr[-STDERR_TAIL_CHARS:].strip()

    def failed(reason: str) -> JobOutcome:
        return JobOutcome(rows=None, result=None, error=f"{reason}\n{tail}" if tail else reason, elapsed_seconds=elapsed)

    if timed_out:
        return failed(f"timed out after {timeout:g} s and was stopped")
    if returncode != 0:
        if returncode < 0:
            return failed(f"killed by signal {_signal_name(-returncode)}")
        return failed(f"exited with status {returncode}")
    try:
        result = parse_result_line(stdout)
    except ValueError as error:
        return failed(f"the job exited 0 but {error}")
    if result is None:
        return failed(f"the job exited 0 without printing a {RESULT_PREFIX.strip()} line")
    return JobOutcome(rows=result["rows"], result=result, error="", elapsed_seconds=elapsed)


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return str(number)


@contextlib.contextmanager
def _sigterm_stops_the_launcher() -> Iterator[None]:
    """While the job runs, SIGTERM raises :class:`LauncherStopped` in the waiting thread, so that
    the job is stopped and the run recorded instead of both being cut off (Celery's pool children
    otherwise die of SIGTERM at once). Only the main thread can own a signal handler: elsewhere
    (a test's thread) nothing changes and the parent-death signal still ends the job."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop_launcher(signal_number: int, _frame: object) -> None:
        # Raising is all this handler does (as the default SIGINT handler does): no lock, no log.
        raise LauncherStopped(signal_number)

    previous = signal.signal(signal.SIGTERM, stop_launcher)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM the job's process group (Spark's JVM included), SIGKILL it if it lingers."""
    for sig, wait in ((signal.SIGTERM, KILL_GRACE_SECONDS), (signal.SIGKILL, None)):
        signal_group(process, sig)
        try:
            process.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def _read_tail(file: IO[bytes], size: int) -> str:
    file.seek(0, os.SEEK_END)
    length = file.tell()
    file.seek(max(0, length - size))
    return file.read().decode("utf-8", errors="replace")


def _start(pipeline: str, trigger: str, now: datetime) -> PipelineRun:
    for _ in range(2):
        try:
            with transaction.atomic():
                return PipelineRun.objects.create(pipeline=pipeline, trigger=trigger, started_at=now, status=RunStatus.RUNNING)
        except IntegrityError:
            running = PipelineRun.objects.filter(pipeline=pipeline, status=RunStatus.RUNNING).first()
            if running is not None:
                raise PipelineAlreadyRunning(pipeline, running, now) from None
            # The other run ended between our insert and this read: try once more.
    raise PipelineAlreadyRunning(pipeline, None, now)


def _finish(run: PipelineRun, outcome: JobOutcome, now: datetime) -> None:
    finished = PipelineRun.objects.filter(pk=run.pk, status=RunStatus.RUNNING).update(
        status=RunStatus.SUCCEEDED if outcome.succeeded else RunStatus.FAILED,
        finished_at=now,
        duration=timedelta(seconds=outcome.elapsed_seconds),
        rows_written=outcome.rows,
        result=outcome.result,
        error=outcome.error,
    )
    if not finished:
        logger.warning("pipeline run %s was no longer RUNNING when it ended (marked stale meanwhile); its outcome is dropped", run.public_id)

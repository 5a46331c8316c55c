"""``manage.py run_pipeline usage|lag``: one run of a pipeline now, recorded like the
scheduled ones, with its outcome printed; the exit status is non-zero unless it succeeded."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from webapp.metering import launcher
from webapp.metering.models import Pipeline, PipelineRun, RunStatus, RunTrigger


class Command(BaseCommand):
    help = "Run the usage or lag pipeline once now (as a subprocess), record the run, and print its outcome."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("pipeline", choices=Pipeline.values, help="Which pipeline to run.")
        parser.add_argument("--timeout", type=float, default=None, help="Seconds before the run is stopped (default: WEIR_PIPELINE_TIMEOUT_SECONDS).")

    def handle(self, *args: Any, **options: Any) -> None:
        timeout = options["timeout"]
        if timeout is not None and timeout <= 0:
            raise CommandError(f"--timeout must be a positive number of seconds, not {timeout:g}")
        try:
            run = launcher.launch(options["pipeline"], RunTrigger.MANUAL, timeout=timeout)
        except launcher.LaunchError as error:
            raise CommandError(error.message) from None
        self.stdout.write(describe(run))
        if run.status != RunStatus.SUCCEEDED:
            raise CommandError(f"the {run.pipeline} pipeline failed: {run.error}")


def describe(run: PipelineRun) -> str:
    """One line: ``usage run-… SUCCEEDED in 12.3 s, 42 rows written``."""
    seconds = run.duration_seconds
    took = f" in {seconds:.1f} s" if seconds is not None else ""
    rows = f", {run.rows_written} rows written" if run.rows_written is not None else ""
    return f"{run.pipeline} {run.public_id} {run.status}{took}{rows}"

"""What every job's ``main()`` does around its ``run(spark, settings)``.

The launcher (``webapp/metering/launcher.py``) runs ``python -m spark_pipelines.jobs.<name>``
and reads two things: the exit status (non-zero: FAILED, with the tail of stderr as the
error) and ONE final stdout line ``WEIR-PIPELINE-RESULT {"rows": N, ...}``. This module is
the only place that prints that line, so every job speaks the same protocol.
"""

from __future__ import annotations

import json
import sys
import traceback
from collections.abc import Callable, Mapping
from typing import Any, TextIO

from pyspark.sql import SparkSession

from spark_pipelines.session import spark_session
from spark_pipelines.settings import PipelineSettings

RESULT_PREFIX = "WEIR-PIPELINE-RESULT "  # what webapp.metering.launcher looks for

Run = Callable[[SparkSession, PipelineSettings], Mapping[str, Any]]
SessionFactory = Callable[[str], SparkSession]
# A job's stderr tail is its error in the run record: no progress bars in it.
JOB_SESSION_CONF = {"spark.ui.showConsoleProgress": "false"}


def job_session(app_name: str) -> SparkSession:
    """The session of a job process (:func:`spark_pipelines.session.spark_session` with :data:`JOB_SESSION_CONF`)."""
    return spark_session(app_name, extra_conf=JOB_SESSION_CONF)


def result_line(result: Mapping[str, Any]) -> str:
    """The final stdout line of a successful run; ``result`` must hold ``rows`` (an int)."""
    if not isinstance(result.get("rows"), int):
        raise ValueError(f"a job's result must hold 'rows' (an int), got {dict(result)!r}")
    return RESULT_PREFIX + json.dumps(dict(result), sort_keys=True, default=str)


def run_job(name: str, run: Run, *, session_factory: SessionFactory = job_session, stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    """Settings from the environment, a session (``session_factory(app_name)``), ``run``, the
    result line; the exit status.

    Any exception ends the run with status 1: the traceback, then one line naming the error,
    on stderr (the launcher keeps the tail). The session is stopped either way.
    """
    out = stdout or sys.stdout
    err = stderr or sys.stderr
    try:
        settings = PipelineSettings.from_env()
        spark = session_factory(f"weir-{name}-job")
        spark.sparkContext.setLogLevel("WARN")
        try:
            line = result_line(run(spark, settings))
        finally:
            spark.stop()
    except Exception as error:  # noqa: BLE001 - every failure must reach the launcher as status 1
        traceback.print_exc(file=err)
        print(f"{name} job failed: {type(error).__name__}: {error}", file=err, flush=True)
        return 1
    print(line, file=out, flush=True)
    return 0

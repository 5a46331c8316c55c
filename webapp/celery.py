"""The Celery application: configured from Django settings (``CELERY_*``), tasks discovered
in every installed app's ``tasks`` module, and the reconciler and the metering pipelines
scheduled on Celery beat.

Run a worker with ``python -m celery -A webapp worker`` and beat with ``... beat``.
"""

from __future__ import annotations

import logging.config
import os

from webapp.observability.facade import prepare_worker_metrics_directory

# A worker serving metrics (WEIR_WORKER_METRICS_PORT) needs prometheus_client's multiprocess
# directory chosen before anything imports prometheus_client: first thing, here.
prepare_worker_metrics_directory()

from celery import Celery, signals  # noqa: E402

from server_runtime.logging_setup import JSON, log_format  # noqa: E402
from server_runtime.private_files import make_new_files_private  # noqa: E402
from webapp.observability.facade import connect_task_signals  # noqa: E402
from webapp.request_ids import connect_celery_signals  # noqa: E402

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")

app = Celery("weir")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
# A task carries the request id of the code that queued it (webapp.request_ids).
connect_celery_signals()
# Task outcomes and durations; the worker's /metrics on WEIR_WORKER_METRICS_PORT.
connect_task_signals()


def keep_weir_logging(loglevel: object = None, **_: object) -> None:
    """Worker and beat with WEIR_LOG_FORMAT=json: Django's LOGGING (JSON lines, server_runtime.logging_setup)
    instead of Celery's own text format, at the ``--loglevel`` given."""
    from django.conf import settings

    logging.config.dictConfig(settings.LOGGING)
    if loglevel:
        logging.getLogger().setLevel(loglevel)  # type: ignore[arg-type]


def keep_new_files_private(**_: object) -> None:
    """A worker's or beat's files (queue messages, beat's schedule) are their owner's only
    (server_runtime.private_files). On these signals rather than at import, which tests and the web
    process do too."""
    make_new_files_private()


signals.celeryd_init.connect(keep_new_files_private, weak=False, dispatch_uid="weir-private-files-worker")
signals.beat_init.connect(keep_new_files_private, weak=False, dispatch_uid="weir-private-files-beat")


# Connected only for JSON: a receiver stops Celery from setting up its logging, and the text
# format stays Celery's own.
if log_format() == JSON:
    signals.setup_logging.connect(keep_weir_logging, weak=False)


@app.on_after_finalize.connect
def schedule_reconciler(sender: Celery, **_: object) -> None:
    """Every WEIR_RECONCILE_INTERVAL_SECONDS, compare the brokers with the desired state."""
    from django.conf import settings

    sender.add_periodic_task(
        settings.WEIR_RECONCILE_INTERVAL_SECONDS,
        sender.signature("webapp.provisioning.tasks.reconcile"),
        name="reconcile brokers with the desired state",
    )


@app.on_after_finalize.connect
def schedule_pipelines(sender: Celery, **_: object) -> None:
    """The usage pipeline every WEIR_USAGE_PIPELINE_INTERVAL_SECONDS, unless
    WEIR_PIPELINES_ENABLED is false (lag is evaluated continuously by its own process,
    ``python -m spark_pipelines.lag_monitor``, not scheduled). A
    message not picked up within its interval expires: a busy worker runs the next one
    instead of a backlog."""
    from django.conf import settings

    if not settings.WEIR_PIPELINES_ENABLED:
        return
    for pipeline, interval in (("usage", settings.WEIR_USAGE_PIPELINE_INTERVAL_SECONDS),):
        sender.add_periodic_task(
            interval,
            sender.signature("webapp.metering.tasks.run_pipeline", args=(pipeline,), options={"expires": interval}),
            name=f"run the {pipeline} pipeline",
        )

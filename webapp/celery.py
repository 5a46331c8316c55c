"""The Celery application: configured from Django settings (``CELERY_*``), tasks discovered
in every installed app's ``tasks`` module, and the reconciler scheduled on Celery beat.

Run a worker with ``python -m celery -A webapp worker`` and beat with ``... beat``.
"""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")

app = Celery("weir")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@app.on_after_finalize.connect
def schedule_reconciler(sender: Celery, **_: object) -> None:
    """Every WEIR_RECONCILE_INTERVAL_SECONDS, compare the brokers with the desired state."""
    from django.conf import settings

    sender.add_periodic_task(
        settings.WEIR_RECONCILE_INTERVAL_SECONDS,
        sender.signature("webapp.provisioning.tasks.reconcile"),
        name="reconcile brokers with the desired state",
    )

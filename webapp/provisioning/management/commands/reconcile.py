"""``manage.py reconcile``: one reconciliation round now, as Celery beat runs it periodically."""

from __future__ import annotations

from django.core.management.base import BaseCommand

from webapp.provisioning.reconciler import reconcile


class Command(BaseCommand):
    help = "Compare every broker with the desired state once, repair drift, and print what was done."

    def handle(self, *args: object, **options: object) -> None:
        report = reconcile()
        self.stdout.write(report.summary())
        if report.job is not None:
            self.stdout.write(f"recorded {report.job.public_id} ({report.job.state})")

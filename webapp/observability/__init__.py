"""Metrics and health of the control plane's processes (web, Celery worker).

* ``http_metrics``: a middleware counting every HTTP request by route name, method and status,
  with its latency (``weir_web_*``);
* ``database_metrics``: what the database says when Prometheus scrapes: pipeline runs and
  consumer-group lag statuses of the metering pipelines (``weir_pipeline_*``), beside the
  provisioning job table (``webapp.provisioning.metrics``);
* ``views``: ``GET /metrics`` (Prometheus text), ``GET /healthz`` (the process answers) and
  ``GET /readyz`` (the database and the Celery broker answer; 503 naming what failed), with
  the checks in ``readiness``;
* ``task_metrics``: Celery task outcomes and durations (``weir_celery_*``) and the worker's own
  ``/metrics`` endpoint on WEIR_WORKER_METRICS_PORT.

This is not a Django app: it has no models, and other apps do not import it.
"""

"""gunicorn's settings for the web process: ``gunicorn -c python:webapp.gunicorn_config webapp.wsgi``.

* ``graceful_timeout``: on SIGTERM gunicorn stops accepting connections and gives the requests
  in flight this long to finish before it kills its workers. It is below the 20 s a
  supervisor waits before SIGKILL (``deploy.processes.STOP_TIMEOUT_SECONDS``; Kubernetes'
  default grace period is 30 s), so that a stop is always the graceful one.
* With ``WEIR_LOG_FORMAT=json`` gunicorn's own loggers (``gunicorn.error``, ``gunicorn.access``)
  write JSON lines like the rest of the process (``server_runtime.logging_setup``), and the access line
  ends with the response's request id (``X-Request-ID``: the request's log lines carry the
  same one). In the text format gunicorn keeps its own lines.

Options given on the command line override these.
"""

from __future__ import annotations

from typing import Any

from server_runtime.logging_setup import JSON, log_format, logging_config

graceful_timeout = 15

# gunicorn's default access line, plus the request id the response carries.
JSON_ACCESS_LOG_FORMAT = '%(h)s %(l)s %(u)s %(t)s "%(r)s" %(s)s %(b)s "%(f)s" "%(a)s" request_id=%({x-request-id}o)s'


def json_logconfig() -> dict[str, Any]:
    """The logging dictionary gunicorn applies with WEIR_LOG_FORMAT=json: the root logger writes
    JSON lines and gunicorn's loggers send their records to it."""
    config = logging_config(text_format="%(message)s")
    config["loggers"] = {name: {"level": "INFO", "handlers": [], "propagate": True} for name in ("gunicorn.error", "gunicorn.access")}
    return config


if log_format() == JSON:
    logconfig_dict = json_logconfig()
    access_log_format = JSON_ACCESS_LOG_FORMAT

"""How every Weir process writes its log: text lines (the default) or one JSON object per line.

``WEIR_LOG_FORMAT=json`` turns every record into one line of JSON on stderr with the keys
``ts`` (ISO 8601, UTC, milliseconds), ``level``, ``logger``, ``message``, ``process``,
``thread`` (the thread's name), ``request_id`` when one is known (``server_runtime.request_ids``), the
``extra`` fields the call passed, and ``exc_info`` with the traceback of an exception.
``WEIR_LOG_FORMAT=text`` (or unset) keeps each process's own text line, unchanged: tests and
people read those.

One implementation for every process: the broker (``broker_nodes.server.main``) and ``make up``
apply :func:`configure_logging`; Django's ``LOGGING`` setting is :func:`logging_config` (web,
controller, Celery worker and beat, management commands). It lives in ``server_runtime``, a
package all of them may import, and needs only the standard library and python-json-logger.
"""

from __future__ import annotations

import logging
import logging.config
import os
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from pythonjsonlogger.json import JsonFormatter

from server_runtime.request_ids import current_request_id

LOG_FORMAT_VARIABLE = "WEIR_LOG_FORMAT"
TEXT = "text"
JSON = "json"
LOG_FORMATS = (TEXT, JSON)

# Record attributes that are not ``extra`` fields: the standard ones, plus those the JSON line
# already carries under its own keys, plus ones some libraries add for their own formatters.
_NOT_EXTRA = frozenset(
    {
        "args", "asctime", "created", "exc_info", "exc_text", "filename", "funcName", "levelname", "levelno",
        "lineno", "message", "module", "msecs", "msg", "name", "pathname", "process", "processName",
        "relativeCreated", "stack_info", "thread", "threadName", "taskName", "request_id", "color_message",
    }
)  # fmt: skip


class LogFormatError(ValueError):
    """``WEIR_LOG_FORMAT`` holds something other than ``text`` or ``json``."""

    def __init__(self, value: str) -> None:
        self.value = value
        super().__init__(f"{LOG_FORMAT_VARIABLE} must be one of {', '.join(LOG_FORMATS)}, not {value!r}")


def log_format(environment: Mapping[str, str] | None = None) -> str:
    """``text`` or ``json`` from ``WEIR_LOG_FORMAT`` (``os.environ`` by default); LogFormatError otherwise."""
    environment = os.environ if environment is None else environment
    value = environment.get(LOG_FORMAT_VARIABLE, "").strip().lower() or TEXT
    if value not in LOG_FORMATS:
        raise LogFormatError(environment[LOG_FORMAT_VARIABLE])
    return value


class RequestIdFilter(logging.Filter):
    """Give every record a ``request_id`` attribute: the id current in the thread that logs (or None)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "request_id", None) is None:
            record.request_id = current_request_id()
        return True


class JsonLogFormatter(JsonFormatter):
    """One JSON object per record with the keys of the module docstring, in that order."""

    def add_fields(self, log_data: dict[str, Any], record: logging.LogRecord, message_dict: dict[str, Any]) -> None:
        log_data["ts"] = datetime.fromtimestamp(record.created, tz=UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        log_data["level"] = record.levelname
        log_data["logger"] = record.name
        log_data["message"] = record.message
        log_data["process"] = record.process
        log_data["thread"] = record.threadName
        # The filter sets the attribute; a handler without it still gets the id of this thread.
        request_id = getattr(record, "request_id", None) or current_request_id()
        if request_id is not None:
            log_data["request_id"] = request_id
        for key, value in record.__dict__.items():
            if key not in _NOT_EXTRA and not key.startswith("_") and key not in log_data:
                log_data[key] = value
        # exc_info / stack_info, or the fields of a record logged as a dict.
        log_data.update(message_dict)


def logging_config(*, text_format: str, level: int | str = "INFO", environment: Mapping[str, str] | None = None) -> dict[str, Any]:
    """A ``logging.config.dictConfig`` dictionary: the root logger writes to stderr, as JSON when
    ``WEIR_LOG_FORMAT=json``, else as ``text_format`` (a ``%``-style format). Existing loggers
    stay enabled. Raises LogFormatError for a bad ``WEIR_LOG_FORMAT``."""
    if log_format(environment) == JSON:
        formatter: dict[str, Any] = {"()": f"{__name__}.JsonLogFormatter"}
    else:
        formatter = {"format": text_format}
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"plain": formatter},
        "filters": {"request_id": {"()": f"{__name__}.RequestIdFilter"}},
        "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain", "filters": ["request_id"]}},
        "root": {"handlers": ["console"], "level": level},
    }


def configure_logging(*, text_format: str, level: int | str = "INFO", environment: Mapping[str, str] | None = None) -> str:
    """Apply :func:`logging_config` to this process; returns the format used (``text`` or ``json``).

    Replaces the root logger's handlers, so it may be called again (a Celery worker re-applies
    it with its ``--loglevel``).
    """
    logging.config.dictConfig(logging_config(text_format=text_format, level=level, environment=environment))
    return log_format(environment)

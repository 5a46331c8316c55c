"""Request ids in the control plane: from the HTTP request to the Celery tasks it queues.

* :class:`RequestIdMiddleware` (first in ``MIDDLEWARE``) takes the ``X-Request-ID`` header
  when it is an acceptable id (``server_runtime.request_ids.accepted_request_id``), else makes a new
  uuid4 hex; it is current while the request is handled (every log line carries it, the
  provisioning job stores it, gRPC calls send it) and returned in the response header.
* :func:`connect_celery_signals` makes a task carry the id of the code that queued it:
  ``before_task_publish`` adds the message header ``weir_request_id``; in the worker
  ``task_prerun`` makes it current for the task (its log lines, the broker calls it makes)
  and ``task_postrun`` restores what was current before. A task queued without an id runs
  with the id current where it runs (an eager task: its caller's).

From there ``server_runtime.request_ids`` carries the id in gRPC metadata to brokers and the controller.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable
from typing import Any

from celery import signals
from django.http import HttpRequest, HttpResponse

from server_runtime.request_ids import accepted_request_id, current_request_id, new_request_id, request_id_scope, reset_request_id, set_request_id

REQUEST_ID_HEADER = "X-Request-ID"
# The Celery message header that carries the id from the code that queues a task to the task.
CELERY_HEADER = "weir_request_id"


class RequestIdMiddleware:
    """See the module docstring. ``request.request_id`` holds the id for views."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        request_id = accepted_request_id(request.headers.get(REQUEST_ID_HEADER)) or new_request_id()
        request.request_id = request_id  # type: ignore[attr-defined]
        with request_id_scope(request_id):
            response = self.get_response(request)
        response[REQUEST_ID_HEADER] = request_id
        return response


# Tokens of the ids made current by task_prerun, by task id, for task_postrun to restore.
# Both signals of a task run on the thread that runs the task.
_task_tokens: dict[str, contextvars.Token[str | None]] = {}


def add_request_id_header(headers: dict[str, Any] | None = None, **_: object) -> None:
    """``before_task_publish``: the current id goes into the message headers (protocol 2)."""
    request_id = current_request_id()
    if request_id is not None and headers is not None:
        headers.setdefault(CELERY_HEADER, request_id)


def enter_task(task_id: str | None = None, task: Any = None, **_: object) -> None:
    """``task_prerun``: make the message's id current while the task runs."""
    carried = accepted_request_id(getattr(getattr(task, "request", None), CELERY_HEADER, None))
    if task_id is not None:
        _task_tokens[task_id] = set_request_id(carried or current_request_id())


def leave_task(task_id: str | None = None, **_: object) -> None:
    """``task_postrun``: restore the id that was current before the task."""
    token = _task_tokens.pop(task_id, None) if task_id is not None else None
    if token is not None:
        reset_request_id(token)


def connect_celery_signals() -> None:
    """Connect the three handlers of the module docstring (Celery's signals are global to the
    process; connecting again is harmless)."""
    signals.before_task_publish.connect(add_request_id_header, weak=False, dispatch_uid="weir-request-id-publish")
    signals.task_prerun.connect(enter_task, weak=False, dispatch_uid="weir-request-id-prerun")
    signals.task_postrun.connect(leave_task, weak=False, dispatch_uid="weir-request-id-postrun")

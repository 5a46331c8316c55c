"""A WSGI application that answers what the worker sees of its metrics directory: gunicorn's
settings tested without Django."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from typing import Any


def application(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [os.environ.get("PROMETHEUS_MULTIPROC_DIR", "none").encode()]

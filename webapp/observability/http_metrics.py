"""Request metrics of the web process: ``weir_web_requests_total{route, method, status}`` and
``weir_web_request_duration_seconds{route, method}``.

The route is the URL pattern's name (``api:topic-detail``, ``dashboard:overview``), never the
path, so that ids in URLs cannot multiply the series; a request no pattern matched counts as
``unmatched``. Methods outside the usual ones count as ``other``.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from django.http import HttpRequest, HttpResponse
from prometheus_client import Counter, Histogram, disable_created_metrics

# No ``*_created`` series beside counters and histograms: they double the series for nothing read.
disable_created_metrics()

KNOWN_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
UNMATCHED_ROUTE = "unmatched"

REQUESTS = Counter("weir_web_requests", "HTTP requests answered by the web process, by route name, method and status code.", ["route", "method", "status"])
DURATION = Histogram(
    "weir_web_request_duration_seconds",
    "Time the web process took to answer an HTTP request, by route name and method.",
    ["route", "method"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0),
)


def route_name(request: HttpRequest) -> str:
    """The name of the URL pattern that matched (namespaced), its route when unnamed, else ``unmatched``."""
    match = getattr(request, "resolver_match", None)
    if match is None:
        return UNMATCHED_ROUTE
    return match.view_name or match.route or UNMATCHED_ROUTE


class RequestMetricsMiddleware:
    """Counts and times every request (place it first, so that the time covers every other middleware)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse], *, clock: Callable[[], float] = time.perf_counter) -> None:
        self.get_response = get_response
        self._clock = clock

    def __call__(self, request: HttpRequest) -> HttpResponse:
        started = self._clock()
        response = self.get_response(request)
        route = route_name(request)
        method = request.method if request.method in KNOWN_METHODS else "other"
        DURATION.labels(route, method).observe(self._clock() - started)
        REQUESTS.labels(route, method, str(response.status_code)).inc()
        return response

"""The request budget as Prometheus metrics (``queued.max.request.bytes``, ``server.request_budget``).

Read when Prometheus scrapes, like ``state``: nothing is updated on the request path beyond
the budget's own counters.

* ``weir_broker_request_budget_bytes`` against ``..._limit_bytes``: bytes of Broker requests
  in flight (parsed and being handled) and the most there may be;
* ``weir_broker_request_budget_waiting``: requests waiting for room now;
* ``weir_broker_request_budget_refused_total``: requests answered THROTTLING_QUOTA_EXCEEDED
  because no room came free in time (clients retry them).
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from broker_nodes.server.request_budget import RequestBudget


class RequestBudgetCollector(Collector):
    """Collects the metrics of the module docstring from ``budget``."""

    def __init__(self, budget: RequestBudget) -> None:
        self._budget = budget

    def collect(self) -> Iterator[GaugeMetricFamily | CounterMetricFamily]:
        state = self._budget.state()
        yield GaugeMetricFamily(
            "weir_broker_request_budget_bytes", "Bytes of Broker-service requests in flight (taken from queued.max.request.bytes).", value=state.in_use
        )
        yield GaugeMetricFamily(
            "weir_broker_request_budget_limit_bytes", "Most bytes of Broker-service requests in flight (queued.max.request.bytes).", value=state.limit
        )
        yield GaugeMetricFamily("weir_broker_request_budget_waiting", "Requests waiting for room in the request budget.", value=state.waiting)
        yield CounterMetricFamily(
            "weir_broker_request_budget_refused",
            "Requests refused (THROTTLING_QUOTA_EXCEEDED, retriable) for lack of room in the request budget.",
            value=state.refused,
        )

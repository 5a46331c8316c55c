"""Prometheus metrics of one broker, served as text at ``GET /metrics`` on ``metrics.port``.

Two kinds, kept apart:

* events, counted as they happen by the gRPC interceptor (``requests``): calls per service,
  method and status code with their latency, record bytes in and out, partition errors,
  throttle time;
* state, read when Prometheus scrapes (``state``): the partitions this broker leads that are
  under-replicated or under ``min.insync.replicas``, partitions it hosts without a leader,
  ISR shrinks and expansions, log sizes, free space of the data directory, readiness.

Every broker has its own :class:`prometheus_client.CollectorRegistry` (``endpoint``), so that
several brokers in one test process never share or collide in metrics. Labels never carry
topic or tenant names: their number is unbounded in a shared cluster, and per-tenant usage
is the metering pipeline's job. Metric names start with ``weir_broker_``.
"""

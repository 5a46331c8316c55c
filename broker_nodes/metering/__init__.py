"""Usage metering on brokers: per-window counters of client traffic and led partitions'
state, appended as ``weir.usage/1`` rows to the internal topic ``__usage``.

``counters`` (per-batch counting on the request path), ``windows`` (wall-clock alignment),
``partition_stats`` (led partitions), ``rows`` (window -> rows), ``backlog`` (unacknowledged
windows, on disk), ``sink`` (the SDK producer), ``emitter`` (the loop), ``metering`` (what the
broker calls). The schema and its guarantees: ``docs/usage-schema.md``.
"""

from broker_nodes.metering.metering import Metering

__all__ = ["Metering"]

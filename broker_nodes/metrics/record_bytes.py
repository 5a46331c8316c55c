"""The record bytes of the exchange a request thread is answering, noted by the handler that holds them.

Reading a bytes field of a protobuf message (upb) builds a new ``bytes`` object, a copy: the
request metrics (:mod:`broker_nodes.metrics.requests`) counting a ReplicaFetch answer's records
with ``len(partition.records)`` copied every megabyte answer once more only to measure it. A
handler that already holds the records it answers with notes their size here, and the metrics
interceptor takes the figure on the same thread, after the handler returned or yielded the
answer (gRPC's synchronous server runs both on the request's thread); without a note it falls
back to reading the message.
"""

from __future__ import annotations

import threading

_exchange = threading.local()


def note(size: int) -> None:
    """The handler of the current exchange answers (or received) ``size`` record bytes."""
    _exchange.size = size


def take() -> int | None:
    """The size noted for the current exchange since the last take or clear, and forget it."""
    size: int | None = getattr(_exchange, "size", None)
    _exchange.size = None
    return size


def clear() -> None:
    """Forget any size noted: a new exchange begins on this thread (a noted one that was never taken must not count for it)."""
    _exchange.size = None

"""The producer's Produce requests on one bidi ``ProduceStream`` per broker instead of unary calls.

Why: a grpcio sync server hands every unary call between its threads (the polling thread
hands the call to a pool thread, which waits for the polling thread to read the request); on a
stream the one thread serving it reads each request itself. Measured against a broker (one
one-record Produce at a time, load 18): 850-995 -> 495-650 us of broker CPU per request and
1.13-1.29 -> 0.80-0.94 ms round trip (p50); ``python -m bench.rpc_floor`` shows the same on a
bare server.

How: :mod:`weir.request_streams` (shared with the consumer's fetch streams) matches answers to
requests in the order sent, keeps each request's deadline (the sender calls
:meth:`ProduceStreams.expire` every round), and sends a refused stream's requests as unary
Produce calls. A request that was on a failed stream behind the first one fails CANCELLED (a
transport failure: the sender retries it, possibly appended).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from weir.call_threads import CallThreads
from weir.request_streams import IDLE_STREAM_SECONDS, REFUSED_SECONDS, RequestStreams, StreamFailedError, StreamKind, StubFunction

__all__ = ["IDLE_STREAM_SECONDS", "REFUSED_SECONDS", "STREAM_REFUSED_TRAILER", "ProduceStreams", "StreamFailedError"]

# Trailing metadata key of a broker's refusal to open one more ProduceStream (it serves as many as it can).
STREAM_REFUSED_TRAILER = "weir-produce-stream-refused"
PRODUCE_STREAMS = StreamKind("produce", "producer", "ProduceStream", "Produce", STREAM_REFUSED_TRAILER)


class ProduceStreams(RequestStreams):
    """The producer's streams, one per broker address; see the module docstring."""

    def __init__(
        self, stub: StubFunction, calls: CallThreads, metadata: Sequence[tuple[str, str]] | None, monotonic: Callable[[], float] = time.monotonic
    ) -> None:
        super().__init__(PRODUCE_STREAMS, stub, calls, metadata, monotonic)

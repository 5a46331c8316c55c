"""The consumer's Fetch requests on one bidi ``FetchStream`` per broker instead of unary calls.

Why: most records reach a consumer by the next Fetch (none was parked at the broker when they
were appended), and a unary call's way into a grpcio sync server (a hand-off between the
server's threads and a call set-up) cost 0.7-1.3 ms of that latency and about 200 us of broker
CPU more than a message on an open stream (``python -m bench.rpc_floor --modes unary,stream``).

How: :mod:`weir.request_streams` (shared with the producer's streams). The fetcher keeps one
Fetch in flight per broker, so a stream carries one request at a time; its answer completes
the request's future on the stream's reader thread, which applies it and sends the next
Fetch on the same stream. A request keeps the unary call's deadline (the fetcher calls
:meth:`FetchStreams.expire` every round); a failed stream fails its fetch as the unary call
would have failed (the fetcher backs off and the next fetch opens a new stream); a broker that
refuses the stream (fetch.streams.max reached, or one without FetchStream) gets unary Fetch
calls for a while (``request_streams.REFUSED_SECONDS``), then the stream is tried again.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from weir.call_threads import CallThreads
from weir.request_streams import RequestStreams, StreamKind, StubFunction

# Trailing metadata key of a broker's refusal to open one more FetchStream (it serves fetch.streams.max).
FETCH_STREAM_REFUSED_TRAILER = "weir-fetch-stream-refused"
FETCH_STREAMS = StreamKind("fetch", "consumer", "FetchStream", "Fetch", FETCH_STREAM_REFUSED_TRAILER)


class FetchStreams(RequestStreams):
    """The consumer's fetch streams, one per broker address; see the module docstring."""

    def __init__(
        self, stub: StubFunction, calls: CallThreads, metadata: Sequence[tuple[str, str]] | None, monotonic: Callable[[], float] = time.monotonic
    ) -> None:
        super().__init__(FETCH_STREAMS, stub, calls, metadata, monotonic)

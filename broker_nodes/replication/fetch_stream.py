"""A follower's ``ReplicaFetchStream`` to one leader: one long-lived gRPC stream instead of a unary call per fetch.

The follower sends one ``ReplicaFetchRequest`` at a time and reads its answer back on the
fetcher's own thread (the leader answers each in order; see ``replication.proto``). On the
leader, a unary call costs a sync grpcio server a thread hand-off and a call set-up per fetch
that a message on an open stream does not: ``python -m bench.rpc_floor --modes
unary,stream`` measured about 245 against 450 us of server CPU per message, which every
acks=all record pays once per follower.

grpcio's sync client reads a stream's request iterator on a thread of its own: requests go
through a queue, and ``None`` ends the iterator (the stream is half-closed, the leader's
handler returns). A stream has no per-message deadline, so :class:`AnswerDeadline` cancels a
stream whose answer is later than the unary call's deadline would have allowed; the channel's
keepalive pings notice a vanished peer as well.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Iterator

import grpc

from broker_nodes.replication import stage_trace
from grpc_protos.weir.v1 import replication_pb2, replication_pb2_grpc

Metadata = tuple[tuple[str, str], ...]


class FetchStreamEndedError(Exception):
    """The stream ended without an error status before answering (the leader closed it): open a new one."""


class FetchStreamDeadlineError(Exception):
    """No answer within the deadline: the stream was cancelled (a stopped or overloaded leader)."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"no answer on the fetch stream within {seconds:.1f} s; cancelled it")
        self.seconds = seconds


class AnswerDeadline:
    """Calls an expiry callback when an armed deadline passes before it is disarmed.

    Arming and disarming only write two fields under a lock: the watching thread is never woken
    per fetch. It sleeps until the deadline it last saw, then looks again, so with fetches
    answered in time it wakes about once per deadline length. The thread starts on the first
    :meth:`arm` and ends on :meth:`close`. Thread-safe.
    """

    def __init__(self, name: str, *, monotonic: Callable[[], float] = time.monotonic) -> None:
        self._name = name
        self._monotonic = monotonic
        self._condition = threading.Condition()
        self._deadline = 0.0
        self._period = 1.0  # how long the watcher sleeps while nothing is armed
        self._on_expiry: Callable[[], None] | None = None  # set while armed
        self._closed = False
        self._thread: threading.Thread | None = None

    def arm(self, seconds: float, on_expiry: Callable[[], None]) -> None:
        with self._condition:
            self._deadline = self._monotonic() + seconds
            self._period = seconds
            self._on_expiry = on_expiry
            if self._thread is None and not self._closed:
                self._thread = threading.Thread(target=self._watch, name=self._name, daemon=True)
                self._thread.start()

    def disarm(self) -> None:
        with self._condition:
            self._on_expiry = None

    def close(self) -> None:
        with self._condition:
            self._closed = True
            self._on_expiry = None
            self._condition.notify()

    def expire_due(self) -> bool:
        """Run the expiry callback if the armed deadline has passed; True if it ran (the watcher's step)."""
        with self._condition:
            expired = self._on_expiry if self._on_expiry is not None and self._monotonic() >= self._deadline else None
            if expired is not None:
                self._on_expiry = None
        if expired is None:
            return False
        expired()  # outside the lock: it cancels a gRPC call
        return True

    def _watch(self) -> None:
        while True:
            with self._condition:
                if self._closed:
                    return
                remaining = self._deadline - self._monotonic() if self._on_expiry is not None else self._period
                if remaining > 0:
                    self._condition.wait(remaining)
                    continue
            self.expire_due()


class FetchStream:
    """One open ``ReplicaFetchStream`` call: :meth:`exchange` sends a fetch and waits for its answer.

    Exchanges are made from one thread at a time (the fetcher's); :meth:`cancel` may be called
    from any thread and ends an exchange in flight with ``grpc.RpcError`` CANCELLED. A stream
    that failed or was cancelled is not used again.
    """

    def __init__(self, stub: replication_pb2_grpc.ReplicationStub, metadata: Metadata, deadline: AnswerDeadline) -> None:
        self._outgoing: queue.SimpleQueue[replication_pb2.ReplicaFetchRequest | None] = queue.SimpleQueue()
        self._deadline = deadline
        self._expired_after: float | None = None
        requests: Iterator[replication_pb2.ReplicaFetchRequest] = iter(self._outgoing.get, None)
        self._call = stub.ReplicaFetchStream(_stamped(requests) if stage_trace.ENABLED else requests, metadata=metadata)
        self._answers: Iterator[replication_pb2.ReplicaFetchResponse] = self._call

    def exchange(self, request: replication_pb2.ReplicaFetchRequest, timeout_seconds: float) -> replication_pb2.ReplicaFetchResponse:
        """Send ``request`` and return its answer; FetchStreamDeadlineError after ``timeout_seconds`` without one."""
        self._outgoing.put(request)
        self._deadline.arm(timeout_seconds, lambda: self._expire(timeout_seconds))
        try:
            return next(self._answers)
        except StopIteration:
            raise FetchStreamEndedError("the leader ended the fetch stream") from None
        except grpc.RpcError:
            if self._expired_after is not None:
                raise FetchStreamDeadlineError(self._expired_after) from None
            raise
        finally:
            self._deadline.disarm()

    def cancel(self) -> None:
        """End the stream now (an exchange in flight raises CANCELLED); idempotent."""
        self._outgoing.put(None)  # ends the request iterator, so grpcio's sending thread returns
        self._call.cancel()

    def _expire(self, seconds: float) -> None:
        self._expired_after = seconds
        self.cancel()


def _stamped(requests: Iterator[replication_pb2.ReplicaFetchRequest]) -> Iterator[replication_pb2.ReplicaFetchRequest]:
    """``requests``, each stamped as gRPC's sending thread takes it (stage_trace.FETCH_DEQUEUED)."""
    for request in requests:
        for partition in request.partitions:
            stage_trace.stamp(stage_trace.FETCH_DEQUEUED, partition.topic, partition.partition, partition.fetch_offset, request.replica_id)
        yield request

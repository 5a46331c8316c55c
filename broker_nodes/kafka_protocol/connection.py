"""One Kafka-protocol client connection: read frames, answer them (on the loop or a worker thread), send the responses in request order.

Responses go out in request order, as Kafka requires. Clients may pipeline: the socket is read
in chunks of up to :data:`READ_CHUNK_BYTES`, and the whole frames that arrived together (up to
:data:`MAX_FRAMES_PER_HANDOFF`, each holding its size of the request budget) are answered in
order in one worker-thread call, their responses sent in one write. A producer sending one
small Produce request per record (``linger.ms=0``) thus costs one hand-off between the loop and
a worker per burst instead of per request once it sends faster than the broker answers, which
keeps a backlog from growing. What a client sends beyond that waits in the socket's buffers,
which TCP bounds. Thousands of idle connections cost one small coroutine each and no thread:
only a request's short steps (decode, read or append, encode) hold a worker thread.

A request that must wait (the handler answered an ``api.Continuation``: a long poll, acks=all,
a rebalance) is parked on the event loop as a task of its own (:meth:`KafkaConnection._wait_parked`):
a future the pending's wake signal completes through ``loop.call_soon_threadsafe``, a loop timer
for its deadline, its next step on a worker thread (on the loop for a Produce) after each
wake-up. Its answer takes its place in the connection's queue of answers not sent yet
(``_in_flight``), which are sent in request order as the head of the queue becomes ready.
Meanwhile the connection keeps reading: a client that disconnects ends the connection at once,
which cancels its parked requests and releases their waiters. Only Produce requests are
answered while earlier requests are parked (:data:`PIPELINED_API_KEYS`): each is appended when
it is answered, in request order (so an idempotent producer's sequence numbers arrive in
order), and only the acks=all waits overlap, so librdkafka's five in-flight Produce requests
per connection all wait for the followers at once instead of one after the other. Any other
request waits until every earlier answer was sent, and a parked request other than a Produce
(a long poll, a rebalance) holds every request after it. At most
:data:`MAX_IN_FLIGHT_REQUESTS` answers wait to be sent per connection: beyond that, and behind a
request that must wait, the connection stops reading (what the client sends waits in the socket).

Per frame, on the event loop: wait for its first bytes up to ``connections.max.idle.ms``
(idle connections are closed), then the rest of the 4-byte size within the request read
timeout; refuse a size above the limit before reading its body (before authentication the
limit is :data:`UNAUTHENTICATED_MAX_FRAME_BYTES`, Kafka's ``sasl.server.max.receive.size``);
take the size from the broker's request budget (``queued.max.request.bytes``; without room,
stop reading this socket and try again shortly, until the read timeout); read the body within
the timeout. Then, on a worker thread (:meth:`KafkaConnection.answer`): the SASL steps, the
checks (unknown API key, version outside the registered range, a request before
authentication: close, except ApiVersions' v0 fallback), the caller re-resolved against the
current security snapshot, the handler, the response encoded. After a response whose
``throttle_time`` is above zero the connection is muted (nothing answered) for that long once it is sent (KIP-219).

A connection that misbehaves is closed with one log line naming why; nothing it sent reaches
a handler, and no other connection notices.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Callable, Iterable
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from kio.index import api_key_map
from kio.schema.errors import ErrorCode

from broker_nodes.kafka_protocol import api
from broker_nodes.kafka_protocol.framing import (
    FRAME_SIZE,
    SIZE_PREFIX_BYTES,
    FrameError,
    FrameSizeError,
    decode_request,
    encode_raw,
    encode_response,
    encode_response_body,
    frame_size,
    peek_request,
)
from broker_nodes.kafka_protocol.handlers.api_versions import API_VERSIONS_KEY, api_versions_response
from broker_nodes.kafka_protocol.handlers.sasl import answer_sasl_step
from broker_nodes.kafka_protocol.limits import ConnectionLimits
from broker_nodes.kafka_protocol.sasl import SaslSession, SaslState
from broker_nodes.metrics.kafka import KafkaMetrics
from broker_nodes.security.authenticator import AuthenticationError, CredentialsUnavailableError
from broker_nodes.server.request_budget import RequestBudget

if TYPE_CHECKING:
    from broker_nodes.server.broker import Broker

logger = logging.getLogger(__name__)

# Requests whose handlers answer at once, without waiting for anything (no long poll, replication,
# rebalance or controller): they run on their own threads, so that a heartbeat or an ApiVersions is
# never queued behind long polls and rebalances. Every other API key may wait (and so does one
# added later until it is listed here).
QUICK_API_KEYS = frozenset(
    {
        2,  # ListOffsets
        9,  # OffsetFetch
        10,  # FindCoordinator
        12,  # Heartbeat (classic groups)
        15,  # DescribeGroups
        16,  # ListGroups
        17,  # SaslHandshake
        18,  # ApiVersions
        23,  # OffsetForLeaderEpoch
        32,  # DescribeConfigs
        36,  # SaslAuthenticate
        60,  # DescribeCluster
        61,  # DescribeProducers
        69,  # ConsumerGroupDescribe
    }
)
# Requests answered on the event loop thread itself instead of a worker's (see KafkaConnection._answer_on_loop): their
# handlers raise api.WorkerThreadNeeded for a request that may block, which then goes to a worker.
LOOP_API_KEYS = frozenset({0})  # Produce
# Parked requests whose later steps run on the event loop thread: a produce's (replicated yet? the answer) never block.
LOOP_RESUMED_API_KEYS = frozenset({0})  # Produce
# Requests that may be answered while earlier ones of the connection are parked (their answers still go out in request
# order): a Produce's append happens when it is answered, in request order, and only its acks=all wait overlaps others'.
PIPELINED_API_KEYS = frozenset({0})  # Produce
MAX_IN_FLIGHT_REQUESTS = 5  # requests of one connection answered or parked but not yet sent back (Kafka clients' max.in.flight default)
UNAUTHENTICATED_MAX_FRAME_BYTES = 512 * 1024  # Kafka's sasl.server.max.receive.size: what a client may send before it authenticated
BUDGET_RETRY_SECONDS = (0.001, 0.005, 0.02, 0.05)  # pauses between tries for room in the request budget (the last repeats)
READ_CHUNK_BYTES = 64 * 1024  # asked of the socket per read: pipelined requests that arrived together are read together
MAX_FRAMES_PER_HANDOFF = 64  # pipelined requests answered in one worker-thread call, their responses sent in one write


@dataclass(frozen=True)
class ConnectionServices:
    """What every connection of a listener shares."""

    broker: Broker
    listener: api.KafkaListener
    executor: Executor  # requests that answer at once (QUICK_API_KEYS)
    waiting_executor: Executor  # requests that may wait (long polls, acks=all, rebalances, the controller)
    budget: RequestBudget | None
    metrics: KafkaMetrics


class ConnectionClosed(Exception):
    """The connection ends; ``reason`` is a metrics label, ``detail`` the log line's explanation."""

    def __init__(self, reason: str, detail: str, *, level: int = logging.INFO) -> None:
        super().__init__(detail)
        self.reason = reason
        self.detail = detail
        self.level = level


@dataclass(frozen=True)
class Parked:
    """A request whose handler answered a continuation: what its later steps need."""

    continuation: api.Continuation
    api_key: int
    api_version: int
    correlation_id: int
    started: float  # on the connection's clock, for the request duration metric


class Reply(NamedTuple):  # a NamedTuple: one per request, cheaper to build than a frozen dataclass
    """What the worker thread hands back: the frame to send (None: nothing), then whether to close, and the mute.

    ``parked``: no answer yet, the request waits on the loop (then ``frame`` is None).
    """

    frame: bytes | None
    close: ConnectionClosed | None = None
    throttle_seconds: float = 0.0
    parked: Parked | None = None
    on_worker: bool = False  # not answered: the handler, called on the loop, needs a worker thread (api.WorkerThreadNeeded)

    @property
    def holds_next(self) -> bool:
        """Whether the frames after this one wait until it is sent: it closes or mutes the connection, is not answered yet,
        or parks a request that is not pipelined (:data:`PIPELINED_API_KEYS`)."""
        return (
            self.close is not None or self.throttle_seconds > 0 or self.on_worker or (self.parked is not None and self.parked.api_key not in PIPELINED_API_KEYS)
        )


def _queued_after(queued: int, reply: Reply) -> int:
    """How many answers wait to be sent once ``reply`` joins ``queued`` waiting ones: a reply waits behind any answer
    not sent yet, and a parked request's waits for the request to end; an answer with none before it goes out at once."""
    return queued + 1 if queued or reply.parked is not None else 0


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def _api_name(api_key: int) -> str:
    return str(api_key_map.get(api_key, "unknown"))


class KafkaConnection:
    """One client connection; :meth:`serve` runs it on the listener's event loop until it closes."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        services: ConnectionServices,
        limits: ConnectionLimits,
        peer: str,
        client_host: str,
        *,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self._reader = reader
        self._writer = writer
        self._services = services
        self._limits = limits
        self.peer = peer
        self._session = SaslSession(services.broker.authenticator, client_host)
        self._clock = clock
        self.busy = False  # a request is being read or answered (shutdown lets it finish)
        self.stopping = False
        self._buffer = bytearray()  # bytes read from the socket not yet taken as a frame (the start of pipelined requests)
        self._frames: deque[tuple[bytes, int]] = deque()  # whole frames read and not yet answered, each with the budget bytes it holds
        # Answers not sent yet, in request order, each with whether it holds the requests after it (Reply.holds_next):
        # ready replies, and the tasks of parked requests (_wait_parked). Only the head's readiness lets anything be sent.
        self._in_flight: deque[tuple[bool, Reply | asyncio.Task[Reply]]] = deque()
        self._watch: asyncio.Task[None] | None = None  # a socket read started while requests were in flight, not finished yet
        self._parked_wakeups: set[asyncio.Future[None]] = set()  # completed to end the current parks early (shutdown)
        # The request metrics' labelled series by (api key, closed), looked up once: prometheus_client's labels()
        # takes a lock and builds its key on every call. Used by a worker thread and the loop at once at most (a
        # Produce resumed on the loop while a later request is answered on a worker): a lost race builds one twice.
        self._counted: dict[tuple[int, bool], tuple[Any, Any]] = {}

    async def serve(self) -> None:
        """Answer requests until the client leaves, a limit or bad input closes the connection, or the listener stops."""
        metrics = self._services.metrics
        metrics.connections.inc()
        reason, detail, level = "client", "the client closed it", logging.DEBUG
        try:
            while not (self.stopping and not self._in_flight):
                if self._frames and not self.stopping and self._may_answer(self._frames[0][0], self._queued()):
                    if not await self._answer_next_batch():
                        # Answered on the loop, and reading buffered bytes does not suspend either: without this a
                        # client sending faster than it is answered would keep every other connection waiting.
                        await asyncio.sleep(0)
                elif self._in_flight:
                    await self._wait_in_flight()
                    await self._send_ready()
                else:
                    await self._read_frames()
            reason, detail = "shutdown", "the listener is stopping"
        except ConnectionClosed as closed:
            reason, detail, level = closed.reason, closed.detail, closed.level
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        except TimeoutError:
            reason, detail = "stalled", "the client took longer than the request read timeout to send a request or take a response"
        except asyncio.CancelledError:
            reason, detail = "shutdown", "the listener is stopping"
        finally:
            self._release_budget(self._frames)
            self._frames.clear()
            metrics.connections.dec()
            metrics.closed.labels(reason).inc()
            logger.log(level, "Kafka connection from %s closed: %s", self.peer, detail)
            self._writer.close()
            await self._abandon_in_flight()

    async def _answer_next_batch(self) -> bool:
        """Answer the frames at the head of the queue that share a pool, in one worker-thread call, and send the answers that are ready.

        The caller checked that the first frame may be answered now (:meth:`_may_answer`). The
        answers stop before a frame that must wait for the earlier ones and after a reply that
        closes or mutes the connection or parks a request that is not pipelined; the frames
        after the last answer stay queued (in order). A parked request's wait becomes a task
        of its own (:meth:`_wait_parked`) queued in :attr:`_in_flight` in request order. Whether
        a worker thread answered some (the coroutine then gave other connections their turn
        while it waited).
        """
        executor = self._executor_for(self._frames[0][0])
        batch = [self._frames.popleft()]
        if self._session.authenticated:  # before authentication each frame may change how the next is read (SASL's raw tokens)
            while self._frames and len(batch) < MAX_FRAMES_PER_HANDOFF and self._executor_for(self._frames[0][0]) is executor:
                batch.append(self._frames.popleft())
        frames = [frame for frame, _ in batch]
        queued = self._queued()
        on_worker = False
        try:
            replies = self._answer_on_loop(frames, queued)
            if replies and replies[-1].on_worker:
                replies.pop()  # that frame and those after it are answered on a worker thread
            if len(replies) < len(frames) and not (replies and replies[-1].holds_next):
                for reply in replies:
                    queued = _queued_after(queued, reply)
                if self._may_answer(frames[len(replies)], queued):
                    on_worker = True
                    replies += await asyncio.get_running_loop().run_in_executor(executor, self.answer_all, frames[len(replies) :], queued)
        except BaseException:
            self._release_budget(batch)
            raise
        self._release_budget(batch[: len(replies)])
        self._frames.extendleft(reversed(batch[len(replies) :]))
        del batch, frames
        for reply in replies:
            if reply.parked is None:
                self._in_flight.append((reply.holds_next, reply))
            else:
                task = asyncio.create_task(self._wait_parked(reply.parked, executor))
                self._in_flight.append((reply.holds_next, task))
        await self._send_ready()
        return on_worker

    def _queued(self) -> int:
        """How many answers wait to be sent (:data:`MAX_IN_FLIGHT_REQUESTS` when one of them holds the requests after it)."""
        in_flight = self._in_flight
        if not in_flight:
            return 0
        if any(holds for holds, _ in in_flight):
            return MAX_IN_FLIGHT_REQUESTS
        return len(in_flight)

    @staticmethod
    def _may_answer(frame: bytes, queued: int) -> bool:
        """Whether ``frame`` may be answered while ``queued`` earlier answers wait to be sent: any frame when none does,
        else a pipelined request (a Produce) while fewer than :data:`MAX_IN_FLIGHT_REQUESTS` are in flight."""
        if not queued:
            return True
        return queued < MAX_IN_FLIGHT_REQUESTS and len(frame) >= 2 and int.from_bytes(frame[:2], "big", signed=True) in PIPELINED_API_KEYS

    async def _send_ready(self) -> None:
        """Send the answers at the head of :attr:`_in_flight` that are ready, in request order, in one write; then close
        or mute (KIP-219) as the last of them says."""
        frames: list[bytes] = []
        closing: ConnectionClosed | None = None
        mute = 0.0
        in_flight = self._in_flight
        while in_flight:
            item = in_flight[0][1]
            if isinstance(item, asyncio.Task):
                if not item.done():
                    break
                reply: Reply = item.result()
            else:
                reply = item
            in_flight.popleft()
            if reply.frame is not None:
                frames.append(reply.frame)
            if reply.close is not None:
                closing = reply.close
                break
            mute = max(mute, reply.throttle_seconds)
        if frames:
            await self._send(frames)
        self.busy = bool(self._frames or in_flight)
        if closing is not None:
            raise closing
        if mute > 0:
            await asyncio.sleep(mute)  # muted: KIP-219

    async def _wait_in_flight(self) -> None:
        """Wait until the oldest answer not sent yet is ready; meanwhile read the socket.

        Reading on while requests are parked is what lets a client pipeline acks=all Produces,
        and it notices a client that left: the end of the stream raises, and :meth:`serve`
        then cancels the parked waits. Behind requests queued that may not be answered yet, at
        most :data:`READ_CHUNK_BYTES` more are read (to notice the end of the stream); what the
        client sends beyond waits in the socket. The socket read (:attr:`_watch`) is never
        cancelled here: it stays for the next wait, or for :meth:`_read_more` once nothing is
        in flight.
        """
        head = self._in_flight[0][1]
        if not isinstance(head, asyncio.Task):
            return
        if self.stopping:
            await asyncio.wait((head,))
            return
        if not self._frames and self._buffer:  # the start of a request arrived: read the rest (within the read timeout)
            await self._read_frames()
            return
        if self._watch is None:
            if len(self._buffer) >= READ_CHUNK_BYTES:  # back-pressure
                await asyncio.wait((head,))
                return
            self._watch = asyncio.ensure_future(self._receive())
        await asyncio.wait((head, self._watch), return_when=asyncio.FIRST_COMPLETED)
        if self._watch.done():
            watch, self._watch = self._watch, None
            watch.result()  # raises IncompleteReadError / ConnectionError when the client left

    async def _abandon_in_flight(self) -> None:
        """The connection closed: cancel the socket read and the parked waits, and let each release its waiter."""
        if self._watch is not None:
            self._watch.cancel()
            self._watch = None
        tasks = [item for _, item in self._in_flight if isinstance(item, asyncio.Task)]
        self._in_flight.clear()
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks)
            for task in tasks:
                if not task.cancelled():
                    task.exception()  # retrieved: the connection is gone, nobody would read it

    async def _send(self, frames: list[bytes]) -> None:
        """Write response frames in one write; wait (up to the read timeout) only while the client is not taking them."""
        if self._writer.transport.is_closing():  # the client left: end here rather than answer what it left queued
            raise ConnectionResetError("the client closed the connection")
        self._writer.write(frames[0] if len(frames) == 1 else b"".join(frames))
        if self._writer.transport.get_write_buffer_size():  # the kernel did not take it all at once: flow control may apply
            async with asyncio.timeout(self._limits.read_timeout):
                await self._writer.drain()

    def _release_budget(self, frames: Iterable[tuple[bytes, int]]) -> None:
        budget = self._services.budget
        if budget is not None:
            for _, taken in frames:
                if taken:
                    budget.release(taken)

    def _executor_for(self, frame: bytes) -> Executor:
        """The quick pool for a request that answers at once (and for SASL's raw tokens and bad frames), else the waiting pool."""
        if self._session.state == SaslState.RAW_TOKEN or len(frame) < 2 or int.from_bytes(frame[:2], "big", signed=True) in QUICK_API_KEYS:
            return self._services.executor
        return self._services.waiting_executor

    def _frame_limit(self) -> int:
        return self._limits.max_frame_bytes if self._session.authenticated else min(self._limits.max_frame_bytes, UNAUTHENTICATED_MAX_FRAME_BYTES)

    async def _read_frames(self) -> None:
        """Queue the next request frame, and (once authenticated) the further whole frames already read with it.

        Each queued frame holds its size of the request budget until it is answered.
        """
        if not self._buffer:
            try:
                async with asyncio.timeout(self._limits.idle_timeout):  # from when nothing is in flight any more
                    await self._read_more()
            except TimeoutError:
                raise ConnectionClosed("idle", f"no request for {self._limits.idle_timeout:.3f} s (connections.max.idle.ms)", level=logging.DEBUG) from None
        self.busy = True
        if not self._queue_buffered_frames():  # the usual case, a whole request in one read, needs no read timeout
            async with asyncio.timeout(self._limits.read_timeout):
                await self._read_frame()

    async def _read_frame(self) -> None:
        """Read (within the caller's read timeout) and queue the frame that starts the buffer, refusing a size above the limit."""
        while len(self._buffer) < SIZE_PREFIX_BYTES:
            await self._read_more()
        try:
            size = frame_size(bytes(self._buffer[:SIZE_PREFIX_BYTES]), self._frame_limit())
        except FrameSizeError as error:
            stage = "" if self._session.authenticated else " before authentication"
            raise ConnectionClosed("too_large", f"{error}{stage}") from None
        taken = await self._take_budget(size)
        try:
            frame = await self._take_frame(size)
        except BaseException:
            self._release_budget(((b"", taken),))
            raise
        self._frames.append((frame, taken))
        if self._session.authenticated:
            self._queue_buffered_frames()

    async def _take_frame(self, size: int) -> bytes:
        """The body of the frame whose size prefix starts the buffer, reading what is still missing."""
        end = SIZE_PREFIX_BYTES + size
        if self._watch is not None and len(self._buffer) < end:
            await self._read_more()  # the read started while requests were in flight comes first
        if len(self._buffer) >= end:
            frame = bytes(self._buffer[SIZE_PREFIX_BYTES:end])
            del self._buffer[:end]
            return frame
        rest = await self._reader.readexactly(end - len(self._buffer))
        frame = bytes(self._buffer[SIZE_PREFIX_BYTES:]) + rest
        self._buffer.clear()
        return frame

    def _queue_buffered_frames(self) -> bool:
        """Queue the whole frames already in the buffer while the request budget has room for them; whether any was.

        Before authentication at most one (each may change how the next is read: SASL's raw
        tokens). A frame whose size is refused, or that is not whole yet, stays in the buffer:
        it is read (and refused) in its turn, after the frames before it were answered.
        """
        budget = self._services.budget
        limit = self._frame_limit()
        most = MAX_FRAMES_PER_HANDOFF if self._session.authenticated else 1
        queued = False
        while len(self._frames) < most and len(self._buffer) >= SIZE_PREFIX_BYTES:
            (size,) = FRAME_SIZE.unpack_from(self._buffer)
            end = SIZE_PREFIX_BYTES + size
            if size < 0 or size > limit or len(self._buffer) < end:
                break
            taken = 0
            if budget is not None:
                room = budget.try_acquire(size)
                if room is None:
                    break
                taken = room
            self._frames.append((bytes(self._buffer[SIZE_PREFIX_BYTES:end]), taken))
            del self._buffer[:end]
            queued = True
        return queued

    async def _read_more(self) -> None:
        """Append what the socket has (waiting for at least a byte) to the buffer, through the read :meth:`_wait_in_flight`
        started if there is one; IncompleteReadError at end of stream."""
        watch, self._watch = self._watch, None
        if watch is not None:
            await watch
        else:
            await self._receive()

    async def _receive(self) -> None:
        data = await self._reader.read(READ_CHUNK_BYTES)
        if not data:
            raise asyncio.IncompleteReadError(bytes(self._buffer), None)
        self._buffer += data

    async def _take_budget(self, size: int) -> int:
        """Take ``size`` bytes of the request budget, pausing this connection (not the loop) until there is room."""
        budget = self._services.budget
        if budget is None:
            return 0
        attempt = 0
        while (taken := budget.try_acquire(size)) is None:
            await asyncio.sleep(BUDGET_RETRY_SECONDS[min(attempt, len(BUDGET_RETRY_SECONDS) - 1)])
            attempt += 1
        return taken

    def answer_all(self, frames: list[bytes], queued: int = 0, *, on_loop: bool = False) -> list[Reply]:
        """Answer pipelined frames in order (on a worker thread, or ``on_loop``), ``queued`` earlier answers not sent yet.

        Stops before a frame that may not be answered yet (:meth:`_may_answer`) and after a reply
        that holds the next frames; the frames after the last reply are not answered yet.
        """
        replies = []
        for frame in frames:
            if not self._may_answer(frame, queued):
                break
            reply = self.answer(frame, on_loop=on_loop)
            replies.append(reply)
            if reply.holds_next:
                break
            queued = _queued_after(queued, reply)
        return replies

    def _answer_on_loop(self, frames: list[bytes], queued: int) -> list[Reply]:
        """The replies to the leading frames answered on the event loop thread (none when the first is not of :data:`LOOP_API_KEYS`).

        Saves the two thread hand-offs of a worker call, which cost more than answering a small
        Produce request; a handler that finds its request may block answers ``on_worker`` instead
        (the last reply then), and that frame and those after it go to a worker thread.
        """
        if not self._session.authenticated:
            return []
        leading = 0
        while leading < len(frames) and len(frames[leading]) >= 2 and int.from_bytes(frames[leading][:2], "big", signed=True) in LOOP_API_KEYS:
            leading += 1
        return self.answer_all(frames[:leading], queued, on_loop=True) if leading else []

    def answer(self, frame: bytes, *, on_loop: bool = False) -> Reply:
        """Answer one request frame (on a worker thread, or on the loop: ``on_loop``): the response frame, and whether the connection closes after it."""
        if self._session.state == SaslState.RAW_TOKEN:
            outcome = self._session.authenticate(frame)
            if outcome.succeeded:
                return Reply(encode_raw(outcome.auth_bytes))  # PLAIN's empty answer, or SCRAM's server-first / server-final
            return Reply(None, ConnectionClosed("authentication", outcome.message or "SASL authentication failed"))
        try:
            keys = peek_request(frame)
        except FrameError as error:
            return Reply(None, ConnectionClosed("malformed", str(error)))
        started = self._clock()
        return self._guarded(keys.api_key, keys.api_version, started, lambda: self._answer_request(frame, keys, started, on_loop))

    def _guarded(self, api_key: int, api_version: int, started: float, step: Callable[[], Reply]) -> Reply:
        """Run one step of a request (on a worker thread); a failure closes the connection. Counts the request once answered."""
        name = _api_name(api_key)
        try:
            reply = step()
        except api.WorkerThreadNeeded:
            return Reply(None, on_worker=True)  # not answered: counted when a worker thread answers it
        except ConnectionClosed as closed:
            reply = Reply(None, closed)
        except FrameError as error:
            reply = Reply(None, ConnectionClosed("malformed", str(error)))
        except Exception:
            logger.exception("Kafka handler of %s v%d failed (connection from %s)", name, api_version, self.peer)
            reply = Reply(None, ConnectionClosed("handler_error", f"the {name} v{api_version} handler failed (logged above)"))
        if reply.parked is None:
            closes = reply.close is not None
            counted = self._counted.get((api_key, closes))
            if counted is None:
                metrics = self._services.metrics
                counted = self._counted[(api_key, closes)] = (metrics.requests.labels(name, "closed" if closes else "ok"), metrics.duration.labels(name))
            counted[0].inc()
            counted[1].observe(self._clock() - started)
        return reply

    async def _wait_parked(self, parked: Parked, executor: Executor) -> Reply:
        """Wait on the loop (no thread) until the parked request is done, running its steps on ``executor``; its reply.

        Runs as a task of its own, queued in :attr:`_in_flight`, while the connection goes on
        reading (and answering pipelined Produces). Each round subscribes a loop future to the
        pending's wake signal and arms a timer for its deadline, then runs the next step on a
        worker thread (on the loop for :data:`LOOP_RESUMED_API_KEYS`). The pending is always
        released: answered, failed, or cancelled (the client left, the connection closed).
        """
        loop = asyncio.get_running_loop()
        pending = parked.continuation.pending
        try:
            while True:
                woken: asyncio.Future[None] = loop.create_future()

                def wake(future: asyncio.Future[None] = woken) -> None:
                    try:
                        loop.call_soon_threadsafe(_resolve, future)
                    except RuntimeError:  # the loop closed meanwhile (listener stopped): nobody waits any more
                        pass

                self._parked_wakeups.add(woken)
                if self.stopping:  # the listener began stopping before this park: take the next step at once
                    _resolve(woken)
                timer = loop.call_later(max(pending.remaining_seconds(), 0.0), _resolve, woken)
                pending.signal.subscribe(wake)
                try:
                    await woken
                finally:
                    pending.signal.subscribe(None)
                    timer.cancel()
                    self._parked_wakeups.discard(woken)
                if parked.api_key in LOOP_RESUMED_API_KEYS:
                    reply = self._resume(parked)
                else:
                    reply = await loop.run_in_executor(executor, self._resume, parked)
                if reply.parked is None:
                    return reply
                if self.stopping:
                    return Reply(None, ConnectionClosed("shutdown", "the listener stopped while a request was waiting"))
        finally:
            pending.release()

    def _resume(self, parked: Parked) -> Reply:
        """The parked request's next step (on a worker thread): the reply once it is done, else the same ``parked``."""

        def step() -> Reply:
            if not parked.continuation.pending.advance():
                return Reply(None, parked=parked)
            return self._reply_to(parked.api_key, parked.api_version, parked.correlation_id, parked.continuation.finish())

        return self._guarded(parked.api_key, parked.api_version, parked.started, step)

    def wake_parked(self) -> None:
        """End the current parks early (on the loop thread): the requests take their next step now (shutdown)."""
        for woken in list(self._parked_wakeups):
            _resolve(woken)

    def _answer_request(self, frame: bytes, keys: Any, started: float, on_loop: bool) -> Reply:
        registration = api.registration(keys.api_key)
        if registration is None:
            raise ConnectionClosed("unknown_api", f"api key {keys.api_key} is not served here")
        name = _api_name(keys.api_key)
        if not self._session.allows(keys.api_key):
            raise ConnectionClosed("sasl_state", f"{name} before SASL authentication completed (ILLEGAL_SASL_STATE)")
        if not registration.supports(keys.api_version):
            if keys.api_key == API_VERSIONS_KEY:
                # Kafka's fallback: v0 names the versions this broker has, the client retries with one.
                return Reply(encode_response(keys.correlation_id, api_versions_response(0, ErrorCode.unsupported_version)))
            raise ConnectionClosed(
                "unsupported_version", f"{name} v{keys.api_version} is not supported (v{registration.min_version}-v{registration.max_version} are)"
            )
        request = decode_request(frame, keys)
        if keys.api_key == API_VERSIONS_KEY and keys.api_version >= 3:  # KIP-511: who the client says it is, for the key's applications
            self._session.note_software(request.body.client_software_name, request.body.client_software_version)
        if self._session.takes(keys.api_key):
            answer = answer_sasl_step(self._session, keys.api_key, keys.api_version, request.body)
            closed = ConnectionClosed("authentication", f"SASL step {name} refused: {answer.response.error_code.name}") if answer.close else None
            return Reply(encode_response(keys.correlation_id, answer.response), closed)
        if not self._session.authenticated:  # ApiVersions, the one other request allowed before SASL: no caller to resolve yet
            return Reply(encode_response(keys.correlation_id, api_versions_response(keys.api_version)))
        try:
            call = self._session.call_context(request.client_id)
        except (AuthenticationError, CredentialsUnavailableError) as error:
            raise ConnectionClosed("revoked", f"the connection's credentials no longer authenticate: {error}") from None
        context = api.KafkaRequestContext(
            broker=self._services.broker,
            call=call,
            api_key=keys.api_key,
            api_version=keys.api_version,
            correlation_id=keys.correlation_id,
            client_id=request.client_id,
            listener=self._services.listener,
            on_loop=on_loop,
        )
        response = registration.handler(context, request.body)
        if isinstance(response, api.Continuation):
            return Reply(None, parked=Parked(response, keys.api_key, keys.api_version, keys.correlation_id, started))
        return self._reply_to(keys.api_key, keys.api_version, keys.correlation_id, response)

    @staticmethod
    def _reply_to(api_key: int, api_version: int, correlation_id: int, response: Any) -> Reply:
        """The reply carrying a handler's response (checked to be the request's API and version)."""
        if response is None:
            return Reply(None)  # api.NO_RESPONSE: Produce with acks=0 is answered with nothing, as Kafka does
        if isinstance(response, api.EncodedResponse):
            if response.api_key != api_key or response.api_version != api_version:
                raise TypeError(f"the {_api_name(api_key)} v{api_version} handler answered an encoded {_api_name(response.api_key)} v{response.api_version}")
            frame = encode_response_body(correlation_id, response.body, flexible_header=response.flexible_header)
            return Reply(frame, throttle_seconds=max(response.throttle_ms, 0) / 1000.0)
        if type(response).__api_key__ != api_key or type(response).__version__ != api_version:
            name = _api_name(api_key)
            raise TypeError(f"the {name} v{api_version} handler answered {type(response).__module__}.{type(response).__qualname__}")
        throttle = getattr(response, "throttle_time", None)
        throttle_seconds = throttle.total_seconds() if throttle is not None else 0.0
        return Reply(encode_response(correlation_id, response), throttle_seconds=throttle_seconds)

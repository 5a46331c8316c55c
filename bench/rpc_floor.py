"""The CPU a Python gRPC server spends on one unary call that does nothing: the floor under every broker call.

``python -m bench.rpc_floor [--calls 4000] [--runs 3] [--servers sync,aio] [--modes unary,stream,pipelined]`` starts a bare
grpcio server in a subprocess, one per kind: ``sync`` is ``grpc.server`` with a thread pool, as
the brokers serve (its polling thread hands each call to a pool thread, which waits for the
request message and sends the answer); ``aio`` is ``grpc.aio.server`` on one event loop. This
process calls its one unary method (a 200-byte request, a fixed 40-byte answer) one call after
the other, and the report gives, per kind, the server process's CPU microseconds per call (user
plus system from ``/proc``, every thread: gRPC's own threads included) and its context switches
per call, with the machine's load.

``--modes`` compares the same message exchange over the three shapes a caller can use, in the
same run: ``unary`` (one call per request), ``stream`` (one bidirectional stream for the whole
run, request -> answer ping-pong: the next request is sent once the answer came, as a follower
with one fetch outstanding does) and ``pipelined`` (one stream with up to
``--window`` requests outstanding). Each row also gives this (the calling) process's CPU per
message, all its threads: grpcio's sync client reads a stream's request iterator on a thread of
its own.

Read it beside the broker's CPU per one-record Produce (the CPU column of
``bench.replication_round_trip``): what a broker spends above this floor is its own (interceptors,
authentication, the request logic, the append, and the Python they make slower by sharing the
GIL and the caches); what the floor holds no change inside the broker can remove.

Compare figures taken at the same load only: on the 2-core machine (grpcio 1.85.3) the sync
floor was 190-210 us per call at load average 10 and 325-330 us at load 3, and a broker's
one-record Produce about 560 and 790 us: with idle cores, each of a call's hand-offs between
threads (about 14-16 context switches) wakes a sleeping core, which costs more than a switch on
a busy one.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import queue
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from concurrent import futures
from dataclasses import dataclass
from pathlib import Path

import grpc

from bench.broker_sampler import process_cpu_seconds

SERVICE = "weir.bench.Floor"
METHOD = f"/{SERVICE}/Call"
STREAM_METHOD = f"/{SERVICE}/Stream"
REQUEST = b"x" * 200
ANSWER = b"r" * 40
SERVER_KINDS = ("sync", "aio")
MODES = ("unary", "stream", "pipelined")
DEFAULT_WINDOW = 4  # pipelined: requests outstanding on the stream
DEFAULT_CALLS = 4000
DEFAULT_RUNS = 3
WARMUP_CALLS = 500  # calls before each measured run (connection set up, threads started)
READY_TIMEOUT_SECONDS = 30.0
REPOSITORY_ROOT = Path(__file__).resolve().parent.parent  # where ``-m bench.rpc_floor`` resolves for the server subprocess
SYNC_POOL_THREADS = 16  # as num.io.threads: more threads than one caller ever uses


def _answer(request: bytes, context: object) -> bytes:
    return ANSWER


async def _answer_async(request: bytes, context: object) -> bytes:
    return ANSWER


def _answer_each(requests: Iterator[bytes], context: object) -> Iterator[bytes]:
    for _ in requests:
        yield ANSWER


async def _answer_each_async(requests: AsyncIterator[bytes], context: object) -> AsyncIterator[bytes]:
    async for _ in requests:
        yield ANSWER


def _handler(unary: Callable[..., object], stream: Callable[..., object]) -> grpc.GenericRpcHandler:
    return grpc.method_handlers_generic_handler(
        SERVICE, {"Call": grpc.unary_unary_rpc_method_handler(unary), "Stream": grpc.stream_stream_rpc_method_handler(stream)}
    )


def serve(kind: str, port: int) -> None:
    """Serve the one method on 127.0.0.1:``port`` until killed (the subprocess's main)."""
    if kind == "sync":
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=SYNC_POOL_THREADS), handlers=[_handler(_answer, _answer_each)])
        server.add_insecure_port(f"127.0.0.1:{port}")
        server.start()
        server.wait_for_termination()
        return

    async def run() -> None:
        server = grpc.aio.server(handlers=[_handler(_answer_async, _answer_each_async)])
        server.add_insecure_port(f"127.0.0.1:{port}")
        await server.start()
        await server.wait_for_termination()

    asyncio.run(run())


def context_switches(pid: int) -> int:
    """Voluntary plus involuntary context switches of every thread of process ``pid`` so far."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            lines = (task / "status").read_text().splitlines()
        except OSError:
            continue  # a thread that ended meanwhile
        total += sum(int(line.split()[1]) for line in lines if "ctxt_switches:" in line)
    return total


class _StreamCaller:
    """One bidirectional stream on which requests are sent from this thread and answers read back in order."""

    def __init__(self, channel: grpc.Channel) -> None:
        self._outgoing: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
        self._answers = channel.stream_stream(STREAM_METHOD)(iter(self._outgoing.get, None))

    def send(self, request: bytes) -> None:
        self._outgoing.put(request)

    def receive(self) -> bytes:
        return next(self._answers)

    def close(self) -> None:
        self._outgoing.put(None)  # ends the request iterator: the server's handler returns, the stream ends
        for _ in self._answers:
            pass


def _exchange(mode: str, unary: grpc.UnaryUnaryMultiCallable[bytes, bytes], stream: _StreamCaller, messages: int, window: int) -> None:
    """``messages`` request -> answer exchanges in ``mode``."""
    if mode == "unary":
        for _ in range(messages):
            unary(REQUEST)
        return
    outstanding = 0
    for _ in range(messages):
        if outstanding == (1 if mode == "stream" else window):
            stream.receive()
            outstanding -= 1
        stream.send(REQUEST)
        outstanding += 1
    for _ in range(outstanding):
        stream.receive()


@dataclass(frozen=True)
class FloorRun:
    kind: str
    calls: int
    cpu_seconds: float
    switches: int
    wall_seconds: float
    mode: str = "unary"
    caller_cpu_seconds: float = 0.0

    @property
    def cpu_us_per_call(self) -> float:
        return self.cpu_seconds / self.calls * 1e6

    @property
    def switches_per_call(self) -> float:
        return self.switches / self.calls

    @property
    def caller_cpu_us_per_call(self) -> float:
        return self.caller_cpu_seconds / self.calls * 1e6

    @property
    def wall_us_per_call(self) -> float:
        return self.wall_seconds / self.calls * 1e6


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def measure(kind: str, calls: int, runs: int, modes: Sequence[str] = ("unary",), window: int = DEFAULT_WINDOW) -> list[FloorRun]:
    """``runs`` runs of ``calls`` sequential exchanges per mode (modes interleaved) to a fresh ``kind`` server; the server is killed after."""
    port = _free_port()
    server = subprocess.Popen([sys.executable, "-m", "bench.rpc_floor", "--serve", kind, "--port", str(port)], cwd=REPOSITORY_ROOT)
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            grpc.channel_ready_future(channel).result(timeout=READY_TIMEOUT_SECONDS)
            unary = channel.unary_unary(METHOD)
            stream = _StreamCaller(channel)
            try:
                results = []
                for _ in range(runs):
                    for mode in modes:
                        _exchange(mode, unary, stream, WARMUP_CALLS, window)
                        cpu_before, switches_before = process_cpu_seconds(server.pid), context_switches(server.pid)
                        caller_before, started = time.process_time(), time.perf_counter()
                        _exchange(mode, unary, stream, calls, window)
                        wall, caller_cpu = time.perf_counter() - started, time.process_time() - caller_before
                        cpu_after = process_cpu_seconds(server.pid)
                        if cpu_before is None or cpu_after is None:
                            raise RuntimeError(f"no CPU time for the {kind} server (needs Linux's /proc)")
                        switches = context_switches(server.pid) - switches_before
                        results.append(FloorRun(kind, calls, cpu_after - cpu_before, switches, wall, mode, caller_cpu))
                return results
            finally:
                stream.close()
    finally:
        server.kill()
        server.wait()


def report(results: Sequence[FloorRun]) -> str:
    lines = [
        "gRPC floor: a bare grpcio server answering one message at a time (server process, every thread; caller: this process)",
        f"{'server':8s} {'mode':10s} {'run':>4s} {'CPU us/msg':>11s} {'switches/msg':>13s} {'caller CPU us/msg':>18s} {'wall us/msg':>12s}",
    ]
    runs_of: dict[tuple[str, str], int] = {}
    for run in results:
        runs_of[run.kind, run.mode] = runs_of.get((run.kind, run.mode), 0) + 1
        lines.append(
            f"{run.kind:8s} {run.mode:10s} {runs_of[run.kind, run.mode]:4d} {run.cpu_us_per_call:11.0f} {run.switches_per_call:13.1f}"
            f" {run.caller_cpu_us_per_call:18.0f} {run.wall_us_per_call:12.0f}"
        )
    load = os.getloadavg()
    lines.append(f"load average at the end: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} CPUs; grpcio {grpc.__version__}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.rpc_floor", description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--calls", type=int, default=DEFAULT_CALLS, help=f"measured calls per run (default {DEFAULT_CALLS})")
    parser.add_argument("--runs", type=int, default=DEFAULT_RUNS, help=f"runs per server kind (default {DEFAULT_RUNS})")
    parser.add_argument("--servers", default=",".join(SERVER_KINDS), help="comma-separated server kinds: sync, aio (default both)")
    parser.add_argument("--modes", default="unary", help=f"comma-separated exchange shapes: {', '.join(MODES)} (default unary)")
    parser.add_argument("--window", type=int, default=DEFAULT_WINDOW, help=f"pipelined: requests outstanding (default {DEFAULT_WINDOW})")
    parser.add_argument("--serve", choices=SERVER_KINDS, help=argparse.SUPPRESS)  # the server subprocess
    parser.add_argument("--port", type=int, default=0, help=argparse.SUPPRESS)
    options = parser.parse_args(argv)
    if options.serve:
        serve(options.serve, options.port)
        return 0
    kinds = [kind.strip() for kind in options.servers.split(",") if kind.strip()]
    modes = [mode.strip() for mode in options.modes.split(",") if mode.strip()]
    unknown = [kind for kind in kinds if kind not in SERVER_KINDS] + [mode for mode in modes if mode not in MODES]
    if unknown or not modes or options.calls < 1 or options.runs < 1 or options.window < 1:
        parser.error(f"--servers takes {', '.join(SERVER_KINDS)}; --modes {', '.join(MODES)}; --calls, --runs and --window at least 1")
    results = [run for kind in kinds for run in measure(kind, options.calls, options.runs, modes, options.window)]
    print(report(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())

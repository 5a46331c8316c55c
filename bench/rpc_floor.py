"""The CPU a Python gRPC server spends on one unary call that does nothing: the floor under every broker call.

``python -m bench.rpc_floor [--calls 4000] [--runs 3] [--servers sync,aio]`` starts a bare
grpcio server in a subprocess, one per kind: ``sync`` is ``grpc.server`` with a thread pool, as
the brokers serve (its polling thread hands each call to a pool thread, which waits for the
request message and sends the answer); ``aio`` is ``grpc.aio.server`` on one event loop. This
process calls its one unary method (a 200-byte request, a fixed 40-byte answer) one call after
the other, and the report gives, per kind, the server process's CPU microseconds per call (user
plus system from ``/proc``, every thread: gRPC's own threads included) and its context switches
per call, with the machine's load.

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
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from concurrent import futures
from dataclasses import dataclass
from pathlib import Path

import grpc

from bench.broker_sampler import process_cpu_seconds

SERVICE = "weir.bench.Floor"
METHOD = f"/{SERVICE}/Call"
REQUEST = b"x" * 200
ANSWER = b"r" * 40
SERVER_KINDS = ("sync", "aio")
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


def serve(kind: str, port: int) -> None:
    """Serve the one method on 127.0.0.1:``port`` until killed (the subprocess's main)."""
    if kind == "sync":
        handler = grpc.method_handlers_generic_handler(SERVICE, {"Call": grpc.unary_unary_rpc_method_handler(_answer)})
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=SYNC_POOL_THREADS), handlers=[handler])
        server.add_insecure_port(f"127.0.0.1:{port}")
        server.start()
        server.wait_for_termination()
        return

    async def run() -> None:
        handler = grpc.method_handlers_generic_handler(SERVICE, {"Call": grpc.unary_unary_rpc_method_handler(_answer_async)})
        server = grpc.aio.server(handlers=[handler])
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


@dataclass(frozen=True)
class FloorRun:
    kind: str
    calls: int
    cpu_seconds: float
    switches: int
    wall_seconds: float

    @property
    def cpu_us_per_call(self) -> float:
        return self.cpu_seconds / self.calls * 1e6

    @property
    def switches_per_call(self) -> float:
        return self.switches / self.calls

    @property
    def wall_us_per_call(self) -> float:
        return self.wall_seconds / self.calls * 1e6


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def measure(kind: str, calls: int, runs: int) -> list[FloorRun]:
    """``runs`` runs of ``calls`` sequential calls to a fresh ``kind`` server; the server is killed after."""
    port = _free_port()
    server = subprocess.Popen([sys.executable, "-m", "bench.rpc_floor", "--serve", kind, "--port", str(port)], cwd=REPOSITORY_ROOT)
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            grpc.channel_ready_future(channel).result(timeout=READY_TIMEOUT_SECONDS)
            call = channel.unary_unary(METHOD)
            results = []
            for _ in range(runs):
                for _ in range(WARMUP_CALLS):
                    call(REQUEST)
                cpu_before, switches_before, started = process_cpu_seconds(server.pid), context_switches(server.pid), time.perf_counter()
                for _ in range(calls):
                    call(REQUEST)
                wall = time.perf_counter() - started
                cpu_after = process_cpu_seconds(server.pid)
                if cpu_before is None or cpu_after is None:
                    raise RuntimeError(f"no CPU time for the {kind} server (needs Linux's /proc)")
                results.append(FloorRun(kind, calls, cpu_after - cpu_before, context_switches(server.pid) - switches_before, wall))
            return results
    finally:
        server.kill()
        server.wait()


def report(results: Sequence[FloorRun]) -> str:
    lines = [
        "gRPC floor: a bare grpcio server answering one unary call at a time (server process, every thread)",
        f"{'server':8s} {'run':>4s} {'CPU us/call':>12s} {'switches/call':>14s} {'wall us/call':>13s}",
    ]
    runs_of: dict[str, int] = {}
    for run in results:
        runs_of[run.kind] = runs_of.get(run.kind, 0) + 1
        lines.append(f"{run.kind:8s} {runs_of[run.kind]:4d} {run.cpu_us_per_call:12.0f} {run.switches_per_call:14.1f} {run.wall_us_per_call:13.0f}")
    load = os.getloadavg()
    lines.append(f"load average at the end: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} CPUs; grpcio {grpc.__version__}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.rpc_floor", description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--calls", type=int, default=DEFAULT_CALLS, help=f"measured calls per run (default {DEFAULT_CALLS})")
    parser.add_argument("--runs", type=int, default=DEFAULT_RUNS, help=f"runs per server kind (default {DEFAULT_RUNS})")
    parser.add_argument("--servers", default=",".join(SERVER_KINDS), help="comma-separated server kinds: sync, aio (default both)")
    parser.add_argument("--serve", choices=SERVER_KINDS, help=argparse.SUPPRESS)  # the server subprocess
    parser.add_argument("--port", type=int, default=0, help=argparse.SUPPRESS)
    options = parser.parse_args(argv)
    if options.serve:
        serve(options.serve, options.port)
        return 0
    kinds = [kind.strip() for kind in options.servers.split(",") if kind.strip()]
    unknown = [kind for kind in kinds if kind not in SERVER_KINDS]
    if unknown or options.calls < 1 or options.runs < 1:
        parser.error(f"--servers takes {', '.join(SERVER_KINDS)}; --calls and --runs at least 1")
    results = [run for kind in kinds for run in measure(kind, options.calls, options.runs)]
    print(report(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())

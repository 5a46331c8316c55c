"""``python -m bench flood``: issue 12's bounded cost per request, as a well-behaved tenant sees it.

One broker process, run as the control plane runs it (``security.required``, two tenants with
a cluster key each, pushed through its Admin service). The well-behaved tenant produces one
small record at a time with the SDK (acks=all, linger.ms 0) and times each produce until its
acknowledgement; first alone, then while the flooding tenant sends maximum-size Produce
requests (``max.request.size`` of record bytes: eight batches just under a megabyte, one per
partition) from several threads, back to back. A flood request refused for lack of room in the
broker's request budget (``queued.max.request.bytes``; THROTTLING_QUOTA_EXCEEDED) is sent again
after 10 ms, as the SDK would retry it.

The table: the well-behaved tenant's p50 and p99 alone and under the flood, the ratio of the
two, the flood's accepted and refused requests per second, and the broker's peak resident
memory (VmRSS, sampled every 10 ms) in each phase. Figures are medians over runs (peak RSS: the
largest). Peers are not measured: Redis Streams and NATS have neither tenants nor this limit.

``--broker-config KEY=VALUE`` passes broker settings, so that the same flood can be measured
with, say, ``queued.max.request.bytes`` raised out of the way.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import grpc
from rich.console import Console
from rich.table import Table

from bench import flood_sender
from bench.broker_launcher import BrokerStartError, LocalBroker
from bench.measurements import BYTES_PER_MEBIBYTE, LatencySummary
from bench.report import machine_description
from bench.tenant_access import TenantKey, every_topic_request
from grpc_protos.weir.v1 import admin_pb2, admin_pb2_grpc, broker_pb2
from server_runtime.lifeline import spawn
from weir import Producer
from weir.errors import KafkaException

INTERNAL_TOKEN = "bench-flood-internal-token"
FLOODER = ("tn-benchflood", "User:sa-flood", "BENCHFLOODKEY", "bench-flood-secret")  # tenant, principal, key, secret
NEIGHBOUR = ("tn-benchquiet", "User:sa-quiet", "BENCHQUIETKEY", "bench-quiet-secret")
NEIGHBOUR_TOPIC = "orders"
NEIGHBOUR_RECORD_BYTES = 100
DEFAULT_MAX_REQUEST_BYTES = 8 * 1024 * 1024  # the broker's default max.request.size
RSS_SAMPLE_SECONDS = 0.010
REPOSITORY = Path(__file__).resolve().parents[1]
DEFAULT_SECONDS = 10.0
DEFAULT_THREADS = 4
DEFAULT_RUNS = 3
QUICK_SECONDS = 2.0


class FloodRunError(Exception):
    """A run could not be measured (the broker, its provisioning or a produce failed); the message says which."""

    retriable = False


@dataclass
class PhaseSample:
    """One phase of one run: the well-behaved tenant's latencies and what the broker went through."""

    latencies_ns: list[int]
    seconds: float
    peak_rss_bytes: int
    flood_accepted: int = 0
    flood_refused: int = 0

    @property
    def latency(self) -> LatencySummary:
        return LatencySummary.from_nanoseconds(self.latencies_ns)


@dataclass
class FloodSamples:
    alone: list[PhaseSample] = field(default_factory=list)
    flooded: list[PhaseSample] = field(default_factory=list)


class SecuredLocalBroker(LocalBroker):
    """A :class:`LocalBroker` started as the control plane starts one: an internal token, ``security.required``."""

    def __init__(self, configs: Mapping[str, str]) -> None:
        super().__init__()
        self.configs = {"security.required": "true", "offsets.topic.num.partitions": "1", **configs}
        self.token_path = self.directory / "internal-token"

    def command(self) -> list[str]:
        self.token_path.write_text(INTERNAL_TOKEN, encoding="utf-8")
        self.token_path.chmod(0o600)
        options = [part for key, value in self.configs.items() for part in ("--config", f"{key}={value}")]
        return [*super().command(), "--internal-token-file", str(self.token_path), *options]

    @property
    def pid(self) -> int:
        assert self._process is not None, "the broker is not started"
        return self._process.pid


def rss_bytes(pid: int) -> int:
    """The resident memory of process ``pid`` (VmRSS), 0 when it cannot be read."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        return 0
    return 0


class RssPeak:
    """The largest VmRSS of a process while the block runs, sampled every ``sample_seconds``."""

    def __init__(self, pid: int, sample_seconds: float = RSS_SAMPLE_SECONDS) -> None:
        self._pid = pid
        self._sample_seconds = sample_seconds
        self.before = rss_bytes(pid)
        self.peak = self.before
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, name="bench-rss", daemon=True)

    def _sample(self) -> None:
        while not self._stop.wait(self._sample_seconds):
            self.peak = max(self.peak, rss_bytes(self._pid))

    def __enter__(self) -> RssPeak:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join(5)
        self.peak = max(self.peak, rss_bytes(self._pid))

    @property
    def growth(self) -> int:
        """How much larger the peak was than the resident memory when the block started."""
        return self.peak - self.before


def provision(address: str) -> None:
    """The map (two tenants' topics, this broker leading) and each tenant's key with rights on its own names."""
    metadata = (("x-weir-internal-token", INTERNAL_TOKEN),)
    with grpc.insecure_channel(address) as channel:
        admin = admin_pb2_grpc.AdminStub(channel)
        port = int(address.rpartition(":")[2])
        topics = [(FLOODER[0], flood_sender.FLOOD_TOPIC, flood_sender.FLOOD_PARTITIONS), (NEIGHBOUR[0], NEIGHBOUR_TOPIC, 1)]
        admin.ApplyPartitions(
            admin_pb2.ApplyPartitionsRequest(
                version=1,
                cluster_id="bench-flood",
                brokers=[broker_pb2.BrokerNode(node_id=1, host="127.0.0.1", port=port)],
                topics=[
                    admin_pb2.TopicAssignment(
                        tenant_id=tenant,
                        name=name,
                        topic_id=f"bench-{tenant}-{name}",
                        partitions=[
                            admin_pb2.PartitionAssignment(partition=index, leader_id=1, leader_epoch=1, replicas=[1], isr=[1]) for index in range(partitions)
                        ],
                    )
                    for tenant, name, partitions in topics
                ],
            ),
            metadata=metadata,
            timeout=30,
        )
        admin.ApplySecurity(
            every_topic_request([TenantKey(*FLOODER), TenantKey(*NEIGHBOUR)]),
            metadata=metadata,
            timeout=30,
        )


class FloodProcess:
    """The flooding tenant (``bench.flood_sender``) in a child process, with its latest counts."""

    def __init__(self, address: str, max_request_bytes: int, threads: int) -> None:
        environment = {**os.environ, flood_sender.KEY_VARIABLE: FLOODER[2], flood_sender.SECRET_VARIABLE: FLOODER[3]}
        command = [sys.executable, "-m", "bench.flood_sender", address, str(max_request_bytes), str(threads)]
        # spawn: the flood ends with the benchmark, even after a kill -9 of it.
        self._process = spawn(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=REPOSITORY, env=environment)
        self.accepted = self.refused = self.failed = 0
        self.failure: str | None = None
        self._reader = threading.Thread(target=self._read, args=(self._process.stdout,), name="bench-flood-reader", daemon=True)
        self._reader.start()

    def _read(self, stream: IO[str]) -> None:
        for line in stream:
            if line.startswith("failure: "):
                self.failure = line.removeprefix("failure: ").strip()
                continue
            accepted, refused, failed = (int(part) for part in line.split())
            self.accepted, self.refused, self.failed = accepted, refused, failed

    def wait_until_sending(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while self.accepted + self.refused + self.failed == 0 and time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise FloodRunError(f"the flood sender exited with status {self._process.returncode}")
            time.sleep(0.05)

    def stop(self) -> None:
        assert self._process.stdin is not None
        self._process.stdin.close()  # the sender's signal to stop
        try:
            self._process.wait(timeout=90)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait(timeout=10)
        self._reader.join(10)

    def __enter__(self) -> FloodProcess:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def neighbour_latencies(producer: Producer, seconds: float) -> list[int]:
    """Produce one record at a time for ``seconds``; each one's produce-to-acknowledgement time in ns."""
    value = b"q" * NEIGHBOUR_RECORD_BYTES
    latencies: list[int] = []
    errors: list[str] = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:  # bounded by the deadline: each flush waits at most 30 s
        started = time.perf_counter_ns()
        producer.produce(NEIGHBOUR_TOPIC, value, on_delivery=lambda error, message: error and errors.append(error.str()))
        if producer.flush(30) != 0:
            raise FloodRunError("a well-behaved produce was not acknowledged within 30 s")
        latencies.append(time.perf_counter_ns() - started)
    if errors:
        raise FloodRunError(f"{len(errors)} well-behaved produces failed, the first: {errors[0]}")
    return latencies


def measure(broker: SecuredLocalBroker, runs: int, seconds: float, threads: int, max_request_bytes: int, console: Console) -> FloodSamples:
    """``runs`` pairs of phases (alone, then under the flood) against ``broker``."""
    samples = FloodSamples()
    producer = Producer(
        {
            "bootstrap.servers": broker.address,
            "sasl.username": NEIGHBOUR[2],
            "sasl.password": NEIGHBOUR[3],
            "acks": "all",
            "linger.ms": 0,
        }
    )
    try:
        neighbour_latencies(producer, min(seconds, 1.0))  # warm-up: connections, metadata, producer id
        for run in range(1, runs + 1):
            with RssPeak(broker.pid) as rss:
                started = time.monotonic()
                latencies = neighbour_latencies(producer, seconds)
            samples.alone.append(PhaseSample(latencies, time.monotonic() - started, rss.peak))
            with RssPeak(broker.pid) as rss, FloodProcess(broker.address, max_request_bytes, threads) as flood:
                flood.wait_until_sending(timeout=30)  # the flood reaches its pace before the timing starts
                started = time.monotonic()
                accepted_before, refused_before = flood.accepted, flood.refused
                latencies = neighbour_latencies(producer, seconds)
                elapsed = time.monotonic() - started
                accepted, refused = flood.accepted - accepted_before, flood.refused - refused_before
            if flood.failed:
                raise FloodRunError(f"{flood.failed} flood requests failed otherwise than by the budget, the first: {flood.failure}")
            samples.flooded.append(PhaseSample(latencies, elapsed, rss.peak, accepted, refused))
            console.print(
                f"flood: run {run} of {runs}: p99 alone {samples.alone[-1].latency.p99_ms:.1f} ms, "
                f"under the flood {samples.flooded[-1].latency.p99_ms:.1f} ms ({accepted} flood requests accepted, {refused} refused)",
                markup=False,
            )
    except KafkaException as error:
        raise FloodRunError(f"the well-behaved producer failed: {error}") from None
    finally:
        producer.close(10)
    return samples


def _median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


def p99_ratio(samples: FloodSamples) -> float | None:
    """Median p99 under the flood over median p99 alone; None without both phases."""
    if not samples.alone or not samples.flooded:
        return None
    alone = _median([sample.latency.p99_ms for sample in samples.alone])
    return _median([sample.latency.p99_ms for sample in samples.flooded]) / alone if alone > 0 else None


def results_table(samples: FloodSamples, threads: int, max_request_bytes: int, command: str) -> Table:
    table = Table(
        title=(
            f"A well-behaved tenant's produce latency (one {NEIGHBOUR_RECORD_BYTES} B record per request, acks=all) alone and while "
            f"another tenant floods the broker with {max_request_bytes / BYTES_PER_MEBIBYTE:.0f} MiB Produce requests from {threads} threads"
        ),
        caption=f"{command}\nmedians over runs; peak RSS: the largest over runs; refused: THROTTLING_QUOTA_EXCEEDED for lack of room in queued.max.request.bytes, sent again after 10 ms",
    )
    for column in ("phase", "runs", "produces", "p50 ms", "p99 ms", "p99 / alone", "flood accepted/s", "flood refused/s", "broker peak RSS MiB"):
        table.add_column(column, justify="left" if column == "phase" else "right")
    alone_p99 = _median([sample.latency.p99_ms for sample in samples.alone]) if samples.alone else None
    for label, phase in (("alone", samples.alone), ("under flood", samples.flooded)):
        if not phase:
            table.add_row(label, "0", *["-"] * 7)
            continue
        p99 = _median([sample.latency.p99_ms for sample in phase])
        flooded = label != "alone"
        table.add_row(
            label,
            str(len(phase)),
            f"{_median([len(sample.latencies_ns) for sample in phase]):,.0f}",
            f"{_median([sample.latency.p50_ms for sample in phase]):,.1f}",
            f"{p99:,.1f}",
            f"{p99 / alone_p99:,.2f}x" if alone_p99 else "-",
            f"{_median([sample.flood_accepted / sample.seconds for sample in phase]):,.1f}" if flooded else "-",
            f"{_median([sample.flood_refused / sample.seconds for sample in phase]):,.1f}" if flooded else "-",
            f"{max(sample.peak_rss_bytes for sample in phase) / BYTES_PER_MEBIBYTE:,.0f}",
        )
    return table


def main(runs: int, seconds: float, threads: int, broker_configs: Mapping[str, str], console: Console) -> int:
    """Start a secured broker, measure, print the table; 1 on any failure."""
    max_request_bytes = int(broker_configs.get("max.request.size", DEFAULT_MAX_REQUEST_BYTES))
    samples = FloodSamples()
    failure = None
    try:
        with SecuredLocalBroker(broker_configs) as broker:
            try:
                provision(broker.address)
                samples = measure(broker, runs, seconds, threads, max_request_bytes, console)
            except (FloodRunError, grpc.RpcError) as error:
                failure = str(error)
                console.print(broker.log_tail(), markup=False, highlight=False)
    except BrokerStartError as error:
        failure = str(error)
    settings = "".join(f" --broker-config {key}={value}" for key, value in broker_configs.items())
    command = f"python -m bench flood --runs {runs} --seconds {seconds:g} --threads {threads}{settings}"
    console.print(results_table(samples, threads, max_request_bytes, command))
    console.print(machine_description(malloc_tuned=False), markup=False)
    ratio = p99_ratio(samples)
    console.print(f"p99 under the flood / p99 alone: {ratio:.2f}" if ratio is not None else "p99 under the flood / p99 alone: not measured", markup=False)
    if failure is not None:
        console.print(f"failure: {failure}", markup=False)
        return 1
    return 0

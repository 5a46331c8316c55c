"""The sequential acks=all round trip on RF=3: one record produced, acknowledged, then the next.

``python -m bench.replication_round_trip [--records 2000] [--runs 3] [--warmup 200] [--bare] [--stages]`` starts a
three-broker stack (:class:`bench.stack.LocalStack`), creates a one-partition topic with
replication factor 3 and min.insync.replicas=2, and produces one record at a time through the
SDK (acks=all, idempotent, ``linger.ms=0``), waiting for each acknowledgement (``flush``)
before producing the next, as a transactional producer's AddPartitionsToTxn, Produce and
EndTxn follow each other. Each record's time is produce() to its delivery report, so it holds
the whole replication round trip on the leader: the append, the wake-up of the followers'
parked fetches, their answers, the followers' appends and next fetches, the high watermark's
advance and the acks=all waiter's wake-up. An RF=1 acks=1 topic is measured beside it in the
same stack, alternating, so that the replication's own share can be read off.

``--bare`` runs on three bare broker processes (:class:`bench.replicated_brokers.ReplicatedBrokers`,
no control plane: seconds to start, and none of the stack's other processes on the machine)
instead. ``--stages`` also splits the RF=3 round trip into its stages (leader append, the
followers' fetch wake-up, answer, append and next fetch, the high watermark, the acks=all
wake-up), from stage stamps the brokers write when started with ``WEIR_REPLICATION_TRACE``
(see :mod:`bench.replication_stages`).

The report gives p50 / p99 / p99.9 per workload over all runs' records (the first ``--warmup``
records of each run are not counted), the three brokers' CPU time per record (user + system,
from ``/proc``, warm-up included: a figure the machine's load sways less than latency) and that of
the busiest broker alone (per run: the partition's leader), that broker's context switches per
record (every thread's, voluntary and not: each is a thread hand-off or a wait for the interpreter
lock, and a figure that the machine's load sways less than latency and CPU), and the machine's load
average.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console

from bench import replication_stages
from bench.broker_launcher import BrokerStartError
from bench.broker_sampler import process_cpu_seconds
from bench.measurements import LatencySummary
from bench.replicated_brokers import ReplicatedBrokers
from bench.replicated_topics import TopicSetupError, create_topic, wait_until_healthy
from bench.rpc_floor import context_switches
from bench.stack import ApiClient, LocalStack, StackError
from weir import Producer
from weir.admin import AdminClient
from weir.message import Message

TOPIC_PREFIX = "demo-round-trip"  # the demo service account may write topics starting with "demo"
TOPIC_READY_TIMEOUT_SECONDS = 60.0
DELIVERY_TIMEOUT_SECONDS = 30.0  # one record's acknowledgement
DEFAULT_RECORDS = 2000
DEFAULT_RUNS = 3
DEFAULT_WARMUP = 200
RECORD = b"x" * 100
BROKERS = (1, 2, 3)


@dataclass(frozen=True)
class RoundTripWorkload:
    label: str
    replication_factor: int
    acks: str
    idempotence: bool
    configs: tuple[tuple[str, str], ...] = ()


REPLICATED = RoundTripWorkload("RF=3 acks=all", 3, "all", True, (("min.insync.replicas", "2"),))
UNREPLICATED = RoundTripWorkload("RF=1 acks=1", 1, "1", False)
WORKLOADS = (REPLICATED, UNREPLICATED)


class RoundTripError(Exception):
    """A record was not acknowledged, or acknowledged with an error; the message says which."""

    retriable = False


def sequential_round_trips(producer: Producer, topic: str, records: int, spans: dict[int, tuple[int, int]] | None = None) -> list[int]:
    """Produce ``records`` records one at a time, each after the previous one's delivery report; each one's ns.

    ``spans``: also filled with each record's offset -> (produce() called, delivery report), in
    ``time.monotonic_ns``, the clock of the brokers' stage stamps (bench.replication_stages).
    """
    failures: list[str] = []
    offsets: list[int] = []

    def on_delivery(error: object, message: Message | None) -> None:
        if error is not None:
            failures.append(str(error))
        elif message is not None and (offset := message.offset()) is not None:
            offsets.append(offset)

    latencies = []
    for _ in range(records):
        started = time.monotonic_ns()
        producer.produce(topic, RECORD, on_delivery=on_delivery)
        if producer.flush(DELIVERY_TIMEOUT_SECONDS) != 0:
            raise RoundTripError(f"{topic}: a record was not acknowledged within {DELIVERY_TIMEOUT_SECONDS:g} s")
        delivered = time.monotonic_ns()
        latencies.append(delivered - started)
        if failures:
            raise RoundTripError(f"{topic}: {failures[0]}")
        if spans is not None and offsets:
            spans[offsets[-1]] = (started, delivered)
    return latencies


@dataclass
class Samples:
    """Every counted record's round trip in ns, and the brokers' CPU seconds over every record produced (warm-up included)."""

    latencies_ns: list[int] = field(default_factory=list)
    broker_cpu_seconds: float = 0.0
    produced: int = 0
    # Per run, the CPU of the broker that used the most (the partition's leader: it serves the
    # Produce and every follower's fetch), summed over runs.
    busiest_broker_cpu_seconds: float = 0.0
    busiest_broker_switches: int = 0  # that broker's context switches, summed over runs


@dataclass
class Stand:
    """Where the runs go: the brokers (a ``make up`` stack, or bare processes with ``--bare``), as the measurement needs them."""

    client_config: dict[str, Any]
    create_topic: Callable[[str, RoundTripWorkload], None]  # returns once the topic serves
    broker_pids: Callable[[], dict[int, int]]
    # Filled with the replicated workload's counted records, by topic: offset -> (produce() called, delivery), monotonic ns.
    spans: dict[str, dict[int, tuple[int, int]]] | None = None


def stack_stand(stack: LocalStack, admin: AdminClient) -> Stand:
    assert stack.credentials is not None
    api = ApiClient.for_stack(stack.credentials)

    def create(topic: str, workload: RoundTripWorkload) -> None:
        create_topic(api, topic, 1, workload.replication_factor, dict(workload.configs))
        wait_until_healthy(admin, topic, 1, TOPIC_READY_TIMEOUT_SECONDS)

    return Stand(stack.credentials.client_config(), create, lambda: {node_id: stack.broker_pid(node_id) for node_id in BROKERS})


def bare_stand(brokers: ReplicatedBrokers) -> Stand:
    def create(topic: str, workload: RoundTripWorkload) -> None:
        brokers.create_topic(topic, replication_factor=workload.replication_factor, configs=dict(workload.configs))

    return Stand(brokers.client_config(), create, lambda: {node_id: brokers.pid(node_id) for node_id in BROKERS})


def brokers_cpu_seconds(stand: Stand) -> dict[int, float]:
    """User + system CPU seconds each broker has used so far (a broker gone counts 0)."""
    return {node_id: process_cpu_seconds(pid) or 0.0 for node_id, pid in stand.broker_pids().items()}


def brokers_switches(stand: Stand) -> dict[int, int]:
    """Context switches of every thread of each broker so far (a broker gone counts 0)."""
    counts = {}
    for node_id, pid in stand.broker_pids().items():
        try:
            counts[node_id] = context_switches(pid)
        except OSError:
            counts[node_id] = 0
    return counts


def measure(stand: Stand, runs: int, records: int, warmup: int, console: Console) -> dict[RoundTripWorkload, Samples]:
    """``runs`` alternating runs of both workloads, each on a fresh topic; each workload's samples."""
    samples = {workload: Samples() for workload in WORKLOADS}
    for run in range(1, runs + 1):
        for workload in WORKLOADS if run % 2 else tuple(reversed(WORKLOADS)):
            topic = f"{TOPIC_PREFIX}-rf{workload.replication_factor}-{uuid.uuid4().hex[:8]}"
            stand.create_topic(topic, workload)
            producer = Producer({**stand.client_config, "acks": workload.acks, "enable.idempotence": workload.idempotence, "linger.ms": 0})
            spans: dict[int, tuple[int, int]] | None = {} if stand.spans is not None and workload is REPLICATED else None
            try:
                cpu_before, switches_before = brokers_cpu_seconds(stand), brokers_switches(stand)
                latencies = sequential_round_trips(producer, topic, warmup + records, spans)[warmup:]
                cpu_after, switches_after = brokers_cpu_seconds(stand), brokers_switches(stand)
                used = {node_id: cpu_after[node_id] - cpu_before[node_id] for node_id in cpu_before}
                busiest = max(used, key=lambda node_id: used[node_id])
                samples[workload].broker_cpu_seconds += sum(used.values())
                samples[workload].busiest_broker_cpu_seconds += used[busiest]
                samples[workload].busiest_broker_switches += switches_after.get(busiest, 0) - switches_before.get(busiest, 0)
                samples[workload].produced += warmup + records
            finally:
                producer.close()
            if spans is not None and stand.spans is not None:
                stand.spans[topic] = dict(sorted(spans.items())[warmup:])
            samples[workload].latencies_ns.extend(latencies)
            summary = LatencySummary.from_nanoseconds(latencies)
            console.print(f"run {run}: {workload.label}: p50 {summary.p50_ms:.3f} ms, p99 {summary.p99_ms:.3f} ms", markup=False)
    return samples


def report(samples: dict[RoundTripWorkload, Samples], runs: int, records: int) -> str:
    lines = [
        f"sequential one-record produce round trip, {runs} run(s) of {records} records per workload (SDK, linger.ms=0, one partition)",
        f"{'workload':16s} {'p50 ms':>8s} {'p99 ms':>8s} {'p99.9 ms':>9s} {'records':>8s} {'broker CPU us/record':>21s} {'busiest broker':>15s}"
        f" {'its switches/record':>20s}",
    ]
    for workload, sample in samples.items():
        if sample.latencies_ns:
            summary = LatencySummary.from_nanoseconds(sample.latencies_ns)
            cpu_per_record_us = sample.broker_cpu_seconds / sample.produced * 1e6
            busiest_per_record_us = sample.busiest_broker_cpu_seconds / sample.produced * 1e6
            switches_per_record = sample.busiest_broker_switches / sample.produced
            lines.append(
                f"{workload.label:16s} {summary.p50_ms:8.3f} {summary.p99_ms:8.3f} {summary.p999_ms:9.3f} {summary.count:8d}"
                f" {cpu_per_record_us:21.0f} {busiest_per_record_us:15.0f} {switches_per_record:20.1f}"
            )
    load = os.getloadavg()
    lines.append(f"load average at the end: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} CPUs")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.replication_round_trip", description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--records", type=int, default=DEFAULT_RECORDS, help=f"counted records per run and workload (default {DEFAULT_RECORDS})")
    parser.add_argument("--runs", type=int, default=DEFAULT_RUNS, help=f"runs (default {DEFAULT_RUNS})")
    parser.add_argument("--warmup", type=int, default=DEFAULT_WARMUP, help=f"records per run not counted (default {DEFAULT_WARMUP})")
    parser.add_argument("--bare", action="store_true", help="three bare broker processes (bench.replicated_brokers) instead of a make up stack")
    parser.add_argument(
        "--stages", action="store_true", help="also split the RF=3 round trip into stages (brokers' stage stamps; see bench.replication_stages)"
    )
    arguments = parser.parse_args(argv)
    if arguments.records <= 0 or arguments.runs <= 0 or arguments.warmup < 0:
        parser.error("--records and --runs must be positive, --warmup not negative")
    console = Console()
    samples: dict[RoundTripWorkload, Samples] = {}
    with tempfile.TemporaryDirectory(prefix="weir-round-trip-stamps-") as stamps_directory:
        environment = {replication_stages.TRACE_VARIABLE: str(Path(stamps_directory) / "stamps")} if arguments.stages else {}
        spans: dict[str, dict[int, tuple[int, int]]] | None = {} if arguments.stages else None
        try:
            samples = _run(arguments, environment, spans, console)
        except (StackError, TopicSetupError, RoundTripError, BrokerStartError) as error:
            console.print(f"failure: {error}", markup=False)
            return 1
        print(report(samples, arguments.runs, arguments.records))
        if spans is not None:
            stamps = replication_stages.read_stamps(Path(stamps_directory).glob("stamps.*"))
            result = replication_stages.Breakdown()
            for topic, topic_spans in spans.items():
                result = replication_stages.merge(result, replication_stages.breakdown(stamps, topic, topic_spans))
            print(replication_stages.report(result))
    return 0


def _run(
    arguments: argparse.Namespace, environment: dict[str, str], spans: dict[str, dict[int, tuple[int, int]]] | None, console: Console
) -> dict[RoundTripWorkload, Samples]:
    """The runs on the stand the arguments ask for; the brokers have stopped (and written their stamps) when it returns."""
    if arguments.bare:
        with ReplicatedBrokers(environment=environment) as brokers:
            stand = bare_stand(brokers)
            stand.spans = spans
            return measure(stand, arguments.runs, arguments.records, arguments.warmup, console)
    with LocalStack(console, "replication-round-trip", settings=environment) as stack:
        assert stack.credentials is not None
        admin = AdminClient(stack.credentials.client_config())
        try:
            stand = stack_stand(stack, admin)
            stand.spans = spans
            return measure(stand, arguments.runs, arguments.records, arguments.warmup, console)
        finally:
            admin.close()


if __name__ == "__main__":
    raise SystemExit(main())

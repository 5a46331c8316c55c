"""The sequential acks=all round trip on RF=3: one record produced, acknowledged, then the next.

``python -m bench.replication_round_trip [--records 2000] [--runs 3] [--warmup 200]`` starts a
three-broker stack (:class:`bench.stack.LocalStack`), creates a one-partition topic with
replication factor 3 and min.insync.replicas=2, and produces one record at a time through the
SDK (acks=all, idempotent, ``linger.ms=0``), waiting for each acknowledgement (``flush``)
before producing the next, as a transactional producer's AddPartitionsToTxn, Produce and
EndTxn follow each other. Each record's time is produce() to its delivery report, so it holds
the whole replication round trip on the leader: the append, the wake-up of the followers'
parked fetches, their answers, the followers' appends and next fetches, the high watermark's
advance and the acks=all waiter's wake-up. An RF=1 acks=1 topic is measured beside it in the
same stack, alternating, so that the replication's own share can be read off.

The report gives p50 / p99 / p99.9 per workload over all runs' records (the first ``--warmup``
records of each run are not counted), the three brokers' CPU time per record (user + system,
from ``/proc``, warm-up included: a figure the machine's load sways less than latency) and that of
the busiest broker alone (per run: the partition's leader), and the machine's load average.
"""

from __future__ import annotations

import argparse
import os
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field

from rich.console import Console

from bench.broker_sampler import process_cpu_seconds
from bench.measurements import LatencySummary
from bench.replicated_topics import TopicSetupError, create_topic, wait_until_healthy
from bench.stack import ApiClient, LocalStack, StackError
from weir import Producer
from weir.admin import AdminClient

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


def sequential_round_trips(producer: Producer, topic: str, records: int) -> list[int]:
    """Produce ``records`` records one at a time, each after the previous one's delivery report; each one's ns."""
    failures: list[str] = []

    def on_delivery(error: object, _message: object) -> None:
        if error is not None:
            failures.append(str(error))

    latencies = []
    for _ in range(records):
        started = time.perf_counter_ns()
        producer.produce(topic, RECORD, on_delivery=on_delivery)
        if producer.flush(DELIVERY_TIMEOUT_SECONDS) != 0:
            raise RoundTripError(f"{topic}: a record was not acknowledged within {DELIVERY_TIMEOUT_SECONDS:g} s")
        latencies.append(time.perf_counter_ns() - started)
        if failures:
            raise RoundTripError(f"{topic}: {failures[0]}")
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


def brokers_cpu_seconds(stack: LocalStack) -> dict[int, float]:
    """User + system CPU seconds each of the stack's brokers has used so far (a broker gone counts 0)."""
    return {node_id: process_cpu_seconds(stack.broker_pid(node_id)) or 0.0 for node_id in BROKERS}


def measure(stack: LocalStack, runs: int, records: int, warmup: int, console: Console) -> dict[RoundTripWorkload, Samples]:
    """``runs`` alternating runs of both workloads, each on a fresh topic; each workload's samples."""
    assert stack.credentials is not None
    credentials = stack.credentials
    api = ApiClient.for_stack(credentials)
    admin = AdminClient(credentials.client_config())
    samples = {workload: Samples() for workload in WORKLOADS}
    try:
        for run in range(1, runs + 1):
            for workload in WORKLOADS if run % 2 else tuple(reversed(WORKLOADS)):
                topic = f"{TOPIC_PREFIX}-rf{workload.replication_factor}-{uuid.uuid4().hex[:8]}"
                create_topic(api, topic, 1, workload.replication_factor, dict(workload.configs))
                wait_until_healthy(admin, topic, 1, TOPIC_READY_TIMEOUT_SECONDS)
                producer = Producer({**credentials.client_config(), "acks": workload.acks, "enable.idempotence": workload.idempotence, "linger.ms": 0})
                try:
                    cpu_before = brokers_cpu_seconds(stack)
                    latencies = sequential_round_trips(producer, topic, warmup + records)[warmup:]
                    cpu_after = brokers_cpu_seconds(stack)
                    used = [cpu_after[node_id] - cpu_before[node_id] for node_id in BROKERS]
                    samples[workload].broker_cpu_seconds += sum(used)
                    samples[workload].busiest_broker_cpu_seconds += max(used)
                    samples[workload].produced += warmup + records
                finally:
                    producer.close()
                samples[workload].latencies_ns.extend(latencies)
                summary = LatencySummary.from_nanoseconds(latencies)
                console.print(f"run {run}: {workload.label}: p50 {summary.p50_ms:.3f} ms, p99 {summary.p99_ms:.3f} ms", markup=False)
    finally:
        admin.close()
    return samples


def report(samples: dict[RoundTripWorkload, Samples], runs: int, records: int) -> str:
    lines = [
        f"sequential one-record produce round trip, {runs} run(s) of {records} records per workload (SDK, linger.ms=0, one partition)",
        f"{'workload':16s} {'p50 ms':>8s} {'p99 ms':>8s} {'p99.9 ms':>9s} {'records':>8s} {'broker CPU us/record':>21s} {'busiest broker':>15s}",
    ]
    for workload, sample in samples.items():
        if sample.latencies_ns:
            summary = LatencySummary.from_nanoseconds(sample.latencies_ns)
            cpu_per_record_us = sample.broker_cpu_seconds / sample.produced * 1e6
            busiest_per_record_us = sample.busiest_broker_cpu_seconds / sample.produced * 1e6
            lines.append(
                f"{workload.label:16s} {summary.p50_ms:8.3f} {summary.p99_ms:8.3f} {summary.p999_ms:9.3f} {summary.count:8d}"
                f" {cpu_per_record_us:21.0f} {busiest_per_record_us:15.0f}"
            )
    load = os.getloadavg()
    lines.append(f"load average at the end: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} CPUs")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.replication_round_trip", description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--records", type=int, default=DEFAULT_RECORDS, help=f"counted records per run and workload (default {DEFAULT_RECORDS})")
    parser.add_argument("--runs", type=int, default=DEFAULT_RUNS, help=f"runs (default {DEFAULT_RUNS})")
    parser.add_argument("--warmup", type=int, default=DEFAULT_WARMUP, help=f"records per run not counted (default {DEFAULT_WARMUP})")
    arguments = parser.parse_args(argv)
    if arguments.records <= 0 or arguments.runs <= 0 or arguments.warmup < 0:
        parser.error("--records and --runs must be positive, --warmup not negative")
    console = Console()
    samples: dict[RoundTripWorkload, Samples] = {}
    try:
        with LocalStack(console, "replication-round-trip") as stack:
            samples = measure(stack, arguments.runs, arguments.records, arguments.warmup, console)
    except (StackError, TopicSetupError, RoundTripError) as error:
        console.print(f"failure: {error}", markup=False)
        return 1
    print(report(samples, arguments.runs, arguments.records))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

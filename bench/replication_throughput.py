"""``python -m bench replication-throughput``: issue 4's cost of replication, as a ratio.

The figure: produce throughput to a topic with replication factor 3 and acks=all
(min.insync.replicas=2; the producer idempotent, as Kafka's default producer is with
acks=all) divided by the throughput to a topic with replication factor 1 and acks=1 (no
idempotence, as ``python -m bench produce``), both measured in the same stack
(:class:`bench.stack.LocalStack`, three brokers) with the same records. Target: at least 0.4.

Every run produces the same workload once to each kind of topic, each time to a fresh
one-partition topic, the order alternating from run to run so that a machine slowly getting
busier does not favour one side. The producer and its measurement are those of
``python -m bench produce`` (:meth:`bench.systems.weir_system.WeirSystem.produce_to`): a
warm-up record delivered before the clock starts (librdkafka's idempotent producer asks for
its producer id only ~500 ms after it starts, which the RF=3 row used to time), then time
from the first produce() to the last acknowledgement, then a check that the partition's end
offset equals the records sent plus the warm-up. The ratio is of the medians over runs.

Both front doors are measured: the SDK over gRPC, and librdkafka (confluent-kafka) over the
brokers' Kafka listeners with SASL/PLAIN and the same producer settings. The librdkafka RF=3
acks=all row is also held against issue 14's absolute target (Kafka's published 3-replica
acks=all figure, LinkedIn 2014).
"""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from rich.console import Console
from rich.table import Table

from bench.measurements import ThroughputSample, median_figures
from bench.payloads import value_pool
from bench.replicated_topics import TopicSetupError, create_topic, wait_until_healthy
from bench.report import machine_description
from bench.stack import ApiClient, LocalStack, StackError
from bench.systems.base import BenchmarkIntegrityError, SystemUnavailable
from bench.systems.weir_system import LIBRDKAFKA, SDK, ClientLibrary, WeirOptions, WeirSystem
from weir.admin import AdminClient
from weir.errors import KafkaException

RATIO_TARGET = 0.4  # issue 4: RF=3 acks=all produces at least 0.4 times RF=1 acks=1
KAFKA_REPLICATED_TARGET = 421_823  # issue 14: records/s through librdkafka, RF=3 acks=all (Kafka's own figure)
TOPIC_PREFIX = "demo-bench"  # the demo service account may write topics starting with "demo"
TOPIC_READY_TIMEOUT_SECONDS = 60.0
DEFAULT_RECORDS = 200_000
DEFAULT_RECORD_BYTES = 100
DEFAULT_RUNS = 3
QUICK_RECORDS = 20_000


@dataclass(frozen=True)
class Workload:
    """One side of the ratio: how its topic is replicated and how the producer is acknowledged."""

    label: str
    replication_factor: int
    acks: str
    idempotence: bool
    topic_configs: tuple[tuple[str, str], ...] = ()  # (name, value) pairs: a workload is a dictionary key
    library: ClientLibrary = SDK

    @property
    def row_label(self) -> str:
        return self.label if self.library == SDK else f"{self.label} (librdkafka)"

    def topic_name(self, run: int) -> str:
        door = "" if self.library == SDK else "-kafka"
        return f"{TOPIC_PREFIX}-rf{self.replication_factor}{door}-run{run}"

    def through(self, library: ClientLibrary) -> Workload:
        return dataclasses.replace(self, library=library)


UNREPLICATED = Workload("RF=1 acks=1", replication_factor=1, acks="1", idempotence=False)
REPLICATED = Workload("RF=3 acks=all", replication_factor=3, acks="all", idempotence=True, topic_configs=(("min.insync.replicas", "2"),))
KAFKA_UNREPLICATED = UNREPLICATED.through(LIBRDKAFKA)
KAFKA_REPLICATED = REPLICATED.through(LIBRDKAFKA)
WORKLOADS = (UNREPLICATED, REPLICATED, KAFKA_UNREPLICATED, KAFKA_REPLICATED)


class ThroughputRunError(Exception):
    """A run could not be measured (its topic, its producer or its records); the message says which."""

    retriable = False


def run_order(run: int) -> tuple[Workload, ...]:
    """The workloads of run ``run`` (1-based) in the order they are measured: alternating."""
    return WORKLOADS if run % 2 == 1 else tuple(reversed(WORKLOADS))


def throughput_ratio(samples: Mapping[Workload, Sequence[ThroughputSample]], library: ClientLibrary = SDK) -> float | None:
    """Median records/s of REPLICATED over that of UNREPLICATED through ``library``; None when either has no run."""
    replicated, unreplicated = samples.get(REPLICATED.through(library), ()), samples.get(UNREPLICATED.through(library), ())
    if not replicated or not unreplicated:
        return None
    return statistics.median(sample.records_per_second for sample in replicated) / statistics.median(sample.records_per_second for sample in unreplicated)


def verdict(ratio: float | None, library: ClientLibrary = SDK) -> str:
    door = "" if library == SDK else " (librdkafka)"
    if ratio is None:
        return f"RF=3 acks=all / RF=1 acks=1{door}: not measured, target >= {RATIO_TARGET:g}: target NOT met"
    met = "met" if ratio >= RATIO_TARGET else "NOT met"
    return f"RF=3 acks=all / RF=1 acks=1{door} (median records/s): {ratio:.2f}, target >= {RATIO_TARGET:g}: target {met}"


def kafka_verdict(samples: Mapping[Workload, Sequence[ThroughputSample]]) -> str:
    """librdkafka's RF=3 acks=all median against issue 14's absolute target."""
    replicated = samples.get(KAFKA_REPLICATED, ())
    if not replicated:
        return f"RF=3 acks=all through librdkafka: not measured, issue 14 target >= {KAFKA_REPLICATED_TARGET:,} records/s: target NOT met"
    median = statistics.median(sample.records_per_second for sample in replicated)
    met = "met" if median >= KAFKA_REPLICATED_TARGET else "NOT met"
    return f"RF=3 acks=all through librdkafka: {median:,.0f} records/s (median), issue 14 target >= {KAFKA_REPLICATED_TARGET:,}: target {met}"


def measure(
    stack: LocalStack, runs: int, records: int, record_bytes: int, delivery: str, console: Console, unavailable: list[str] | None = None
) -> dict[Workload, list[ThroughputSample]]:
    """``runs`` alternating runs of every workload; the samples of each. ThroughputRunError on the first run that fails.

    A front door that cannot be reached (SystemUnavailable) is left out, its reason appended to
    ``unavailable``, and the other one is still measured.
    """
    assert stack.credentials is not None
    credentials = stack.credentials
    api = ApiClient.for_stack(credentials)
    admin = AdminClient(credentials.client_config())
    values = value_pool(record_bytes)
    systems: dict[Workload, WeirSystem] = {}
    for workload in WORKLOADS:
        try:
            systems[workload] = WeirSystem(
                WeirOptions(
                    bootstrap=credentials.bootstrap_servers if workload.library == SDK else credentials.kafka_bootstrap_servers,
                    delivery=delivery,
                    acks=workload.acks,
                    idempotence=workload.idempotence,
                    client_settings=credentials.security_config() if workload.library == SDK else credentials.kafka_security_config(),
                    library=workload.library,
                )
            )
        except SystemUnavailable as error:
            if unavailable is None:
                raise
            unavailable.append(f"{workload.row_label}: {error}")
    samples: dict[Workload, list[ThroughputSample]] = {workload: [] for workload in WORKLOADS}
    try:
        for run in range(1, runs + 1):
            for workload in run_order(run):
                if workload not in systems:
                    continue
                topic = workload.topic_name(run)
                try:
                    create_topic(api, topic, 1, workload.replication_factor, dict(workload.topic_configs))
                    wait_until_healthy(admin, topic, 1, TOPIC_READY_TIMEOUT_SECONDS)
                    sample = systems[workload].produce_to(topic, records, values)
                except (TopicSetupError, BenchmarkIntegrityError, KafkaException) as error:
                    raise ThroughputRunError(f"run {run}, {workload.row_label}: {error}") from None
                samples[workload].append(sample)
                console.print(f"replication-throughput: run {run} of {runs}: {workload.row_label}: {sample.records_per_second:,.0f} records/s", markup=False)
    finally:
        admin.close()
        for system in systems.values():
            system.close()
    return samples


def results_table(samples: Mapping[Workload, Sequence[ThroughputSample]], records: int, record_bytes: int, command: str) -> Table:
    table = Table(
        title=f"Replicated produce throughput: {records:,} records of {record_bytes} B per run, one partition, one producer",
        caption=(
            f"{command}\nRF=1: acks=1, enable.idempotence=false; RF=3: min.insync.replicas=2, acks=all, enable.idempotence=true; "
            "the producer of `python -m bench produce` (batch.size 1,000,000, linger.ms 10); medians over runs"
        ),
    )
    for column in ("workload", "runs", "records/s", "MiB/s", "ack p50 ms", "ack p99 ms"):
        table.add_column(column, justify="left" if column == "workload" else "right")
    for workload in WORKLOADS:
        if not samples.get(workload):
            table.add_row(workload.row_label, "0", "-", "-", "-", "-")
            continue
        figures = median_figures(samples[workload])
        latency = figures.latency
        table.add_row(
            workload.row_label,
            str(figures.runs),
            f"{figures.records_per_second:,.0f}",
            f"{figures.mebibytes_per_second:,.1f}",
            f"{latency.p50_ms:,.1f}" if latency else "-",
            f"{latency.p99_ms:,.1f}" if latency else "-",
        )
    return table


def main(runs: int, records: int, record_bytes: int, delivery: str, console: Console) -> int:
    """Start a stack, measure, print the table and the verdict; 1 on any failure."""
    samples: dict[Workload, list[ThroughputSample]] = {}
    failure = None
    unavailable: list[str] = []
    try:
        with LocalStack(console, "replication-throughput") as stack:
            try:
                samples = measure(stack, runs, records, record_bytes, delivery, console, unavailable)
            except (ThroughputRunError, SystemUnavailable) as error:
                failure = str(error)
                console.print(stack.log_tails(), markup=False, highlight=False)
    except StackError as error:
        failure = str(error)
    if unavailable and failure is None:
        failure = "unavailable, not measured: " + "; ".join(unavailable)
    command = f"python -m bench replication-throughput --runs {runs} --records {records} --record-bytes {record_bytes}"
    console.print(results_table(samples, records, record_bytes, command))
    console.print(machine_description(malloc_tuned=False), markup=False)
    console.print(verdict(throughput_ratio(samples)), markup=False)
    console.print(verdict(throughput_ratio(samples, LIBRDKAFKA), LIBRDKAFKA), markup=False)
    console.print(kafka_verdict(samples), markup=False)
    if failure is not None:
        console.print(f"failure: {failure}", markup=False)
        return 1
    return 0

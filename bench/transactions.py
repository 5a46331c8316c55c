"""``python -m bench transactions``: issue 15's cost of transactions, through librdkafka and Weir's SDK.

Three figures, measured with each client of ``--client`` (librdkafka, i.e. confluent-kafka over
the Kafka listeners, and Weir's SDK over gRPC; both by default) on a
:class:`bench.stack.LocalStack` (three brokers), each run to fresh one-partition topics with
replication factor 3 and min.insync.replicas=2:

- produce throughput of a transactional producer committing every 100 and every 1,000 records,
  beside the idempotent producer's (the baseline: the same records and settings, acks=all,
  ``enable.idempotence``, the batch.size and linger.ms of ``python -m bench produce``, flushing
  only at the end). Each run times the first produce() to the last commit (or flush), set-up
  excluded on both sides (metadata fetched, the transactional producer initialised, the idempotent
  one's warm-up record delivered: librdkafka asks for its producer id only ~500 ms after it
  starts), and checks the partition's end offset: the records plus one marker per transaction
  (plus the idempotent run's warm-up record). The ratio of the
  medians at 1,000 records per transaction is held against the target (>= 0.8), for each client
  against its own idempotent baseline;
- commit latency: the time commit_transaction() takes (the flush of the transaction's
  outstanding records included, as an application sees it), p50 and p99 per run;
- end-to-end latency at read_committed: a producer paced at E2E_RATE records/s commits every
  E2E_RECORDS_PER_TRANSACTION records; a read_committed consumer in the same process measures
  each record from its due time (:mod:`bench.pacing`: the sender's delays count) to when it is
  read, so the figure includes the wait for the transaction's commit (librdkafka only).

Workloads alternate their order from run to run; every figure is the median over ``--runs``.
"""

from __future__ import annotations

import statistics
import threading
import time
from array import array
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rich.console import Console
from rich.table import Table

from bench.measurements import LatencySample, LatencySummary, ThroughputSample, median_figures
from bench.pacing import RatePacer
from bench.payloads import read_stamp, stamped_value, value_pool
from bench.replicated_topics import TopicSetupError, create_topic, wait_until_healthy
from bench.report import machine_description
from bench.stack import ApiClient, Credentials, LocalStack, StackError
from bench.systems.weir_system import LIBRDKAFKA, SDK, WARM_UP_SECONDS, WARM_UP_VALUE, ClientLibrary, WeirOptions
from weir.admin import AdminClient

RATIO_TARGET = 0.8  # issue 15: transactional throughput at 1,000 records per transaction >= 0.8 x idempotent
TOPIC_PREFIX = "demo-bench-txn"  # the demo service account may write topics starting with "demo"
TRANSACTIONAL_ID_PREFIX = "demo-bench-txn"
REPLICATION_FACTOR = 3
TOPIC_CONFIGS = {"min.insync.replicas": "2"}
TOPIC_READY_TIMEOUT_SECONDS = 60.0
CLIENT_SECONDS = 60.0  # longest init_transactions/commit_transaction/flush may take
MARKER_SECONDS = 15.0  # longest the last commit marker may take to be replicated (the high watermark) after the commit returned
DEFAULT_RECORDS = 100_000
QUICK_RECORDS = 3_000
DEFAULT_RECORD_BYTES = 100
DEFAULT_RUNS = 3
E2E_RATE = 1_000  # records/s of the paced end-to-end producer
E2E_RECORDS_PER_TRANSACTION = 50  # a commit every 50 ms at E2E_RATE
DEFAULT_E2E_SECONDS = 10.0
QUICK_E2E_SECONDS = 2.0
E2E_DRAIN_SECONDS = 30.0  # longest the consumer may take to read the last records once the producer is done
POLL_EVERY = 1_000  # produce() calls between two poll(0) (delivery reports served)


@dataclass(frozen=True)
class Client:
    """A client the throughput rows are measured with: its name in ``--client`` and the table, and its library."""

    name: str
    library: ClientLibrary

    def producer_config(self, credentials: Credentials, workload: Workload, run: int) -> dict[str, Any]:
        """acks=all, idempotence, the batching of ``python -m bench produce``; a fresh transactional id for a transactional workload."""
        if self.library == LIBRDKAFKA:
            bootstrap, security = credentials.kafka_bootstrap_servers, credentials.kafka_security_config()
        else:
            bootstrap, security = credentials.bootstrap_servers, credentials.security_config()
        config = WeirOptions(bootstrap=bootstrap, acks="all", idempotence=True, client_settings=security, library=self.library).producer_config()
        if workload.records_per_transaction is not None:
            config["transactional.id"] = f"{workload.topic_name(run, self)}-{time.time_ns()}"
        return config


LIBRDKAFKA_CLIENT = Client("librdkafka", LIBRDKAFKA)
SDK_CLIENT = Client("sdk", SDK)
CLIENTS = {client.name: client for client in (LIBRDKAFKA_CLIENT, SDK_CLIENT)}
DEFAULT_CLIENTS = ("librdkafka", "sdk")


def parse_clients(text: str) -> tuple[str, ...]:
    """``--client``: comma-separated names of CLIENTS, each once; ValueError naming what is wrong."""
    names = tuple(name.strip() for name in text.split(","))
    unknown = [name for name in names if name not in CLIENTS]
    if unknown or not names:
        raise ValueError(f"unknown client {', '.join(map(repr, unknown)) or repr(text)}: choose from {', '.join(CLIENTS)} (comma-separated)")
    if len(set(names)) != len(names):
        raise ValueError(f"a client is named twice in {text!r}")
    return names


class TransactionsRunError(Exception):
    """A run could not be measured (its topic, its producer or its records); the message says which."""

    retriable = False


@dataclass(frozen=True)
class Workload:
    """One throughput row: idempotent (``records_per_transaction`` None) or transactional."""

    label: str
    records_per_transaction: int | None

    def topic_name(self, run: int, client: Client | None = None) -> str:
        kind = "idempotent" if self.records_per_transaction is None else f"txn{self.records_per_transaction}"
        by = "" if client is None or client.library == LIBRDKAFKA else f"-{client.name}"
        return f"{TOPIC_PREFIX}{by}-{kind}-run{run}"


IDEMPOTENT = Workload("idempotent (baseline)", None)
TRANSACTIONAL_100 = Workload("transactional, 100 records/txn", 100)
TRANSACTIONAL_1000 = Workload("transactional, 1,000 records/txn", 1000)
WORKLOADS = (IDEMPOTENT, TRANSACTIONAL_100, TRANSACTIONAL_1000)
E2E_LABEL = f"end to end at read_committed ({E2E_RECORDS_PER_TRANSACTION} records/txn)"


@dataclass(frozen=True)
class RunSample:
    """One throughput run and, for a transactional workload, its commit latencies."""

    throughput: ThroughputSample
    commit_latency: LatencySummary | None


def run_order(run: int) -> tuple[Workload, ...]:
    """The workloads of run ``run`` (1-based) in the order they are measured: alternating."""
    return WORKLOADS if run % 2 == 1 else tuple(reversed(WORKLOADS))


def throughput_ratio(samples: Mapping[Workload, Sequence[RunSample]], workload: Workload = TRANSACTIONAL_1000) -> float | None:
    """Median records/s of ``workload`` over the idempotent baseline's; None when either has no run."""
    measured, baseline = samples.get(workload, ()), samples.get(IDEMPOTENT, ())
    if not measured or not baseline:
        return None
    return statistics.median(s.throughput.records_per_second for s in measured) / statistics.median(s.throughput.records_per_second for s in baseline)


def verdict(ratio: float | None, client: str | None = None) -> str:
    what = f"{client + ': ' if client else ''}transactional (1,000 records/txn) / idempotent (median records/s)"
    if ratio is None:
        return f"{what}: not measured, target >= {RATIO_TARGET:g}: target NOT met"
    return f"{what}: {ratio:.2f}, target >= {RATIO_TARGET:g}: target {'met' if ratio >= RATIO_TARGET else 'NOT met'}"


def producer_config(credentials: Credentials, workload: Workload, run: int) -> dict[str, Any]:
    """librdkafka's settings for ``workload`` (the end-to-end run and the end-offset checks use librdkafka)."""
    return LIBRDKAFKA_CLIENT.producer_config(credentials, workload, run)


class _Deliveries:
    """The first failed delivery report, if any (thread-safe enough: librdkafka calls it from poll/flush)."""

    def __init__(self) -> None:
        self.first_error: Any = None

    def on_delivery(self, error: Any, _message: Any) -> None:
        if error is not None and self.first_error is None:
            self.first_error = error


def _produce(producer: Any, topic: str, value: bytes, deliveries: _Deliveries) -> None:
    while True:
        try:
            producer.produce(topic, value, on_delivery=deliveries.on_delivery)
            return
        except BufferError:  # librdkafka's queue is full: serve delivery reports until there is room
            producer.poll(0.01)


def _commit(producer: Any, commit_latencies_ns: list[int]) -> None:
    started = time.perf_counter_ns()
    producer.commit_transaction(CLIENT_SECONDS)
    commit_latencies_ns.append(time.perf_counter_ns() - started)


def produce_run(
    config: Mapping[str, Any], topic: str, workload: Workload, records: int, values: list[bytes], client: Client = LIBRDKAFKA_CLIENT
) -> tuple[RunSample, int]:
    """Produce ``records`` values to ``topic`` with ``client`` as ``workload`` says; the sample and the untimed offsets besides the records
    (one marker per transaction, or the idempotent producer's warm-up record)."""
    producer = client.library.load().Producer(dict(config))
    per_transaction = workload.records_per_transaction
    deliveries = _Deliveries()
    commit_latencies_ns: list[int] = []
    # Neither side's clock counts its set-up: connections and metadata (both), the transactional id's producer id (transactional).
    producer.list_topics(topic, timeout=CLIENT_SECONDS)
    if per_transaction is not None:
        producer.init_transactions(CLIENT_SECONDS)
    else:
        _warm_up(producer, topic)
    started = time.perf_counter()
    for index in range(records):
        if per_transaction is not None and index % per_transaction == 0:
            producer.begin_transaction()
        _produce(producer, topic, values[index % len(values)], deliveries)
        if per_transaction is not None and (index + 1) % per_transaction == 0:
            _commit(producer, commit_latencies_ns)
        elif index % POLL_EVERY == 0:
            producer.poll(0)
    if per_transaction is not None and records % per_transaction:
        _commit(producer, commit_latencies_ns)
    remaining = producer.flush(CLIENT_SECONDS)
    seconds = time.perf_counter() - started
    if client.library != LIBRDKAFKA:
        producer.close()  # the SDK's producer holds a sender thread and channels until closed
    if remaining or deliveries.first_error is not None:
        raise TransactionsRunError(f"{topic}: {remaining} records undelivered, first delivery error {deliveries.first_error}")
    sample = ThroughputSample(records=records, record_size=len(values[0]), seconds=seconds)
    latency = LatencySummary.from_nanoseconds(sorted(commit_latencies_ns)) if commit_latencies_ns else None
    return RunSample(sample, latency), len(commit_latencies_ns) if per_transaction is not None else 1


def _warm_up(producer: Any, topic: str) -> None:
    """Deliver one record before the clock starts, so that the idempotent producer has its producer id (untimed set-up, as init_transactions())."""
    deliveries = _Deliveries()
    producer.produce(topic, WARM_UP_VALUE, on_delivery=deliveries.on_delivery)
    if producer.flush(WARM_UP_SECONDS) or deliveries.first_error is not None:
        raise TransactionsRunError(f"{topic}: the warm-up record was not delivered within {WARM_UP_SECONDS} s: {deliveries.first_error}")


def end_offset(config: Mapping[str, Any], topic: str, expected: int, timeout: float = MARKER_SECONDS) -> int:
    """The partition's high watermark once it reached ``expected``, or the last one seen after ``timeout``.

    As in Kafka, commit_transaction() returns once the coordinator has recorded the commit; the
    markers are written to the partitions after that, and the high watermark covers the last one
    once the followers have fetched it, so the check waits for it (bounded)."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({**_consumer_settings(config), "group.id": f"{topic}-check"})
    deadline = time.monotonic() + timeout
    try:
        while True:
            found = int(consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=CLIENT_SECONDS)[1])
            if found >= expected or time.monotonic() >= deadline:
                return found
            time.sleep(0.05)
    finally:
        consumer.close()


def _consumer_settings(config: Mapping[str, Any]) -> dict[str, Any]:
    keep = ("bootstrap.servers", "security.protocol", "sasl.mechanism", "sasl.username", "sasl.password")
    return {key: config[key] for key in keep if key in config} | {"isolation.level": "read_committed", "enable.auto.commit": False}


Samples = dict[str, dict[Workload, list[RunSample]]]  # client name -> workload -> one sample per run


def measure_throughput(
    credentials: Credentials,
    api: ApiClient,
    admin: AdminClient,
    runs: int,
    records: int,
    record_bytes: int,
    console: Console,
    clients: Sequence[str] = DEFAULT_CLIENTS,
    samples: Samples | None = None,
) -> Samples:
    """Every workload with every client, run after run (the clients' rows of one run back to back); fills and returns ``samples``."""
    values = value_pool(record_bytes)
    samples = {} if samples is None else samples
    for name in clients:
        samples.setdefault(name, {workload: [] for workload in WORKLOADS})
    for run in range(1, runs + 1):
        for workload in run_order(run):
            for name in clients if run % 2 == 1 else tuple(reversed(clients)):
                client = CLIENTS[name]
                topic = workload.topic_name(run, client)
                what = f"run {run}, {name}, {workload.label}"
                try:
                    create_topic(api, topic, 1, REPLICATION_FACTOR, TOPIC_CONFIGS)
                    wait_until_healthy(admin, topic, 1, TOPIC_READY_TIMEOUT_SECONDS)
                    sample, untimed = produce_run(client.producer_config(credentials, workload, run), topic, workload, records, values, client)
                    expected = records + untimed  # one COMMIT marker per transaction, or the warm-up record
                    found = end_offset(producer_config(credentials, IDEMPOTENT, run), topic, expected)
                except Exception as error:  # noqa: BLE001 - any failure of a run is reported with the run it broke
                    raise TransactionsRunError(f"{what}: {type(error).__name__}: {error}") from None
                if found != expected:
                    raise TransactionsRunError(f"{what}: end offset {found}, expected {expected} ({records} records, {untimed} markers or warm-up record)")
                samples[name][workload].append(sample)
                console.print(
                    f"transactions: run {run} of {runs}: {name}: {workload.label}: {sample.throughput.records_per_second:,.0f} records/s", markup=False
                )
    return samples


def end_to_end_run(config: Mapping[str, Any], topic: str, seconds: float, record_bytes: int) -> LatencySample:
    """A paced transactional producer and a read_committed consumer; each record's latency from its due time to its read."""
    from confluent_kafka import Consumer, Producer, TopicPartition

    consumer = Consumer({**_consumer_settings(config), "group.id": f"{topic}-reader", "auto.offset.reset": "earliest"})
    consumer.assign([TopicPartition(topic, 0, 0)])
    pacer = RatePacer(E2E_RATE)
    total = pacer.records_in(seconds)
    latencies = array("q")
    done = threading.Event()

    def read() -> None:
        deadline = None
        while len(latencies) < total and (deadline is None or time.monotonic() < deadline):
            message = consumer.poll(0.1)
            value = message.value() if message is not None and message.error() is None else None
            if value is not None:
                latencies.append(time.monotonic_ns() - read_stamp(value))
            if done.is_set() and deadline is None:
                deadline = time.monotonic() + E2E_DRAIN_SECONDS

    reader = threading.Thread(target=read, name="e2e-reader", daemon=True)
    reader.start()
    producer = Producer(dict(config))
    deliveries = _Deliveries()
    commits: list[int] = []
    filler = value_pool(record_bytes)[0]
    try:
        producer.init_transactions(CLIENT_SECONDS)
        pacer = RatePacer(E2E_RATE)
        for index in range(total):
            if index % E2E_RECORDS_PER_TRANSACTION == 0:
                producer.begin_transaction()
            time.sleep(pacer.seconds_until_due(index))
            _produce(producer, topic, stamped_value(filler, pacer.due_ns(index)), deliveries)
            if (index + 1) % E2E_RECORDS_PER_TRANSACTION == 0 or index == total - 1:
                _commit(producer, commits)
        producer.flush(CLIENT_SECONDS)
    finally:
        done.set()
        reader.join(E2E_DRAIN_SECONDS + 5)
        consumer.close()
    if deliveries.first_error is not None or len(latencies) != total:
        raise TransactionsRunError(f"{topic}: read {len(latencies)} of {total} records at read_committed, first delivery error {deliveries.first_error}")
    return LatencySample(record_size=record_bytes, target_rate=E2E_RATE, seconds=total / E2E_RATE, latencies_ns=latencies)


def measure_end_to_end(
    credentials: Credentials, api: ApiClient, admin: AdminClient, runs: int, seconds: float, record_bytes: int, console: Console
) -> list[LatencySample]:
    samples = []
    for run in range(1, runs + 1):
        workload = Workload(E2E_LABEL, E2E_RECORDS_PER_TRANSACTION)
        topic = f"{TOPIC_PREFIX}-e2e-run{run}"
        try:
            create_topic(api, topic, 1, REPLICATION_FACTOR, TOPIC_CONFIGS)
            wait_until_healthy(admin, topic, 1, TOPIC_READY_TIMEOUT_SECONDS)
            sample = end_to_end_run(producer_config(credentials, workload, run), topic, seconds, record_bytes)
        except TransactionsRunError:
            raise
        except Exception as error:  # noqa: BLE001 - any failure of a run is reported with the run it broke
            raise TransactionsRunError(f"run {run}, {E2E_LABEL}: {type(error).__name__}: {error}") from None
        samples.append(sample)
        console.print(f"transactions: run {run} of {runs}: {E2E_LABEL}: p50 {sample.summary().p50_ms:,.1f} ms", markup=False)
    return samples


def _milliseconds(value: float | None) -> str:
    return "-" if value is None else f"{value:,.1f}"


def results_table(
    samples: Mapping[str, Mapping[Workload, Sequence[RunSample]]], end_to_end: Sequence[LatencySample], records: int, record_bytes: int, command: str
) -> Table:
    """One row per client and workload (each ratio against that client's own idempotent row), then the end-to-end row (librdkafka)."""
    clients = ", ".join(samples) or "no client"
    table = Table(
        title=f"Transactional produce ({clients}): {records:,} records of {record_bytes} B per run, one partition, RF=3",
        caption=(
            f"{command}\nacks=all, enable.idempotence=true, min.insync.replicas=2, batch.size 1,000,000, linger.ms 10; "
            "p50/p99: commit_transaction() for the transactional rows, due time to read at read_committed for the end-to-end row "
            f"({E2E_RATE:,} records/s paced); vs idempotent: the same client's idempotent row; medians over runs"
        ),
    )
    for column in ("client", "workload", "runs", "records/s", "MiB/s", "vs idempotent", "p50 ms", "p99 ms"):
        table.add_column(column, justify="left" if column in ("client", "workload") else "right")
    for name, by_workload in samples.items():
        for workload in WORKLOADS:
            runs = by_workload.get(workload, ())
            if not runs:
                table.add_row(name, workload.label, "0", "-", "-", "-", "-", "-")
                continue
            figures = median_figures([run.throughput for run in runs])
            commits = [run.commit_latency for run in runs if run.commit_latency is not None]
            ratio = throughput_ratio(by_workload, workload)
            table.add_row(
                name,
                workload.label,
                str(figures.runs),
                f"{figures.records_per_second:,.0f}",
                f"{figures.mebibytes_per_second:,.1f}",
                "-" if ratio is None else f"{ratio:.2f}",
                _milliseconds(statistics.median(c.p50_ms for c in commits) if commits else None),
                _milliseconds(statistics.median(c.p99_ms for c in commits) if commits else None),
            )
    if end_to_end:
        figures = median_figures(list(end_to_end))
        latency = figures.latency
        table.add_row(
            LIBRDKAFKA_CLIENT.name,
            E2E_LABEL,
            str(figures.runs),
            f"{figures.records_per_second:,.0f}",
            f"{figures.mebibytes_per_second:,.2f}",
            "-",
            _milliseconds(latency.p50_ms if latency else None),
            _milliseconds(latency.p99_ms if latency else None),
        )
    else:
        table.add_row(LIBRDKAFKA_CLIENT.name, E2E_LABEL, "0", "-", "-", "-", "-", "-")
    return table


def main(runs: int, records: int, record_bytes: int, e2e_seconds: float, console: Console, clients: Sequence[str] = DEFAULT_CLIENTS) -> int:
    """Start a stack, measure with each client, print the table and a verdict per client; 1 on any failure."""
    samples: Samples = {}
    end_to_end: list[LatencySample] = []
    failure = None
    try:
        with LocalStack(console, "transactions") as stack:
            assert stack.credentials is not None
            credentials = stack.credentials
            api = ApiClient.for_stack(credentials)
            admin = AdminClient(credentials.client_config())
            try:
                measure_throughput(credentials, api, admin, runs, records, record_bytes, console, clients, samples)
                end_to_end = measure_end_to_end(credentials, api, admin, runs, e2e_seconds, record_bytes, console)
            except (TransactionsRunError, TopicSetupError) as error:
                failure = str(error)
                console.print(stack.log_tails(), markup=False, highlight=False)
            finally:
                admin.close()
    except StackError as error:
        failure = str(error)
    command = f"python -m bench transactions --runs {runs} --records {records} --record-bytes {record_bytes} --client {','.join(clients)}"
    console.print(results_table(samples, end_to_end, records, record_bytes, command))
    console.print(machine_description(malloc_tuned=False), markup=False)
    for name in clients:
        console.print(verdict(throughput_ratio(samples.get(name, {})), name), markup=False)
    if failure is not None:
        console.print(f"failure: {failure}", markup=False)
        return 1
    return 0

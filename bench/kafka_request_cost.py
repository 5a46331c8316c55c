"""The broker CPU one Produce request costs through each front door: the Kafka listener and gRPC.

``python -m bench.kafka_request_cost [--records 3000] [--rate 1000] [--runs 3] [--size 100]
[--acks 1] [--clients librdkafka,sdk] [--profile-broker DIR]`` starts one broker
(:class:`bench.broker_launcher.LocalBroker`, with its Prometheus endpoint on), creates a
one-partition topic, and per run and client sends ``--records`` records of ``--size`` bytes at
``--rate`` records/s with ``linger.ms=0``: below the broker's saturation each record leaves as a
Produce request of its own, which is what ``bench e2e`` sends at 5,000 records/s. The clients
take turns within each run (librdkafka over the Kafka listener, the SDK over gRPC's
ProduceStream), so that both rows of a run see the same machine load.

Per row: the Produce requests the broker answered (its own counters, scraped from ``/metrics``
before and after, outside the measured stretch), the broker's CPU time over the stretch (user +
system of every thread, from ``/proc``) divided by them, the broker's idle CPU rate measured
just before (the share a quiet broker spends anyway, which the per-request figure includes), the
CPU per record (lower than per request when the client put several records in a request, as
under load: compare rows whose records/request match), the produce-to-delivery-report latency
p50/p99, and the machine's load average. Compare figures taken at the same load only: on a
2-core machine a thread hand-off that wakes an idle core costs more than one on a busy core.

``--profile-broker DIR`` samples the broker with py-spy during each measured stretch (see
:mod:`bench.broker_sampler`) and prints where its time went; profiled figures are not results.
"""

from __future__ import annotations

import argparse
import os
import time
import urllib.request
import uuid
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prometheus_client.parser import text_string_to_metric_families
from rich.console import Console
from rich.table import Table

from bench.broker_launcher import LOOPBACK, LocalBroker, free_loopback_port
from bench.broker_profile import print_profile
from bench.broker_sampler import BrokerSampler, process_cpu_seconds
from bench.measurements import LatencySummary
from bench.pacing import RatePacer

DEFAULT_RECORDS = 3000
DEFAULT_RATE = 1000  # records/s: well below one broker's saturation, so each record is one request
DEFAULT_RUNS = 3
DEFAULT_SIZE = 100
WARMUP_RECORDS = 200  # sent and acknowledged before each measured stretch (connections, metadata, caches)
IDLE_SECONDS = 1.0  # how long the quiet broker's CPU is measured before each stretch
FLUSH_TIMEOUT_SECONDS = 60.0
ADMIN_TIMEOUT_SECONDS = 30.0
METRICS_TIMEOUT_SECONDS = 10.0
PROFILE_RATE = 250  # py-spy samples/s with --profile-broker
LIBRDKAFKA = "librdkafka"
SDK = "sdk"
CLIENTS = (LIBRDKAFKA, SDK)
# The broker's counters of answered Produce requests, per front door: metric family, label, value.
PRODUCE_COUNTERS = {
    LIBRDKAFKA: ("weir_broker_kafka_requests", "api", "produce"),
    SDK: ("weir_broker_requests", "method", "Produce"),
}


class MeasuredBroker(LocalBroker):
    """A :class:`LocalBroker` that also serves its Prometheus ``/metrics`` (the request counters read here)."""

    def __init__(self) -> None:
        super().__init__()
        self.metrics_port = free_loopback_port()

    def command(self) -> list[str]:
        return [*super().command(), "--metrics-port", str(self.metrics_port)]

    def produce_requests(self, client: str) -> float:
        """Produce requests the broker has answered through ``client``'s front door so far."""
        family_name, label, value = PRODUCE_COUNTERS[client]
        with urllib.request.urlopen(f"http://{LOOPBACK}:{self.metrics_port}/metrics", timeout=METRICS_TIMEOUT_SECONDS) as response:
            text = response.read().decode()
        total = 0.0
        for family in text_string_to_metric_families(text):
            if family.name != family_name:
                continue
            for sample in family.samples:
                if sample.name.endswith("_total") and sample.labels.get(label) == value:
                    total += sample.value
        return total


@dataclass(frozen=True)
class CostRow:
    """One client's measured stretch of one run."""

    client: str
    run: int
    records: int
    requests: float
    cpu_seconds: float
    idle_cpu_per_second: float
    seconds: float
    latency: LatencySummary
    load_before: float
    load_after: float

    @property
    def cpu_us_per_request(self) -> float:
        return 1e6 * self.cpu_seconds / self.requests if self.requests else float("nan")

    @property
    def cpu_us_per_record(self) -> float:
        return 1e6 * self.cpu_seconds / self.records

    @property
    def net_cpu_us_per_request(self) -> float:
        """The per-request CPU without what the quiet broker would have spent over the stretch."""
        busy = self.cpu_seconds - self.idle_cpu_per_second * self.seconds
        return 1e6 * busy / self.requests if self.requests else float("nan")


def _producer(client: str, bootstrap: str, acks: str) -> Any:
    config = {"bootstrap.servers": bootstrap, "acks": acks, "linger.ms": 0, "enable.idempotence": acks == "all"}
    if client == LIBRDKAFKA:
        import confluent_kafka

        return confluent_kafka.Producer(config)
    import weir

    return weir.Producer(config)


def _create_topic(broker: LocalBroker) -> str:
    from confluent_kafka.admin import AdminClient, NewTopic

    topic = f"request-cost-{uuid.uuid4().hex}"
    admin = AdminClient({"bootstrap.servers": broker.kafka_address})
    admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)])[topic].result(timeout=ADMIN_TIMEOUT_SECONDS)
    return topic


class DeliveryTimes:
    """Produce-to-delivery-report latencies of the records sent, and the first delivery error."""

    def __init__(self) -> None:
        self.latencies_ns: list[int] = []
        self.first_error: Any = None

    def callback(self, sent_ns: int) -> Callable[[Any, Any], None]:
        def on_delivery(error: Any, message: Any) -> None:
            if error is not None:
                self.first_error = self.first_error or error
                return
            self.latencies_ns.append(time.perf_counter_ns() - sent_ns)

        return on_delivery


def _send_paced(producer: Any, topic: str, records: int, rate: int, value: bytes, times: DeliveryTimes) -> None:
    pacer = RatePacer(rate)
    for index in range(records):
        wait = pacer.seconds_until_due(index)
        if wait:
            time.sleep(wait)
        producer.produce(topic, value, on_delivery=times.callback(time.perf_counter_ns()))
        producer.poll(0)
    remaining = producer.flush(FLUSH_TIMEOUT_SECONDS)
    if remaining:
        raise RuntimeError(f"{remaining} records still undelivered after flush({FLUSH_TIMEOUT_SECONDS})")


def measure(broker: MeasuredBroker, client: str, topic: str, run: int, options: argparse.Namespace, sampling: AbstractContextManager[object]) -> CostRow:
    """One client's stretch: warm up, measure the quiet broker, then the paced records."""
    value = os.urandom(options.size)
    producer = _producer(client, broker.kafka_address if client == LIBRDKAFKA else broker.address, options.acks)
    _send_paced(producer, topic, WARMUP_RECORDS, options.rate, value, DeliveryTimes())
    idle_before = process_cpu_seconds(broker.pid) or 0.0
    time.sleep(IDLE_SECONDS)
    idle_cpu = (process_cpu_seconds(broker.pid) or 0.0) - idle_before
    requests_before = broker.produce_requests(client)
    times = DeliveryTimes()
    load_before = os.getloadavg()[0]
    with sampling:
        cpu_before = process_cpu_seconds(broker.pid) or 0.0
        started = time.perf_counter()
        _send_paced(producer, topic, options.records, options.rate, value, times)
        seconds = time.perf_counter() - started
        cpu_seconds = (process_cpu_seconds(broker.pid) or 0.0) - cpu_before
    load_after = os.getloadavg()[0]
    requests = broker.produce_requests(client) - requests_before
    if hasattr(producer, "close"):
        producer.close()
    if times.first_error is not None:
        raise RuntimeError(f"{client}: delivery failed: {times.first_error}")
    return CostRow(
        client,
        run,
        options.records,
        requests,
        cpu_seconds,
        idle_cpu / IDLE_SECONDS,
        seconds,
        LatencySummary.from_nanoseconds(times.latencies_ns),
        load_before,
        load_after,
    )


def report(console: Console, rows: Sequence[CostRow], options: argparse.Namespace) -> None:
    table = Table(
        title=f"Broker CPU per Produce request: {options.records:,} records of {options.size} B per row at {options.rate:,}/s, linger.ms=0, acks={options.acks}"
    )
    for column in ("client", "run", "requests", "records/request", "CPU us/request", "net of idle", "CPU us/record", "idle CPU %", "p50 ms", "p99 ms", "load"):
        table.add_column(column, justify="left" if column == "client" else "right")
    for row in rows:
        table.add_row(
            row.client,
            str(row.run),
            f"{row.requests:,.0f}",
            f"{row.records / row.requests:.2f}" if row.requests else "-",
            f"{row.cpu_us_per_request:,.0f}",
            f"{row.net_cpu_us_per_request:,.0f}",
            f"{row.cpu_us_per_record:,.0f}",
            f"{100 * row.idle_cpu_per_second:.1f}",
            f"{row.latency.p50_ms:.2f}",
            f"{row.latency.p99_ms:.2f}",
            f"{row.load_before:.1f}-{row.load_after:.1f}",
        )
    console.print(table)
    for client in sorted({row.client for row in rows}):
        figures = sorted(row.cpu_us_per_request for row in rows if row.client == client)
        console.print(
            f"{client}: CPU us per Produce request, median of {len(figures)} run(s): {figures[len(figures) // 2]:,.0f} (all: {', '.join(f'{f:,.0f}' for f in figures)})"
        )


def _clients(text: str) -> tuple[str, ...]:
    clients = tuple(part.strip() for part in text.split(",") if part.strip())
    unknown = [client for client in clients if client not in CLIENTS]
    if not clients or unknown:
        raise argparse.ArgumentTypeError(f"clients must be a comma-separated list of {', '.join(CLIENTS)}")
    return clients


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.kafka_request_cost", description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--records", type=int, default=DEFAULT_RECORDS, help="records per client per run")
    parser.add_argument("--rate", type=int, default=DEFAULT_RATE, help="records per second")
    parser.add_argument("--runs", type=int, default=DEFAULT_RUNS)
    parser.add_argument("--size", type=int, default=DEFAULT_SIZE, help="record value bytes")
    parser.add_argument("--acks", choices=("0", "1", "all"), default="1")
    parser.add_argument("--clients", type=_clients, default=CLIENTS, help="comma-separated: librdkafka (Kafka listener), sdk (gRPC)")
    parser.add_argument("--profile-broker", type=Path, default=None, metavar="DIR", help="sample the broker with py-spy; profiled figures are not results")
    options = parser.parse_args(argv)
    if options.records <= 0 or options.rate <= 0 or options.runs <= 0 or options.size <= 0:
        parser.error("--records, --rate, --runs and --size must be positive")
    console = Console(width=160)
    rows: list[CostRow] = []
    with MeasuredBroker() as broker:
        sampler = BrokerSampler(broker.pid, options.profile_broker, PROFILE_RATE, console) if options.profile_broker else None
        for run in range(1, options.runs + 1):
            for client in options.clients:
                topic = _create_topic(broker)
                sampling = sampler.sampling(f"produce-{client}") if sampler is not None else nullcontext()
                rows.append(measure(broker, client, topic, run, options, sampling))
        report(console, rows, options)
        if sampler is not None:
            for profile in sampler.profiles.values():
                print_profile(console, profile)


if __name__ == "__main__":
    main()

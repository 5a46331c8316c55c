"""``python -m bench partition-scale``: issue 19's scale of one broker (goal 5), and an idle `make up`.

One secured broker process, provisioned as the control plane provisions one (its Admin
service, ``bench.flood``'s way): TENANTS tenants with one topic of PARTITIONS_PER_TENANT
partitions each (10,000 partitions) in one ``ApplyPartitions`` map, each tenant with a cluster
key allowed on its own topics. The figures, each beside its target:

* how long that map took to apply (10,000 partition logs created);
* the broker's resident memory (VmRSS) once provisioned and idle;
* its idle CPU over IDLE_SECONDS (utime + stime of every thread, /proc/PID/stat) as a share of
  one core;
* produce throughput through the SDK with every record sent to a random partition of one
  tenant's 100, against the same producer sending every record to a one-partition topic of the
  same tenant (medians over ``--runs``, the two alternating), each with the CPU per record of the
  broker and of the benchmark's own process (the SDK producer): which side a gap between the two
  comes from;
* ``kill -9`` of the broker, then the same command again: seconds from the new process's start
  until it answers a Produce and a Fetch (raw gRPC, polled every PROBE_INTERVAL_SECONDS), and its
  RSS once serving. The same after a clean stop (SIGTERM) for comparison.

``--idle-stack`` instead starts a `make up`-like stack (``bench.stack.LocalStack``: deploy.local
with its default three brokers, controllers, web, Celery worker and beat), lets it settle and
measures the CPU of every process of it over IDLE_SECONDS, each and summed.

Peers: none measured. Kafka publishes no figure for these on such a machine; its recovery of many
partitions after an unclean shutdown is known to be slow (it rebuilds every unflushed segment's
indexes), which the restart figure is held against only as "faster than that".
"""

from __future__ import annotations

import os
import random
import signal
import statistics
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import grpc
from rich.console import Console
from rich.table import Table

from bench.broker_launcher import BrokerStartError, LocalBroker
from bench.flood import INTERNAL_TOKEN, SecuredLocalBroker, rss_bytes
from bench.payloads import value_pool
from bench.report import machine_description
from bench.stack import LocalStack, StackError
from bench.tenant_access import TenantKey, every_topic_request
from grpc_protos.weir.v1 import admin_pb2, admin_pb2_grpc, broker_pb2, broker_pb2_grpc
from server_runtime.lifeline import spawn
from server_runtime.malloc_tuning import tuned_environment
from weir import Producer
from weir.errors import KafkaException
from weir.records import RecordBatchBuilder

TENANTS = 100
PARTITIONS_PER_TENANT = 100
TOPIC = "events"  # every tenant's topic of PARTITIONS_PER_TENANT partitions
SINGLE_TOPIC = "single"  # the first tenant's one-partition topic: the throughput baseline
RECORD_BYTES = 100
IDLE_SECONDS = 30.0  # the CPU window of an idle broker or stack
SETTLE_SECONDS = 5.0  # after provisioning or start-up, before the idle window opens
PROBE_INTERVAL_SECONDS = 0.05  # between two Produce/Fetch probes of a restarting broker
PROBE_TIMEOUT_SECONDS = 1.0  # of one probe call
RESTART_LIMIT_SECONDS = 120.0  # a broker not serving this long after its restart fails the run
APPLY_TIMEOUT_SECONDS = 600.0  # of the one ApplyPartitions call that creates every partition
FLUSH_TIMEOUT_SECONDS = 120.0
DEFAULT_RECORDS = 200_000
QUICK_RECORDS = 20_000
DEFAULT_RUNS = 3
STACK_SETTLE_SECONDS = 20.0  # a fresh stack's first beats, reconciler passes and demo jobs die down
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")

# Targets of issue 19 goal 5.
RSS_TARGET_BYTES = 1024**3
BROKER_IDLE_CPU_TARGET = 0.05  # of one core
STACK_IDLE_CPU_TARGET = 0.10  # of one core, every process summed
RESTART_TARGET_SECONDS = 10.0
# "Still served at the figures above": random partitions of 10,000 as fast as one partition, within
# the run-to-run spread of a shared 2-core machine (medians of alternating runs differ by ~10%).
THROUGHPUT_RATIO_TARGET = 0.9


class ScaleRunError(Exception):
    """A figure could not be measured (provisioning, a produce, a restart); the message says which."""

    retriable = False


@dataclass(frozen=True)
class Tenant:
    """One provisioned tenant and its cluster key."""

    tenant_id: str
    principal: str
    api_key: str
    secret: str

    @classmethod
    def numbered(cls, index: int) -> Tenant:
        return cls(f"tn-scale{index:03d}", f"User:sa-scale{index:03d}", f"SCALEKEY{index:03d}", f"scale-secret-{index:03d}")

    def metadata(self) -> tuple[tuple[str, str], ...]:
        """The gRPC metadata that authenticates as this tenant's key."""
        return (("x-weir-api-key", self.api_key), ("x-weir-api-secret", self.secret))


@dataclass
class ScaleFigures:
    """Everything one broker run measured; None where a step did not get that far."""

    partitions: int = 0
    provision_seconds: float | None = None
    rss_bytes: int | None = None
    idle_cpu: float | None = None
    random_partition_rates: list[float] = field(default_factory=list)
    single_partition_rates: list[float] = field(default_factory=list)
    # CPU microseconds per record of each run, the broker's and the producer's (this process).
    random_partition_broker_us: list[float] = field(default_factory=list)
    single_partition_broker_us: list[float] = field(default_factory=list)
    random_partition_client_us: list[float] = field(default_factory=list)
    single_partition_client_us: list[float] = field(default_factory=list)
    unclean_restart_seconds: float | None = None
    unclean_restart_rss_bytes: int | None = None
    clean_restart_seconds: float | None = None


class RestartableBroker(SecuredLocalBroker):
    """A secured broker that can be killed or stopped and started again on the same data and ports."""

    def kill(self) -> None:
        """SIGKILL, as a crash or a pulled plug; returns once the process is gone."""
        assert self._process is not None, "the broker is not started"
        self._process.send_signal(signal.SIGKILL)
        self._process.wait(30)

    def terminate(self, timeout: float = 60.0) -> None:
        """SIGTERM (a clean shutdown); returns once the process is gone."""
        assert self._process is not None, "the broker is not started"
        self._process.send_signal(signal.SIGTERM)
        self._process.wait(timeout)

    def spawn_again(self) -> None:
        """Start the same command again, without waiting for it to serve."""
        with open(self.log_path, "ab") as log:
            self._process = spawn(self.command(), stdout=log, stderr=subprocess.STDOUT, env=tuned_environment())


def provision(address: str, tenants: Sequence[Tenant], partitions_per_tenant: int) -> None:
    """One cluster map with every tenant's topic (this broker leading every partition), then each tenant's key."""
    metadata = (("x-weir-internal-token", INTERNAL_TOKEN),)
    port = int(address.rpartition(":")[2])

    def topic(tenant: Tenant, name: str, partitions: int) -> admin_pb2.TopicAssignment:
        return admin_pb2.TopicAssignment(
            tenant_id=tenant.tenant_id,
            name=name,
            topic_id=f"scale-{tenant.tenant_id}-{name}",
            partitions=[admin_pb2.PartitionAssignment(partition=index, leader_id=1, leader_epoch=1, replicas=[1], isr=[1]) for index in range(partitions)],
        )

    topics = [topic(tenant, TOPIC, partitions_per_tenant) for tenant in tenants] + [topic(tenants[0], SINGLE_TOPIC, 1)]
    with grpc.insecure_channel(address, options=[("grpc.max_send_message_length", 64 * 1024 * 1024)]) as channel:
        admin = admin_pb2_grpc.AdminStub(channel)
        admin.ApplySecurity(
            every_topic_request([TenantKey(tenant.tenant_id, tenant.principal, tenant.api_key, tenant.secret) for tenant in tenants]),
            metadata=metadata,
            timeout=30,
        )
        answer = admin.ApplyPartitions(
            admin_pb2.ApplyPartitionsRequest(
                version=1, cluster_id="bench-scale", brokers=[broker_pb2.BrokerNode(node_id=1, host="127.0.0.1", port=port)], topics=topics
            ),
            metadata=metadata,
            timeout=APPLY_TIMEOUT_SECONDS,
        )
    if answer.failed_partitions:
        first = answer.failed_partitions[0]
        raise ScaleRunError(f"{len(answer.failed_partitions)} partitions could not be created, the first: {first}")


def cpu_seconds(pid: int) -> float | None:
    """utime + stime of every thread of ``pid`` so far; None when the process is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return None
    # After the command name: state is field 3 of stat(5), so utime (14) and stime (15) are at 11 and 12.
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def idle_cpu_share(pids: Callable[[], dict[int, str]], seconds: float) -> dict[str, float]:
    """CPU used over ``seconds`` by each process ``pids()`` names (pid -> label), as a share of one core.

    A process started during the window counts with all its CPU; one that ended counts with none
    of the window (its last figures are gone), which the caller's settle time makes rare.
    """
    before = {pid: (label, cpu_seconds(pid)) for pid, label in pids().items()}
    started = time.monotonic()
    time.sleep(seconds)
    elapsed = time.monotonic() - started
    shares: dict[str, float] = {}
    for pid, label in pids().items():
        now = cpu_seconds(pid)
        if now is None:
            continue
        earlier = before.get(pid, (label, 0.0))[1] or 0.0
        shares[f"{label} ({pid})"] = (now - earlier) / elapsed
    return shares


def descendants(root: int) -> dict[int, str]:
    """``root`` and every process below it (by parent id), each with its command line, shortened."""
    parents: dict[int, int] = {}
    commands: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            parent = int((entry / "stat").read_text().rpartition(")")[2].split()[1])
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
        except (OSError, ValueError, IndexError):
            continue
        parents[int(entry.name)] = parent
        commands[int(entry.name)] = command
    found = {root}
    changed = True
    while changed:
        changed = False
        for pid, parent in parents.items():
            if parent in found and pid not in found:
                found.add(pid)
                changed = True
    return {pid: _short_command(commands.get(pid, "?")) for pid in sorted(found) if pid in commands}


def _short_command(command: str) -> str:
    words = [word for word in command.split() if not word.startswith("/") or word.endswith(".py")]
    return " ".join(words[:6])[:70] or command[:70]


def produce_rate(tenant: Tenant, address: str, topic: str, partitions: int, records: int, values: list[bytes]) -> float:
    """Records/s of one SDK producer sending ``records`` to random partitions of ``topic`` (0..partitions-1), acks=1."""
    producer = Producer(
        {
            "bootstrap.servers": address,
            "sasl.username": tenant.api_key,
            "sasl.password": tenant.secret,
            "acks": "1",
            "enable.idempotence": False,
            "batch.size": 1_000_000,
            "linger.ms": 10,
        }
    )
    delivered = 0
    errors: list[str] = []

    def on_delivery(error: object, _message: object) -> None:
        nonlocal delivered
        if error is not None:
            errors.append(str(error))
        else:
            delivered += 1

    chooser = random.Random(records)
    choices = [chooser.randrange(partitions) for _ in range(records)]
    try:
        produce, poll = producer.produce, producer.poll
        count = len(values)
        started = time.perf_counter()
        for index, partition in enumerate(choices):
            while True:
                try:
                    produce(topic, values[index % count], partition=partition, on_delivery=on_delivery)
                    break
                except BufferError:
                    poll(0.01)
        remaining = producer.flush(FLUSH_TIMEOUT_SECONDS)
        seconds = time.perf_counter() - started
    finally:
        producer.close(FLUSH_TIMEOUT_SECONDS)
    if remaining or errors or delivered != records:
        raise ScaleRunError(f"{topic}: {delivered} of {records} delivered, {remaining} still queued, errors: {errors[:1]}")
    return records / seconds


def measure_throughput(broker: LocalBroker, tenant: Tenant, runs: int, records: int, figures: ScaleFigures, console: Console) -> None:
    """``runs`` alternating pairs: random partitions of the tenant's big topic, and its one-partition topic."""
    values = value_pool(RECORD_BYTES)
    for run in range(1, runs + 1):
        order = ((TOPIC, PARTITIONS_PER_TENANT), (SINGLE_TOPIC, 1))
        for topic, partitions in order if run % 2 else tuple(reversed(order)):
            broker_before, client_before = cpu_seconds(broker.pid), time.process_time()
            try:
                rate = produce_rate(tenant, broker.address, topic, partitions, records, values)
            except KafkaException as error:
                raise ScaleRunError(f"run {run}, {topic}: {error}") from None
            broker_after, client_us = cpu_seconds(broker.pid), (time.process_time() - client_before) / records * 1e6
            broker_us = (broker_after - broker_before) / records * 1e6 if broker_before is not None and broker_after is not None else None
            if partitions > 1:
                figures.random_partition_rates.append(rate)
                figures.random_partition_client_us.append(client_us)
                figures.random_partition_broker_us.extend([broker_us] if broker_us is not None else [])
            else:
                figures.single_partition_rates.append(rate)
                figures.single_partition_client_us.append(client_us)
                figures.single_partition_broker_us.extend([broker_us] if broker_us is not None else [])
            shown = "-" if broker_us is None else f"{broker_us:.2f}"
            console.print(
                f"partition-scale: run {run} of {runs}: {partitions} partition(s): {rate:,.0f} records/s, CPU per record: broker {shown} us, producer {client_us:.2f} us",
                markup=False,
            )


def serving_seconds(address: str, tenant: Tenant, partitions: int, started: float) -> float:
    """Seconds after ``started`` (monotonic) at which the broker answered one Produce and one Fetch without error."""
    record = RecordBatchBuilder()
    record.append(int(time.time() * 1000), None, b"p" * RECORD_BYTES)
    batch = record.build()
    picker = random.Random()
    deadline = started + RESTART_LIMIT_SECONDS
    produced = fetched = False
    last_failure = "no answer"
    with grpc.insecure_channel(address) as channel:
        stub = broker_pb2_grpc.BrokerStub(channel)
        # Bounded by the deadline: one probe (two calls, each with its own timeout) per iteration.
        while time.monotonic() < deadline:
            partition = picker.randrange(partitions)
            try:
                if not produced:
                    answer = stub.Produce(
                        broker_pb2.ProduceRequest(
                            acks=1,
                            timeout_ms=int(PROBE_TIMEOUT_SECONDS * 1000),
                            topics=[broker_pb2.ProduceTopicData(topic=TOPIC, partitions=[broker_pb2.ProducePartitionData(partition=partition, records=batch)])],
                        ),
                        metadata=tenant.metadata(),
                        timeout=PROBE_TIMEOUT_SECONDS,
                    )
                    produced = all(part.error_code == 0 for topic in answer.topics for part in topic.partitions)
                    last_failure = f"Produce: {answer}"
                if produced and not fetched:
                    fetch = stub.Fetch(
                        broker_pb2.FetchRequest(
                            max_wait_ms=0,
                            min_bytes=1,
                            replica_id=-1,
                            topics=[
                                broker_pb2.FetchTopic(
                                    topic=TOPIC, partitions=[broker_pb2.FetchPartition(partition=partition, fetch_offset=0, current_leader_epoch=-1)]
                                )
                            ],
                        ),
                        metadata=tenant.metadata(),
                        timeout=PROBE_TIMEOUT_SECONDS,
                    )
                    fetched = all(part.error_code == 0 and part.records for topic in fetch.topics for part in topic.partitions)
                    last_failure = f"Fetch: {fetch}"
                if produced and fetched:
                    return time.monotonic() - started
            except grpc.RpcError as error:  # not listening yet, or still recovering (UNAVAILABLE)
                last_failure = f"{error.code().name}: {error.details()}"
            time.sleep(PROBE_INTERVAL_SECONDS)
    raise ScaleRunError(f"the broker did not serve Produce and Fetch within {RESTART_LIMIT_SECONDS:g} s of its restart; the last answer: {last_failure}")


def measure_restarts(broker: RestartableBroker, tenant: Tenant, figures: ScaleFigures, console: Console) -> None:
    """kill -9 and restart, then SIGTERM and restart: how long until each new process serves."""
    broker.kill()
    started = time.monotonic()
    broker.spawn_again()
    figures.unclean_restart_seconds = serving_seconds(broker.address, tenant, PARTITIONS_PER_TENANT, started)
    console.print(f"partition-scale: serving {figures.unclean_restart_seconds:.2f} s after a restart from kill -9", markup=False)
    time.sleep(SETTLE_SECONDS)
    figures.unclean_restart_rss_bytes = rss_bytes(broker.pid)
    broker.terminate()
    started = time.monotonic()
    broker.spawn_again()
    figures.clean_restart_seconds = serving_seconds(broker.address, tenant, PARTITIONS_PER_TENANT, started)
    console.print(f"partition-scale: serving {figures.clean_restart_seconds:.2f} s after a restart from a clean stop", markup=False)


def measure_broker(runs: int, records: int, console: Console) -> tuple[ScaleFigures, str | None]:
    """Start, provision and measure one broker; the figures so far and the failure, if any."""
    figures = ScaleFigures()
    tenants = [Tenant.numbered(index) for index in range(TENANTS)]
    try:
        broker = RestartableBroker({})
        with broker:
            try:
                started = time.monotonic()
                provision(broker.address, tenants, PARTITIONS_PER_TENANT)
                figures.provision_seconds = time.monotonic() - started
                figures.partitions = TENANTS * PARTITIONS_PER_TENANT + 1
                console.print(f"partition-scale: {figures.partitions:,} partitions created in {figures.provision_seconds:.1f} s", markup=False)
                time.sleep(SETTLE_SECONDS)
                figures.idle_cpu = idle_cpu_share(lambda: {broker.pid: "broker"}, IDLE_SECONDS).popitem()[1]
                figures.rss_bytes = rss_bytes(broker.pid)
                console.print(f"partition-scale: idle {figures.idle_cpu:.1%} of a core, RSS {figures.rss_bytes / 2**20:,.0f} MiB", markup=False)
                measure_throughput(broker, tenants[0], runs, records, figures, console)
                measure_restarts(broker, tenants[0], figures, console)
            except (ScaleRunError, grpc.RpcError, KafkaException) as error:
                console.print(broker.log_tail(), markup=False, highlight=False)
                return figures, str(error)
    except BrokerStartError as error:
        return figures, str(error)
    return figures, None


def _verdict(met: bool | None) -> str:
    return "-" if met is None else ("met" if met else "NOT met")


def _median(values: Sequence[float]) -> float | None:
    return statistics.median(values) if values else None


def broker_table(figures: ScaleFigures, records: int, command: str) -> Table:
    table = Table(
        title=f"One broker with {TENANTS} tenants x {PARTITIONS_PER_TENANT} partitions ({figures.partitions:,} partition logs with the baseline topic)",
        caption=f"{command}\nthroughput: {records:,} records of {RECORD_BYTES} B per run, one SDK producer, acks=1, linger.ms 10; medians over runs",
    )
    for column in ("figure", "Weir", "target", "verdict"):
        table.add_column(column, justify="left" if column in ("figure", "target") else "right")
    mebibytes = 2**20

    def row(label: str, value: float | None, shown: Callable[[float], str], target: str, met: Callable[[float], bool] | None) -> None:
        table.add_row(label, "-" if value is None else shown(value), target, _verdict(None if value is None or met is None else met(value)))

    random_rate, single_rate = _median(figures.random_partition_rates), _median(figures.single_partition_rates)
    ratio = random_rate / single_rate if random_rate and single_rate else None
    row("creating every partition (one ApplyPartitions), s", figures.provision_seconds, lambda v: f"{v:.1f}", "", None)
    row("RSS once provisioned, MiB", figures.rss_bytes, lambda v: f"{v / mebibytes:,.0f}", "< 1,024", lambda v: v < RSS_TARGET_BYTES)
    row(f"idle CPU over {IDLE_SECONDS:g} s, % of one core", figures.idle_cpu, lambda v: f"{v:.1%}", "< 5%", lambda v: v < BROKER_IDLE_CPU_TARGET)
    row("produce, random partition of 100, records/s", random_rate, lambda v: f"{v:,.0f}", "", None)
    row("produce, one partition, records/s", single_rate, lambda v: f"{v:,.0f}", "", None)
    row("random / one partition", ratio, lambda v: f"{v:.2f}", f">= {THROUGHPUT_RATIO_TARGET:g}", lambda v: v >= THROUGHPUT_RATIO_TARGET)
    cpu = (
        ("broker", figures.random_partition_broker_us, figures.single_partition_broker_us),
        ("producer (SDK)", figures.random_partition_client_us, figures.single_partition_client_us),
    )
    for side, random_us, single_us in cpu:
        random_median, single_median = _median(random_us), _median(single_us)
        shown = "-" if random_median is None or single_median is None else f"{random_median:.2f} / {single_median:.2f}"
        table.add_row(f"{side} CPU per record, random / one partition, us", shown, "", "-")
    row("kill -9, restart to Produce + Fetch served, s", figures.unclean_restart_seconds, lambda v: f"{v:.2f}", "<= 10", lambda v: v <= RESTART_TARGET_SECONDS)
    row("RSS after that restart, MiB", figures.unclean_restart_rss_bytes, lambda v: f"{v / mebibytes:,.0f}", "< 1,024", lambda v: v < RSS_TARGET_BYTES)
    row("clean stop, restart to Produce + Fetch served, s", figures.clean_restart_seconds, lambda v: f"{v:.2f}", "", None)
    return table


def measure_idle_stack(console: Console) -> tuple[dict[str, float], str | None]:
    """CPU share of every process of an idle `make up`-like stack over IDLE_SECONDS."""
    try:
        with LocalStack(console, "partition-scale-idle") as stack:
            root = stack.supervisor_pid
            time.sleep(STACK_SETTLE_SECONDS)
            return idle_cpu_share(lambda: descendants(root), IDLE_SECONDS), None
    except StackError as error:
        return {}, str(error)


def stack_table(shares: dict[str, float]) -> Table:
    table = Table(
        title=f"An idle `make up`-like stack: CPU of every process over {IDLE_SECONDS:g} s, % of one core",
        caption="python -m bench partition-scale --idle-stack",
    )
    table.add_column("process", justify="left")
    table.add_column("CPU", justify="right")
    for label, share in sorted(shares.items(), key=lambda item: -item[1]):
        table.add_row(label, f"{share:.2%}")
    total = sum(shares.values())
    table.add_row(f"total (target < {STACK_IDLE_CPU_TARGET:.0%}): {_verdict(total < STACK_IDLE_CPU_TARGET if shares else None)}", f"{total:.2%}")
    return table


def load_description(before: tuple[float, float, float], after: tuple[float, float, float]) -> str:
    """The machine's 1-minute load average before and after the run: others' work shows in every figure."""
    return f"Load average (1 min) at the start {before[0]:.1f}, at the end {after[0]:.1f}, on {os.cpu_count()} CPUs"


def main(runs: int, records: int, idle_stack: bool, console: Console) -> int:
    """Measure, print the table(s); 1 on any failure."""
    load_before = os.getloadavg()
    if idle_stack:
        shares, failure = measure_idle_stack(console)
        console.print(stack_table(shares))
    else:
        figures, failure = measure_broker(runs, records, console)
        console.print(broker_table(figures, records, f"python -m bench partition-scale --runs {runs} --records {records}"))
    console.print(machine_description(malloc_tuned=False), markup=False)
    console.print(load_description(load_before, os.getloadavg()), markup=False)
    if failure is not None:
        console.print(f"failure: {failure}", markup=False)
        return 1
    return 0

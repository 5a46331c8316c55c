"""Where the end-to-end latency goes: the e2e scenario with a timestamp at every stage.

``python -m bench.latency_breakdown [--bootstrap HOST:PORT] [--rate 5000] [--seconds 5] [--runs 3]
[--acks 1|all] [--replication-factor N]`` (or ``python -m bench e2e-breakdown [--bootstrap ...]
[--e2e-rate ...] [--e2e-seconds ...] [--runs ...]``) runs Weir's end-to-end scenario (fixed rate, ``linger.ms=0``, consumer in another process) and
splits each record's latency into stages, by the system-wide monotonic clock:

1. ``produce()``: due time -> ``produce()`` returned (the application's thread, pacing included)
2. sender wake-up: ``produce()`` returned -> the Produce call started (sender thread woke,
   drained, encoded)
3. broker: Produce call started -> the consumer's Fetch answer arrived (the Produce RPC, the
   append, the long poll's wake-up and the Fetch answer); beside it, the producer's own
   round trip (Produce call started -> answer arrived)
4. fetcher hand-off: Fetch answer arrived (gRPC's callback) -> its records queued for the
   application (the fetcher thread woke and parsed)
5. consumer hand-off: queued -> ``consume()`` returned them to the application; beside it, the
   two hand-offs together (Fetch answer arrived -> ``consume()`` returned), which does not
   depend on when the SDK counts a chunk as queued

Without ``--bootstrap`` it starts its own broker, or with ``--replication-factor 2`` or ``3`` the
three brokers of ``bench.replicated_brokers`` (the topic led by broker 1, ``min.insync.replicas=2``;
with ``--acks all`` that is issue 19's acks=all RF=3 figure). With brokers it starts itself the
broker stage is split further by the (leader) broker's own stamps (``WEIR_REPLICATION_TRACE``: ``replication.stage_trace``, with the consumer
Fetch stages of ``log_formats.consumer_fetch_trace``), on the same clock: Produce started ->
appended (the request's way in and the append), appended -> the Fetch that returns the record
reads (its wake-up, or its arrival when it came after the append: the previous answer's round
trip), that read -> its outcomes built, built -> the servicer's protobuf answer returned to gRPC,
returned -> the answer at the consumer (gRPC's send, loopback, the SDK's call thread). The
appended -> read part is shown apart for records whose Fetch was parked at the append (its
wake-up) and for those appended while no Fetch was parked (a wait for the next Fetch), and for
these, the Fetch's two legs (they overlap the wait): the SDK's turnaround (the answer before
arrived -> this Fetch handed to gRPC) and its way in (handed to gRPC -> at the broker's fetch logic).

Stage times are taken by wrapping the SDK's per-batch (not per-record) methods in the
benchmark's processes only; the SDK itself carries no tracing. At ``linger.ms=0`` and a few
thousand records a second almost every batch holds one record, so per-batch is per-record.
The report shows each stage's p50 / p99 / p99.9 over every record of every run.
"""

from __future__ import annotations

import argparse
import bisect
import os
import resource
import tempfile
import time
import uuid
from array import array
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from bench.latency_receiver import LatencyReceiver, ReceiverSpec
from bench.pacing import RatePacer
from bench.payloads import read_stamp, stamped_value, value_pool
from bench.replicated_brokers import NODE_IDS as REPLICATED_NODE_IDS
from log_formats import consumer_fetch_trace
from log_formats.replication_trace import APPEND, FIELDS, TRACE_VARIABLE
from log_formats.topic_names import TENANT_SEPARATOR

ADMIN_TIMEOUT = 30.0
# Defaults of a measurement: seconds per run and runs.
DEFAULT_SECONDS = 5.0
DEFAULT_RUNS = 3
FLUSH_TIMEOUT = 60.0
# Fields of one received record in the receiver's answer (see receive_traced).
# offset, its Fetch's fetch offset, that Fetch sent, the previous Fetch's answer arrived (-1: unknown),
# fetch answer arrived, records queued, consume() returned
RECEIVED_FIELDS = 7
STAGES = (
    "produce()",
    "sender wake-up",
    "broker (produce+append+fetch wake+answer)",
    "  of it: producer's Produce round trip",
    "  of it: Produce started -> appended",
    "  of it: appended -> Fetch reads (wake/arrival)",
    "    Fetch parked before the append: wake-up",
    "    no Fetch parked: until the next one came",
    "      SDK: previous answer arrived -> Fetch sent",
    "      Fetch sent by the SDK -> at the broker",
    "  of it: Fetch read -> outcomes built",
    "  of it: built -> answer returned to gRPC",
    "  of it: returned -> answer at consumer",
    "fetcher hand-off",
    "consumer hand-off",
    "  fetch answer -> application (the two above)",
    "end to end",
)


def _cpu_ns() -> int:
    """User + system CPU time of this process so far, in ns."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return int((usage.ru_utime + usage.ru_stime) * 1e9)


@contextmanager
def _patched(owner: type, name: str, make: Callable[[Callable[..., Any]], Callable[..., Any]]) -> Iterator[None]:
    original = owner.__dict__[name]
    setattr(owner, name, make(original))
    try:
        yield
    finally:
        setattr(owner, name, original)


# ------------------------------------------------------------------ consumer side (child process)


def receive_traced(*, expected: int, deadline_ns: int, on_ready: Callable[[], None], consumer_config: dict[str, Any], topic: str) -> array:
    """Consume ``expected`` records; per record the RECEIVED_FIELDS (ns) after a first row with this process's CPU time."""
    from weir import OFFSET_BEGINNING, TopicPartition
    from weir import fetcher as fetcher_module
    from weir.consumer import Consumer, consume_available

    arrived: dict[int, int] = {}  # fetch offset -> answer arrived
    fetch_sent: dict[int, int] = {}  # fetch offset -> the Fetch was handed to gRPC
    queued: list[tuple[int, int, int]] = []  # (first offset, next offset, queued at)

    def wrap_arrived(original: Callable[..., Any]) -> Callable[..., Any]:
        def _arrived(self: Any, address: str, sent: list[tuple[Any, int, int]], future: Any, sent_at: float) -> None:
            now = time.monotonic_ns()
            for _state, _generation, offset in sent:
                arrived[offset] = now
                fetch_sent[offset] = int(sent_at * 1e9)  # time.monotonic(): the same clock
            original(self, address, sent, future, sent_at)

        return _arrived

    def wrap_apply(original: Callable[..., Any]) -> Callable[..., Any]:
        def _apply(self: Any, state: Any, generation: int, fetch_offset: int, answer: Any) -> None:
            original(self, state, generation, fetch_offset, answer)
            if state.fetch_position is not None and state.fetch_position > fetch_offset:
                queued.append((fetch_offset, state.fetch_position, time.monotonic_ns()))

        return _apply

    received = array("q")
    with _patched(fetcher_module.Fetcher, "_arrived", wrap_arrived), _patched(fetcher_module.Fetcher, "_apply", wrap_apply):
        consumer = Consumer(consumer_config)
        try:
            consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
            consumer.consume(num_messages=1, timeout=0.1)
            on_ready()
            count = 0
            while count < expected and time.monotonic_ns() < deadline_ns:
                messages = consume_available(consumer, 1000, 0.1)
                now = time.monotonic_ns()
                for message in messages:
                    value, offset = message.value(), message.offset()
                    if message.error() is None and value is not None and offset is not None:
                        received.extend((offset, read_stamp(value), now))
                        count += 1
        finally:
            consumer.close()
    # First row: the receiving process's CPU time; then per record, its fetch answer's arrival and queueing time.
    answer = array("q", (-1, _cpu_ns(), 0, 0, 0, 0, 0))
    chunks = sorted(queued)
    previous_first = {next_offset: first for first, next_offset, _ in chunks}  # fetch offset -> the fetch offset before it
    chunk_index = 0
    for position in range(0, len(received), 3):
        offset, _due, returned = received[position], received[position + 1], received[position + 2]
        while chunk_index + 1 < len(chunks) and chunks[chunk_index][1] <= offset:
            chunk_index += 1
        first, _next, queued_at = chunks[chunk_index] if chunks else (offset, offset + 1, returned)
        fetched = arrived.get(first, queued_at)
        before = previous_first.get(first)
        answer.extend((offset, first, fetch_sent.get(first, fetched), arrived.get(before, -1) if before is not None else -1, fetched, queued_at, returned))
    return answer


# ------------------------------------------------------------------ producer side


@dataclass
class RunTrace:
    """The run's topic; per offset: due, produce() returned, Produce started, Produce answered (ns), and the receiver's rows;
    CPU time (ns) of the producing process during the run, of the receiving process in all, and of
    the broker during the run (0 when unknown: a broker at --bootstrap)."""

    topic: str
    due: list[int]
    returned: list[int]
    sent: dict[int, int]
    acknowledged: dict[int, int]
    received: array
    producer_cpu_ns: int = 0
    receiver_cpu_ns: int = 0
    broker_cpu_ns: int = 0


def _produce_traced(
    client_config: Mapping[str, Any], topic: str, rate: int, records: int, acks: str, values: list[bytes]
) -> tuple[list[int], list[int], dict[int, int], dict[int, int]]:
    from weir import producer_sender
    from weir.producer import Producer

    sent_by_batch: dict[int, int] = {}
    sent: dict[int, int] = {}
    acknowledged: dict[int, int] = {}

    def wrap_send(original: Callable[..., Any]) -> Callable[..., Any]:
        def _send_request(self: Any, address: str, batches: list[Any]) -> None:
            now = time.monotonic_ns()
            for batch in batches:
                sent_by_batch[id(batch)] = now
            original(self, address, batches)

        return _send_request

    def wrap_arrived(original: Callable[..., Any]) -> Callable[..., Any]:
        def _arrived(self: Any, address: str, batches: list[Any], future: Any, sent_at: float) -> None:
            now = time.monotonic_ns()
            try:
                response = future.result()
                offsets = {(topic_answer.topic, part.partition): part.base_offset for topic_answer in response.topics for part in topic_answer.partitions}
                for batch in batches:
                    base = offsets.get((batch.topic, batch.partition), -1)
                    started = sent_by_batch.pop(id(batch), now)
                    for offset in range(base, base + batch.record_count) if base >= 0 else ():
                        sent[offset] = started
                        acknowledged[offset] = now
            except Exception:  # a failed call is reported by the producer itself
                pass
            original(self, address, batches, future, sent_at)

        return _arrived

    due: list[int] = []
    returned: list[int] = []
    with _patched(producer_sender.Sender, "_send_request", wrap_send), _patched(producer_sender.Sender, "_arrived", wrap_arrived):
        producer = Producer({**client_config, "acks": acks, "linger.ms": 0, "enable.idempotence": acks == "all"})
        errors: list[Any] = []

        def on_delivery(error: Any, message: Any) -> None:
            if error is not None:
                errors.append(error)

        produce, poll = producer.produce, producer.poll
        pacer = RatePacer(rate)
        for index in range(records):
            wait = pacer.seconds_until_due(index)
            if wait:
                time.sleep(wait)
            due_ns = pacer.due_ns(index)
            produce(topic, stamped_value(values[index % len(values)], due_ns), on_delivery=on_delivery)
            returned.append(time.monotonic_ns())
            due.append(due_ns)
            poll(0)
        remaining = producer.flush(FLUSH_TIMEOUT)
        producer.close()
    if remaining or errors:
        raise RuntimeError(f"{remaining} records undelivered, first error: {errors[0] if errors else None}")
    return due, returned, sent, acknowledged


@dataclass
class Stand:
    """Where the runs go: the client settings that reach it, how a run's topic is made and removed, the broker to stamp and time."""

    client_config: dict[str, Any]
    create_topic: Callable[[str], None]
    delete_topic: Callable[[str], None]
    broker_pid: int | None = None  # the partition leader's process (its CPU per record), when the benchmark started it


def admin_stand(bootstrap: str, replication_factor: int, broker_pid: int | None = None) -> Stand:
    """A broker or cluster whose topics the admin client makes (``--bootstrap``, or the one broker started)."""
    from weir.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})

    def create(topic: str) -> None:
        admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=replication_factor)])[topic].result(timeout=ADMIN_TIMEOUT)

    def delete(topic: str) -> None:
        admin.delete_topics([topic])[topic].result(timeout=ADMIN_TIMEOUT)

    return Stand({"bootstrap.servers": bootstrap}, create, delete, broker_pid)


def run_once(stand: Stand, rate: int, seconds: float, acks: str = "1") -> RunTrace:
    from bench.broker_sampler import process_cpu_seconds

    topic = f"weir-breakdown-{uuid.uuid4().hex}"
    stand.create_topic(topic)
    records = max(1, int(rate * seconds))
    consumer_config = {**stand.client_config, "group.id": f"weir-breakdown-{uuid.uuid4().hex}", "enable.auto.commit": False}
    spec = ReceiverSpec(__name__, "receive_traced", {"consumer_config": consumer_config, "topic": topic})
    broker_pid = stand.broker_pid
    try:
        with LatencyReceiver(spec, records, seconds_limit=seconds + 15) as receiver:
            cpu_before = _cpu_ns()
            broker_before = process_cpu_seconds(broker_pid) if broker_pid is not None else None
            due, returned, sent, acknowledged = _produce_traced(stand.client_config, topic, rate, records, acks, value_pool(100))
            producer_cpu = _cpu_ns() - cpu_before
            broker_after = process_cpu_seconds(broker_pid) if broker_pid is not None else None
            received = receiver.latencies(timeout=20)
    finally:
        stand.delete_topic(topic)
    receiver_cpu = received[1] if len(received) >= RECEIVED_FIELDS and received[0] == -1 else 0
    broker_cpu = int((broker_after - broker_before) * 1e9) if broker_before is not None and broker_after is not None else 0
    rows = received[RECEIVED_FIELDS:] if receiver_cpu else received
    return RunTrace(topic, due, returned, sent, acknowledged, rows, producer_cpu, receiver_cpu, broker_cpu)


class BrokerStamps:
    """The broker's stage stamps of one topic: appends by base offset, consumer Fetch stages by fetch offset."""

    def __init__(self) -> None:
        self.append_bases: list[int] = []
        self.append_at: list[int] = []
        # stage -> fetch offset -> ns (the last stamp: the Fetch that returned records from there)
        self.fetch: dict[str, dict[int, int]] = {}

    def appended(self, offset: int) -> int | None:
        """When the batch holding ``offset`` was appended (the last append at or below it)."""
        index = bisect.bisect_right(self.append_bases, offset) - 1
        return self.append_at[index] if index >= 0 else None


def read_broker_stamps(paths: list[str]) -> dict[str, BrokerStamps]:
    """Stamps by the client's topic name from trace files (``log_formats.replication_trace`` lines; the consumer stages and appends)."""
    appends: dict[str, list[tuple[int, int]]] = {}
    by_topic: dict[str, BrokerStamps] = {}
    wanted = {consumer_fetch_trace.FETCH_ARRIVED, consumer_fetch_trace.FETCH_WOKE, consumer_fetch_trace.ANSWER_BUILT, consumer_fetch_trace.ANSWER_RETURNED}
    for path in paths:
        with open(path, encoding="utf-8") as lines:
            for line in lines:
                fields = line.rstrip("\n").split("\t")
                if len(fields) != FIELDS:
                    continue
                stage, stored, _partition, offset, _replica, nanoseconds = fields
                topic = stored.rpartition(TENANT_SEPARATOR)[2]  # a tenant's topic is stamped by its stored name
                if stage == APPEND:
                    appends.setdefault(topic, []).append((int(offset), int(nanoseconds)))
                elif stage in wanted:
                    by_topic.setdefault(topic, BrokerStamps()).fetch.setdefault(stage, {})[int(offset)] = int(nanoseconds)
    for topic, stamped in appends.items():
        stamped.sort()
        stamps = by_topic.setdefault(topic, BrokerStamps())
        stamps.append_bases = [base for base, _ in stamped]
        stamps.append_at = [at for _, at in stamped]
    return by_topic


def _broker_split(stamps: BrokerStamps, offset: int, fetch_offset: int, started: int, fetched: int) -> tuple[tuple[int, int, int, int, int], bool] | None:
    """The broker stage of one record in five parts (see the module docstring) and whether its Fetch was parked
    when the record was appended (else it came later); None when a stamp is missing."""
    appended = stamps.appended(offset)
    fetch = stamps.fetch
    arrived = fetch.get(consumer_fetch_trace.FETCH_ARRIVED, {}).get(fetch_offset)
    built = fetch.get(consumer_fetch_trace.ANSWER_BUILT, {}).get(fetch_offset)
    returned = fetch.get(consumer_fetch_trace.ANSWER_RETURNED, {}).get(fetch_offset)
    if appended is None or arrived is None or built is None or returned is None:
        return None
    woke = fetch.get(consumer_fetch_trace.FETCH_WOKE, {}).get(fetch_offset)
    # The read that found the record: after a wake-up of this Fetch, else on its arrival; never before the append.
    parked = woke is not None and arrived < appended <= woke
    read = max(woke if woke is not None and woke > arrived else arrived, appended)
    return (appended - started, read - appended, built - read, returned - built, fetched - returned), parked


def stage_samples(traces: list[RunTrace], broker_stamps: dict[str, BrokerStamps] | None = None) -> dict[str, list[int]]:
    """Nanoseconds per stage (see STAGES) over every record received in ``traces``.

    The broker's sub-stages have samples only where ``broker_stamps`` has the record's stamps.
    """
    samples: dict[str, list[int]] = {stage: [] for stage in STAGES}
    split_stages = [stage for stage in STAGES if stage.startswith("  of it:") and "round trip" not in stage]
    parked_stage, unparked_stage, turnaround_stage, way_in_stage = (stage for stage in STAGES if stage.startswith("    "))
    for trace in traces:
        rows = trace.received
        stamps = (broker_stamps or {}).get(trace.topic)
        for position in range(0, len(rows), RECEIVED_FIELDS):
            offset, fetch_offset, fetch_sent, previous_answer, fetched, queued, returned_to_app = rows[position : position + RECEIVED_FIELDS]
            if offset >= len(trace.due) or offset not in trace.sent:
                continue
            due, produced, started = trace.due[offset], trace.returned[offset], trace.sent[offset]
            values = {
                "produce()": produced - due,
                "sender wake-up": started - produced,
                "broker (produce+append+fetch wake+answer)": fetched - started,
                "  of it: producer's Produce round trip": trace.acknowledged[offset] - started,
                "fetcher hand-off": queued - fetched,
                "consumer hand-off": returned_to_app - queued,
                "  fetch answer -> application (the two above)": returned_to_app - fetched,
                "end to end": returned_to_app - due,
            }
            for stage, value in values.items():
                samples[stage].append(value)
            split = _broker_split(stamps, offset, fetch_offset, started, fetched) if stamps is not None else None
            if split is not None:
                parts, parked = split
                for stage, value in zip(split_stages, parts, strict=True):
                    samples[stage].append(value)
                samples[parked_stage if parked else unparked_stage].append(parts[1])
                if not parked:
                    if previous_answer >= 0:
                        samples[turnaround_stage].append(fetch_sent - previous_answer)
                    arrived_at_broker = stamps.fetch.get(consumer_fetch_trace.FETCH_ARRIVED, {}).get(fetch_offset)
                    if arrived_at_broker is not None:
                        samples[way_in_stage].append(arrived_at_broker - fetch_sent)
    return samples


def percentile(sorted_values: list[int], fraction: float) -> float:
    if not sorted_values:
        return float("nan")
    return sorted_values[min(len(sorted_values) - 1, int(fraction * len(sorted_values)))] / 1e6


def cpu_per_record(traces: list[RunTrace]) -> tuple[float, float, float]:
    """Microseconds of CPU per record: (producing process, receiving process, broker; 0 when unknown)."""
    records = sum(len(trace.due) for trace in traces) or 1
    return (
        sum(trace.producer_cpu_ns for trace in traces) / records / 1e3,
        sum(trace.receiver_cpu_ns for trace in traces) / records / 1e3,
        sum(trace.broker_cpu_ns for trace in traces) / records / 1e3,
    )


def format_table(samples: dict[str, list[int]]) -> str:
    lines = [f"{'stage':48s} {'p50 ms':>8s} {'p99 ms':>8s} {'p99.9 ms':>9s} {'records':>8s}"]
    for stage, values in samples.items():
        if not values:
            continue
        ordered = sorted(values)
        lines.append(f"{stage:48s} {percentile(ordered, 0.5):8.3f} {percentile(ordered, 0.99):8.3f} {percentile(ordered, 0.999):9.3f} {len(ordered):8d}")
    lines.append(f"records: {len(samples['end to end'])}")
    return "\n".join(lines)


@contextmanager
def _traced_stand(prefix: str, replication_factor: int) -> Iterator[Stand]:
    """Brokers of their own that stamp their stages into ``<prefix>.<pid>`` (written when they exit): one, or
    the replicated three with the tenant key their security requires."""
    from bench.broker_launcher import LocalBroker
    from bench.replicated_brokers import LEADER, ReplicatedBrokers
    from bench.replicated_topics import wait_until_healthy
    from weir.admin import AdminClient

    if replication_factor == 1:
        before = os.environ.get(TRACE_VARIABLE)
        os.environ[TRACE_VARIABLE] = prefix
        try:
            broker = LocalBroker().__enter__()
        finally:
            if before is None:
                del os.environ[TRACE_VARIABLE]
            else:
                os.environ[TRACE_VARIABLE] = before
        try:
            yield admin_stand(broker.address, 1, broker.pid)
        finally:
            broker.__exit__(None, None, None)
        return
    with ReplicatedBrokers(environment={TRACE_VARIABLE: prefix}) as brokers:
        client_config = brokers.client_config()
        admin = AdminClient(client_config)

        def create(topic: str) -> None:
            brokers.create_topic(topic, replication_factor=replication_factor, configs={"min.insync.replicas": str(min(2, replication_factor))})
            wait_until_healthy(admin, topic, 1, ADMIN_TIMEOUT)

        def keep(topic: str) -> None:
            """The stand has no delete; its data directories go when it stops."""

        try:
            yield Stand(client_config, create, keep, brokers.pid(LEADER))
        finally:
            admin.close()


def run(*, bootstrap: str | None, rate: int, seconds: float, runs: int, acks: str = "1", replication_factor: int = 1) -> str:
    """Measure ``runs`` runs (against ``bootstrap``, or brokers started for them) and return the report.

    Without ``bootstrap`` one broker is started, or for a ``replication_factor`` above 1 the three
    brokers of :class:`bench.replicated_brokers.ReplicatedBrokers` (each run's topic led by broker 1
    with ``min.insync.replicas=2``), and the leader's stamps split the broker stage.
    """
    if rate <= 0 or seconds <= 0 or runs <= 0:
        raise ValueError(f"rate, seconds and runs must be positive, got {rate}, {seconds}, {runs}")
    if not bootstrap and not 1 <= replication_factor <= len(REPLICATED_NODE_IDS):
        raise ValueError(f"a replication factor of 1 to {len(REPLICATED_NODE_IDS)} without --bootstrap, got {replication_factor}")

    def measure(stand: Stand) -> list[RunTrace]:
        return [run_once(stand, rate, seconds, acks) for _ in range(runs)]

    load_before = os.getloadavg()[0]
    broker_stamps: dict[str, BrokerStamps] | None = None
    if bootstrap:
        traces = measure(admin_stand(bootstrap, replication_factor))
    else:
        with tempfile.TemporaryDirectory(prefix="weir-breakdown-") as directory:
            prefix = os.path.join(directory, "trace")
            with _traced_stand(prefix, replication_factor) as stand:
                traces = measure(stand)
            # The leader wrote its stamps as it exited (followers' appends are not the stage's).
            broker_stamps = read_broker_stamps([f"{prefix}.{stand.broker_pid}"])
    load_after = os.getloadavg()[0]
    producer_cpu, receiver_cpu, broker_cpu = cpu_per_record(traces)
    broker_part = f", broker {broker_cpu:.0f} us" if broker_cpu else ""
    leader_part = " (the leader)" if broker_cpu and replication_factor > 1 else ""
    return "\n".join(
        (
            f"latency breakdown: {runs} run(s) of {seconds:g} s at {rate:,} records/s, linger.ms=0, acks={acks}, replication factor {replication_factor}",
            format_table(stage_samples(traces, broker_stamps)),
            f"CPU per record: producer process {producer_cpu:.0f} us, consumer process {receiver_cpu:.0f} us (receiver: whole process life){broker_part}{leader_part}",
            f"load average (1 min) before / after: {load_before:.1f} / {load_after:.1f} (compare runs taken at the same load only)",
        )
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.latency_breakdown", description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--bootstrap", help="a running Weir broker (default: start one)")
    parser.add_argument("--rate", type=int, default=5000, help="records/s (default 5000)")
    parser.add_argument("--seconds", type=float, default=DEFAULT_SECONDS, help=f"seconds per run (default {DEFAULT_SECONDS:g})")
    parser.add_argument("--runs", type=int, default=DEFAULT_RUNS, help=f"runs (default {DEFAULT_RUNS})")
    parser.add_argument("--acks", choices=("1", "all"), default="1")
    parser.add_argument(
        "--replication-factor", type=int, default=1, help="of the run's topic (at --bootstrap it needs that many brokers; without, up to 3 are started)"
    )
    arguments = parser.parse_args(argv)
    try:
        print(
            run(
                bootstrap=arguments.bootstrap,
                rate=arguments.rate,
                seconds=arguments.seconds,
                runs=arguments.runs,
                acks=arguments.acks,
                replication_factor=arguments.replication_factor,
            )
        )
    except ValueError as error:
        parser.error(str(error))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

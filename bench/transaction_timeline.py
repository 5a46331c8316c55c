"""``python -m bench.transaction_timeline``: where a transaction's time goes, librdkafka's or the SDK's (issue 15).

A transactional producer commits every ``--records-per-transaction`` records to a fresh
one-partition topic (RF 3, min.insync.replicas 2) of a :class:`bench.stack.LocalStack`, with
the client's ``eos,protocol`` debug log. librdkafka (``--client librdkafka``, the default)
writes it to standard error with its wall-clock time in milliseconds (file descriptor 2 goes to
a temporary file meanwhile, beside this process's own BEGIN / END lines); Weir's SDK
(``--client sdk``) logs the same request names through the ``logger`` given in its
configuration, kept in memory with each record's wall-clock time. Each transaction's timeline is
rebuilt from the log: begin_transaction(), librdkafka's registration of the partition (not in
the SDK's log), AddPartitionsToTxn sent and answered, Produce sent and answered, EndTxn sent and
answered, commit_transaction() returned. The report gives each step's median and mean over the
transactions (the first few, warming up, left out) and the brokers' CPU seconds per
transaction (every broker process, from ``/proc``), so two trees compare at the same load by
CPU as well as by time.

librdkafka stamps its lines in whole milliseconds: a step's time is good to about a millisecond.
The SDK's records carry microseconds, but a step stamped on the sender thread (Produce sent) may
wait for the interpreter lock behind the application's produce() calls.
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console

from bench.payloads import value_pool
from bench.replicated_topics import create_topic, wait_until_healthy
from bench.stack import ApiClient, LocalStack
from bench.transactions import CLIENTS, LIBRDKAFKA_CLIENT, REPLICATION_FACTOR, TOPIC_CONFIGS, TOPIC_READY_TIMEOUT_SECONDS, TRANSACTIONAL_1000, Workload
from weir.admin import AdminClient

WARM_UP_TRANSACTIONS = 5  # left out of the figures: connections and caches settle
CLIENT_SECONDS = 60.0
BEGIN = "begin"
END = "end"
# The steps of one transaction, in order: (name, a substring of the librdkafka debug line that marks it).
MARKS: tuple[tuple[str, str], ...] = (
    ("registering", "Registering partitions with transaction"),
    ("add sent", "Sent AddPartitionsToTxnRequest"),
    ("add answered", "Received AddPartitionsToTxnResponse"),
    ("produce sent", "Sent ProduceRequest"),
    ("produce answered", "Received ProduceResponse"),
    ("end sent", "Sent EndTxnRequest"),
    ("end answered", "Received EndTxnResponse"),
)
STEPS = (BEGIN, *(name for name, _ in MARKS), END)
# The SDK logs no registration step: AddPartitionsToTxn leaves from produce() itself.
SDK_STEPS = tuple(step for step in STEPS if step != "registering")


@dataclass(frozen=True)
class Event:
    """One timestamped line: a librdkafka debug message or the application's own BEGIN / END."""

    seconds: float
    text: str


def transaction_timelines(events: Iterable[Event]) -> list[dict[str, float]]:
    """Each transaction's first time of every step (BEGIN starts one); steps a transaction lacks are absent."""
    timelines: list[dict[str, float]] = []
    for event in events:
        if event.text == BEGIN:
            timelines.append({BEGIN: event.seconds})
            continue
        if not timelines:
            continue
        current = timelines[-1]
        if event.text == END:
            current.setdefault(END, event.seconds)
            continue
        for name, marker in MARKS:
            if marker in event.text and name not in current:
                current[name] = event.seconds
                break
    return timelines


def step_durations(timelines: Sequence[dict[str, float]], steps: Sequence[str] = STEPS) -> dict[str, list[float]]:
    """Milliseconds of each step (``a -> b``) and of the whole transaction, over the timelines that have every one of ``steps``."""
    durations: dict[str, list[float]] = {}
    for timeline in timelines:
        if not all(step in timeline for step in steps):
            continue
        for before, after in zip(steps, steps[1:]):
            durations.setdefault(f"{before} -> {after}", []).append((timeline[after] - timeline[before]) * 1000.0)
        durations.setdefault("transaction", []).append((timeline[END] - timeline[BEGIN]) * 1000.0)
    return durations


APP_PREFIX = "APP|"  # this process's own lines in the captured standard error: APP|<seconds>|<text>


def parse_log(lines: Iterable[str]) -> list[Event]:
    """The events of a captured standard error, in time order: librdkafka's ``%<level>|<seconds>|<facility>|<name>| <message>`` lines and APP lines."""
    events = []
    for line in lines:
        fields = line.rstrip("\n").split("|", 4)
        try:
            if line.startswith(APP_PREFIX) and len(fields) >= 3:
                events.append(Event(float(fields[1]), "|".join(fields[2:])))
            elif line.startswith("%") and len(fields) == 5:
                events.append(Event(float(fields[1]), fields[4].strip()))
        except ValueError:
            continue  # not a line of either kind
    return sorted(events, key=lambda event: event.seconds)


@contextmanager
def standard_error_to(path: Path) -> Iterator[None]:
    """File descriptor 2 (where librdkafka's default logger writes) goes to ``path`` meanwhile."""
    sys.stderr.flush()
    saved = os.dup(2)
    with path.open("wb") as target:
        os.dup2(target.fileno(), 2)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)


def _mark(text: str) -> None:
    os.write(2, f"{APP_PREFIX}{time.time():.6f}|{text}\n".encode())


def broker_cpu_seconds(stack: LocalStack, brokers: int) -> float:
    """User + system CPU seconds of every broker process of ``stack`` so far."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for node_id in range(1, brokers + 1):
        fields = Path(f"/proc/{stack.broker_pid(node_id)}/stat").read_text().rsplit(")", 1)[1].split()
        total += (int(fields[11]) + int(fields[12])) / ticks  # utime, stime (fields 14 and 15 of proc(5))
    return total


class _Recorder(logging.Handler):
    """Keeps every record of the SDK's log as an Event (its wall-clock time and message)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.events: list[Event] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.events.append(Event(record.created, record.getMessage()))


def _sdk_transactions(config: dict[str, object], topic: str, records_per_transaction: int, transactions: int, values: list[bytes]) -> list[Event]:
    """Run the transactions with Weir's SDK, its eos,protocol log recorded; its events and BEGIN / END, in time order."""
    from weir import Producer

    recorder = _Recorder()
    logger = logging.getLogger(f"bench.transaction_timeline.sdk.{time.time_ns()}")
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    logger.addHandler(recorder)
    producer = Producer({**config, "debug": "eos,protocol", "logger": logger})
    try:
        producer.list_topics(topic, timeout=CLIENT_SECONDS)
        producer.init_transactions(CLIENT_SECONDS)
        for _ in range(transactions):
            recorder.events.append(Event(time.time(), BEGIN))
            producer.begin_transaction()
            for index in range(records_per_transaction):
                producer.produce(topic, values[index % len(values)])
            producer.commit_transaction(CLIENT_SECONDS)
            recorder.events.append(Event(time.time(), END))
        producer.flush(CLIENT_SECONDS)
    finally:
        producer.close()
    return sorted(recorder.events, key=lambda event: event.seconds)


def run(console: Console, records_per_transaction: int, transactions: int, brokers: int = 3, client_name: str = LIBRDKAFKA_CLIENT.name) -> int:
    from confluent_kafka import Producer

    client = CLIENTS[client_name]
    workload = Workload(f"transactional, {records_per_transaction} records/txn", records_per_transaction)
    log_path = Path(tempfile.mkdtemp(prefix="weir-bench-txn-timeline-")) / "librdkafka.log"
    with LocalStack(console, "transaction-timeline") as stack:
        assert stack.credentials is not None
        api, admin = ApiClient.for_stack(stack.credentials), AdminClient(stack.credentials.client_config())
        try:
            topic = f"demo-bench-txn-timeline-{time.time_ns()}"
            create_topic(api, topic, 1, REPLICATION_FACTOR, TOPIC_CONFIGS)
            wait_until_healthy(admin, topic, 1, TOPIC_READY_TIMEOUT_SECONDS)
        finally:
            admin.close()
        config = client.producer_config(stack.credentials, TRANSACTIONAL_1000, 1)
        values = value_pool(100)
        if client is not LIBRDKAFKA_CLIENT:
            cpu_before = broker_cpu_seconds(stack, brokers)
            events = _sdk_transactions(config, topic, records_per_transaction, transactions, values)
            cpu = broker_cpu_seconds(stack, brokers) - cpu_before  # init_transactions() included, once
            marks = [event.seconds for event in events if event.text in (BEGIN, END)]
            seconds = marks[-1] - marks[0]
            durations = step_durations(transaction_timelines(events)[WARM_UP_TRANSACTIONS:], SDK_STEPS)
            return _report(console, workload, transactions, records_per_transaction, seconds, cpu, durations)
        config |= {"debug": "eos,protocol"}
        with standard_error_to(log_path):
            producer = Producer(config)
            producer.list_topics(topic, timeout=CLIENT_SECONDS)
            producer.init_transactions(CLIENT_SECONDS)
            cpu_before, started = broker_cpu_seconds(stack, brokers), time.perf_counter()
            for _ in range(transactions):
                _mark(BEGIN)
                producer.begin_transaction()
                for index in range(records_per_transaction):
                    producer.produce(topic, values[index % len(values)])
                producer.commit_transaction(CLIENT_SECONDS)
                _mark(END)
            seconds, cpu = time.perf_counter() - started, broker_cpu_seconds(stack, brokers) - cpu_before
            producer.flush(CLIENT_SECONDS)
            del producer  # its threads end (and stop logging) before standard error is given back
    with log_path.open(encoding="utf-8", errors="replace") as log:
        durations = step_durations(transaction_timelines(parse_log(log))[WARM_UP_TRANSACTIONS:])
    console.print(f"librdkafka's log: {log_path}", markup=False)
    return _report(console, workload, transactions, records_per_transaction, seconds, cpu, durations)


def _report(
    console: Console, workload: Workload, transactions: int, records_per_transaction: int, seconds: float, cpu: float, durations: dict[str, list[float]]
) -> int:
    """The throughput, the brokers' CPU and each step's median and mean; 1 when no transaction had every step."""
    console.print(f"{workload.label}: {transactions} transactions, {records_per_transaction * transactions / seconds:,.0f} records/s", markup=False)
    console.print(f"brokers' CPU: {cpu / transactions * 1000:.2f} ms per transaction; load average {os.getloadavg()[0]:.1f}", markup=False)
    for name, values_ms in durations.items():
        console.print(f"  {name:34s} median {statistics.median(values_ms):7.2f} ms  mean {statistics.mean(values_ms):7.2f} ms", markup=False)
    return 0 if durations else 1


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.transaction_timeline", description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--records-per-transaction", type=int, default=100)
    parser.add_argument("--transactions", type=int, default=200)
    parser.add_argument("--client", choices=sorted(CLIENTS), default=LIBRDKAFKA_CLIENT.name, help="librdkafka (the default) or Weir's SDK")
    arguments = parser.parse_args(argv)
    return run(Console(), arguments.records_per_transaction, arguments.transactions, client_name=arguments.client)


if __name__ == "__main__":
    raise SystemExit(main())

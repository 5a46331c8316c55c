"""``python -m bench.client_cpu {produce,produce-callbacks,consume} [--records N] [--runs R] [--partitions P [--keyed]]``:
the SDK client's own CPU seconds per million 100-byte records (issue 19 goals 2 and 5).

Records per second swing with the machine's load; the CPU time a client spends on a million records
(user + system time of this process, every thread: the application's loop, the producer's sender or the
consumer's fetcher, gRPC) swings much less, so it compares two versions of the SDK measured back to
back on a busy machine. One broker is started (bench.broker_launcher), each run uses a topic of one
partition, and the loop is the bench's: ``produce()`` with ``poll(0)`` every 1,000 records, then
``flush()`` (``produce-callbacks``: a delivery callback on every record, the bench's default), or
``consume(num_messages=10000)`` reading ``value()`` and ``error()`` of every Message.

``--partitions P`` (produce scenarios) makes the topic P partitions and sends every record to a random
one (issue 19 goal 5's random-partition produce): an explicit ``partition=`` per record, or with
``--keyed`` a key per record drawn from KEYS keys (the default partitioner hashes it). The choices are
drawn before the measured loop.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import statistics
import time
import uuid
from collections.abc import Callable

from bench.broker_launcher import LocalBroker
from weir import Consumer, Producer, TopicPartition
from weir.admin import AdminClient, NewTopic
from weir.message import OFFSET_BEGINNING

RECORD_SIZE = 100
POLL_EVERY = 1000  # records between poll(0) calls, as the bench's produce loop
CONSUME_BATCH = 10_000
KEYS = 10_000  # distinct keys of --keyed
TIMEOUT = 120.0  # seconds for admin calls, flush() and each consume()


def cpu_seconds() -> float:
    """User + system CPU time of this process, all threads."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def produce(
    address: str, topic: str, records: int, value: bytes, callback: Callable[[object, object], None] | None, partitions: int = 1, keyed: bool = False
) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of producing ``records`` values and flushing them (to random
    partitions of ``partitions`` when more than one, by key when ``keyed``)."""
    producer = Producer({"bootstrap.servers": address, "acks": 1, "batch.size": 1_000_000, "batch.num.messages": 1_000_000, "linger.ms": 10})
    chooser = random.Random(records)
    keys = [b"key-%d" % chooser.randrange(KEYS) for _ in range(POLL_EVERY)] if keyed else []
    targets = [chooser.randrange(partitions) for _ in range(POLL_EVERY)] if partitions > 1 and not keyed else []
    try:
        send, poll = producer.produce, producer.poll
        cpu, started = cpu_seconds(), time.perf_counter()
        for round_number in range(records // POLL_EVERY):
            if keys:
                shift = round_number % POLL_EVERY  # another order of the keys every round
                for key in keys[shift:] + keys[:shift]:
                    send(topic, value, key, on_delivery=callback)
            elif targets:
                shift = round_number % POLL_EVERY
                for partition in targets[shift:] + targets[:shift]:
                    send(topic, value, partition=partition, on_delivery=callback)
            elif callback is None:
                for _ in range(POLL_EVERY):
                    send(topic, value)
            else:
                for _ in range(POLL_EVERY):
                    send(topic, value, on_delivery=callback)
            poll(0)
        if producer.flush(TIMEOUT):
            raise RuntimeError(f"records still undelivered after flush({TIMEOUT})")
        return time.perf_counter() - started, cpu_seconds() - cpu
    finally:
        producer.close()


def consume(address: str, topic: str, records: int) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of reading ``records`` records from the beginning."""
    consumer = Consumer({"bootstrap.servers": address, "group.id": f"client-cpu-{uuid.uuid4().hex}", "enable.auto.commit": False})
    try:
        consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        received = 0
        cpu, started = cpu_seconds(), time.perf_counter()
        while received < records:
            messages = consumer.consume(num_messages=min(CONSUME_BATCH, records - received), timeout=TIMEOUT)
            if not messages:
                raise RuntimeError(f"no record within {TIMEOUT}s after {received} of {records}")
            for message in messages:
                if message.error() is not None:
                    raise RuntimeError(f"consume error: {message.error()}")
                message.value()
            received += len(messages)
        return time.perf_counter() - started, cpu_seconds() - cpu
    finally:
        consumer.close()


def one_run(address: str, scenario: str, records: int, partitions: int = 1, keyed: bool = False) -> tuple[float, float]:
    """One run on a new topic: (wall seconds, CPU seconds) of the measured part."""
    admin = AdminClient({"bootstrap.servers": address})
    topic = f"client-cpu-{uuid.uuid4().hex}"
    admin.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=1)])[topic].result(timeout=TIMEOUT)
    value = os.urandom(RECORD_SIZE)
    if scenario == "consume":
        produce(address, topic, records, value, None)
        return consume(address, topic, records)
    callback = (lambda error, message: None) if scenario == "produce-callbacks" else None
    return produce(address, topic, records, value, callback, partitions, keyed)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenario", choices=("produce", "produce-callbacks", "consume"))
    parser.add_argument("--records", type=int, default=1_000_000, help=f"records per run, a multiple of {POLL_EVERY} (default 1,000,000)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--partitions", type=int, default=1, help="produce: partitions of the topic, each record to a random one (default 1)")
    parser.add_argument("--keyed", action="store_true", help=f"produce with --partitions: a random key of {KEYS:,} per record instead of a partition")
    options = parser.parse_args()
    if options.records <= 0 or options.records % POLL_EVERY:
        parser.error(f"--records must be a positive multiple of {POLL_EVERY}")
    if options.partitions < 1 or (options.partitions > 1 and options.scenario == "consume") or (options.keyed and options.partitions == 1):
        parser.error("--partitions is at least 1 and for the produce scenarios; --keyed needs --partitions above 1")
    with LocalBroker() as broker:
        results = [one_run(broker.address, options.scenario, options.records, options.partitions, options.keyed) for _ in range(options.runs)]
    for run, (wall, cpu) in enumerate(results, 1):
        print(
            f"{options.scenario} run {run}/{options.runs}: {options.records / wall:,.0f} records/s, {cpu / options.records * 1e6:.2f} CPU-s per million records"
        )
    median_cpu = statistics.median(cpu for _, cpu in results) / options.records * 1e6
    median_rate = statistics.median(options.records / wall for wall, _ in results)
    if options.partitions > 1:
        print(f"{options.scenario}: {options.partitions} partitions, every record to a random one ({'by key' if options.keyed else 'partition='})")
    print(f"{options.scenario} median: {median_rate:,.0f} records/s, {median_cpu:.2f} CPU-s per million records (load {os.getloadavg()[0]:.1f})")


if __name__ == "__main__":
    main()

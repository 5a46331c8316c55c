"""Weir through its Python SDK, exactly as an application uses it.

Every run creates a topic of its own (one partition, replication factor 1) with the admin
client and deletes it afterwards. The producer uses acks=1 without idempotence (which would
require acks=all), batches of up to ``batch.size`` bytes and a short linger; the consumer
assigns the partition from the beginning and reads with ``consume(num_messages=10000)``.
``produce_to`` measures the same producer against a topic made by the caller, with the acks,
idempotence and client settings (credentials) of its options: ``bench.replication_throughput``
compares replicated and unreplicated topics with it.

The same runs measure Weir's Kafka-protocol listener with librdkafka (``LIBRDKAFKA``): the SDK
has confluent-kafka's API, so only the client library and the bootstrap address change, and the
two rows of a report compare the two front doors of one broker with identical settings.
"""

from __future__ import annotations

import importlib
import time
import uuid
from array import array
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from bench.latency_receiver import LatencyReceiver, ReceiverSpec
from bench.measurements import LatencySample, LatencySummary, ThroughputSample
from bench.pacing import RatePacer
from bench.payloads import read_stamp, stamped_value
from bench.profiling import ClientProfiler
from bench.systems.base import LATENCY_SAMPLE_INTERVAL, BenchmarkIntegrityError, EndToEndPlan, SystemUnavailable
from weir.consumer import consume_available

NAME = "Weir"
# Messages asked for per consume() call.
CONSUME_BATCH = 10_000
# Seconds one consume() call may wait; the scenario gives up after this long without a record.
CONSUME_TIMEOUT = 10.0
# Seconds allowed for flush() at the end of a produce run and for admin calls.
FLUSH_TIMEOUT = 120.0
ADMIN_TIMEOUT = 30.0
# Delivery reporting modes of the produce scenario (see ``WeirOptions.delivery``).
DELIVERY_SAMPLED = "sampled"
DELIVERY_EVERY_RECORD = "every"

# Brackets the measured part of a run (scenario, record size), e.g. to profile the broker just then.
BrokerSampling = Callable[[str, int], AbstractContextManager[object]]


def _not_sampled(scenario: str, record_size: int) -> AbstractContextManager[object]:
    return nullcontext()


@dataclass(frozen=True)
class ClientLibrary:
    """The client of a Weir run: a module with confluent-kafka's API (Producer, Consumer, TopicPartition, ...) and its admin module."""

    system_name: str  # the row's name in the report
    module: str
    admin_module: str

    def load(self) -> ModuleType:
        return importlib.import_module(self.module)

    def load_admin(self) -> ModuleType:
        return importlib.import_module(self.admin_module)


SDK = ClientLibrary(NAME, "weir", "weir.admin")  # over gRPC
# The end-to-end receiver's first record, which it produces and reads back before the run starts (not a stamped value: shorter).
WARM_UP_VALUE = b"warm-up"
WARM_UP_SECONDS = 30.0
LIBRDKAFKA = ClientLibrary(f"{NAME} (Kafka protocol, librdkafka)", "confluent_kafka", "confluent_kafka.admin")  # over the Kafka listener


@dataclass(frozen=True)
class WeirOptions:
    """Client settings of the Weir runs.

    ``delivery``: ``sampled`` passes an on_delivery callback for one record in
    LATENCY_SAMPLE_INTERVAL (which also measures produce latency) and checks the rest through
    flush() returning 0 and the partition's end offset; ``every`` counts a callback per record,
    as an application that wants a report for each record would. ``acks`` and ``idempotence``
    go to the producer (idempotence requires acks "all"); ``client_settings`` (for example
    SASL credentials) go to every client.
    """

    bootstrap: str
    compression: str = "none"
    batch_bytes: int = 1_000_000
    linger_ms: int = 10
    delivery: str = DELIVERY_SAMPLED
    acks: str = "1"
    idempotence: bool = False
    client_settings: Mapping[str, Any] = field(default_factory=dict)
    library: ClientLibrary = SDK

    def admin_config(self) -> dict[str, Any]:
        return {"bootstrap.servers": self.bootstrap, **self.client_settings}

    def producer_config(self, linger_ms: int | None = None) -> dict[str, Any]:
        return {
            "bootstrap.servers": self.bootstrap,
            **self.client_settings,
            "acks": self.acks,
            "enable.idempotence": self.idempotence,
            "compression.type": self.compression,
            "batch.size": self.batch_bytes,
            # Let batch.size, not the record count, close a batch.
            "batch.num.messages": 1_000_000,
            "linger.ms": self.linger_ms if linger_ms is None else linger_ms,
            # librdkafka queues at most 100,000 records by default and then refuses produce() with
            # BufferError; the runs hand it every record at once, as they do the SDK.
            **({"queue.buffering.max.messages": 10_000_000, "queue.buffering.max.kbytes": 2_097_151} if self.library == LIBRDKAFKA else {}),
        }

    def consumer_config(self) -> dict[str, Any]:
        return {
            "bootstrap.servers": self.bootstrap,
            **self.client_settings,
            "group.id": f"weir-bench-{uuid.uuid4().hex}",
            "enable.auto.commit": False,
            "isolation.level": "read_uncommitted",
        }


class DeliveryCounter:
    """Counts delivery reports and keeps the first error; latencies of sampled records in ns."""

    def __init__(self) -> None:
        self.delivered = 0
        self.first_error: Any = None
        self.latencies_ns: list[int] = []

    def on_delivery(self, error: Any, message: Any) -> None:
        if error is not None:
            if self.first_error is None:
                self.first_error = error
            return
        self.delivered += 1

    def timed(self, produced_ns: int) -> Callable[[Any, Any], None]:
        def on_delivery(error: Any, message: Any) -> None:
            self.latencies_ns.append(time.perf_counter_ns() - produced_ns)
            self.on_delivery(error, message)

        return on_delivery


class WeirSystem:
    """A Weir broker at ``options.bootstrap`` reached with ``options.library``; used from one thread."""

    def __init__(self, options: WeirOptions, profile_directory: Any = None, broker_sampling: BrokerSampling = _not_sampled) -> None:
        self.options = options
        self._broker_sampling = broker_sampling
        self.name = options.library.system_name
        self.profile_directory = profile_directory
        self.profile_summaries: list[str] = []
        self._client = options.library.load()
        admin = options.library.load_admin()
        self._new_topic = admin.NewTopic
        self._admin = admin.AdminClient(options.admin_config())
        try:
            self._admin.list_topics(timeout=5)
        except self._client.KafkaException as error:
            raise SystemUnavailable(self.name, f"{options.bootstrap}: {error}") from None

    def describe_settings(self) -> str:
        return (
            f"{self.name} at {self.options.bootstrap}: acks={self.options.acks}, enable.idempotence={str(self.options.idempotence).lower()}, compression.type={self.options.compression}, "
            f"batch.size={self.options.batch_bytes:,}, linger.ms={self.options.linger_ms}, delivery reports: {self.options.delivery}; "
            f"consume(num_messages={CONSUME_BATCH:,}); e2e linger.ms=0"
        )

    # ------------------------------------------------------------------ topics

    def _create_topic(self) -> str:
        topic = f"weir-bench-{uuid.uuid4().hex}"
        futures = self._admin.create_topics([self._new_topic(topic, num_partitions=1, replication_factor=1)])
        futures[topic].result(timeout=ADMIN_TIMEOUT)
        return topic

    def _delete_topic(self, topic: str) -> None:
        futures = self._admin.delete_topics([topic])
        futures[topic].result(timeout=ADMIN_TIMEOUT)

    def _end_offset(self, topic: str) -> int:
        consumer = self._client.Consumer(self.options.consumer_config())
        try:
            _low, high = consumer.get_watermark_offsets(self._client.TopicPartition(topic, 0), timeout=ADMIN_TIMEOUT)
        finally:
            consumer.close()
        return high

    # ------------------------------------------------------------------ produce

    def _send(self, producer: Any, topic: str, records: int, values: list[bytes], counter: DeliveryCounter) -> None:
        """Hand ``records`` values to ``producer``; delivery reports go to ``counter``."""
        produce, poll = producer.produce, producer.poll
        pool_size = len(values)
        every_record = self.options.delivery == DELIVERY_EVERY_RECORD
        each_callback = counter.on_delivery if every_record else None
        for chunk_start in range(0, records, LATENCY_SAMPLE_INTERVAL):
            chunk_end = min(chunk_start + LATENCY_SAMPLE_INTERVAL, records)
            produce(topic, values[chunk_start % pool_size], on_delivery=counter.timed(time.perf_counter_ns()))
            if every_record:
                for index in range(chunk_start + 1, chunk_end):
                    produce(topic, values[index % pool_size], on_delivery=each_callback)
            else:
                for index in range(chunk_start + 1, chunk_end):
                    produce(topic, values[index % pool_size])
            # Serve delivery reports once per chunk, as a well-behaved application does.
            poll(0)

    def _load(self, topic: str, records: int, values: list[bytes], profiler_name: str | None) -> tuple[float, DeliveryCounter]:
        counter = DeliveryCounter()
        measured = self._broker_sampling("produce", len(values[0])) if profiler_name else nullcontext()
        with measured, ClientProfiler(self.profile_directory if profiler_name else None, profiler_name or "") as profiler:
            producer = self._client.Producer(self.options.producer_config())
            self._warm_up_producer(producer, topic)
            started = time.perf_counter()
            self._send(producer, topic, records, values, counter)
            remaining = producer.flush(FLUSH_TIMEOUT)
            seconds = time.perf_counter() - started
            producer.close()
        if profiler.summary:
            self.profile_summaries.append(profiler.summary)
        if remaining:
            raise BenchmarkIntegrityError(self.name, f"{remaining} records still undelivered after flush({FLUSH_TIMEOUT})")
        if counter.first_error is not None:
            raise BenchmarkIntegrityError(self.name, f"delivery failed: {counter.first_error}")
        end_offset = self._end_offset(topic)
        if end_offset != records + 1:
            raise BenchmarkIntegrityError(self.name, f"partition end offset is {end_offset} after producing {records} records and the warm-up record")
        return seconds, counter

    def _warm_up_producer(self, producer: Any, topic: str) -> None:
        """Deliver :data:`WARM_UP_VALUE` to ``topic`` before the clock starts, as a running application's producer is warm.

        The producer's set-up is not what the run measures: connections, metadata and, for an
        idempotent producer, its producer id, which librdkafka only asks for about 500 ms after
        the producer starts (its idempotence timer), so an untimed first second made up a fifth
        of a million-record acks=all run through librdkafka (the SDK asks at once).
        """
        failed: list[Any] = []
        producer.produce(topic, WARM_UP_VALUE, on_delivery=lambda error, _message: failed.append(error) if error is not None else None)
        if producer.flush(WARM_UP_SECONDS) or failed:
            raise BenchmarkIntegrityError(self.name, f"the warm-up record was not delivered within {WARM_UP_SECONDS} s: {failed[0] if failed else 'no report'}")

    def produce(self, records: int, values: list[bytes]) -> ThroughputSample:
        topic = self._create_topic()
        try:
            return self.produce_to(topic, records, values)
        finally:
            self._delete_topic(topic)

    def produce_to(self, topic: str, records: int, values: list[bytes]) -> ThroughputSample:
        """Time one producer sending ``records`` values to ``topic``, which must have one empty
        partition (the run checks that its end offset is ``records`` + 1 afterwards: the untimed warm-up record first)."""
        seconds, counter = self._load(topic, records, values, profiler_name=f"weir-produce-{len(values[0])}B")
        return ThroughputSample(records, len(values[0]), seconds, LatencySummary.from_nanoseconds(counter.latencies_ns))

    # ------------------------------------------------------------------ consume

    def consume(self, records: int, values: list[bytes]) -> ThroughputSample:
        topic = self._create_topic()
        try:
            self._load(topic, records, values, profiler_name=None)
            with self._broker_sampling("consume", len(values[0])), ClientProfiler(self.profile_directory, f"weir-consume-{len(values[0])}B") as profiler:
                received, seconds = self._read_all(topic, records)
            if profiler.summary:
                self.profile_summaries.append(profiler.summary)
        finally:
            self._delete_topic(topic)
        return ThroughputSample(received, len(values[0]), seconds)

    def _read_all(self, topic: str, records: int) -> tuple[int, float]:
        consumer = self._client.Consumer(self.options.consumer_config())
        try:
            consumer.assign([self._client.TopicPartition(topic, 0, 1)])  # after the producer's warm-up record (offset 0)
            consume = consumer.consume
            received = 0
            started = time.perf_counter()
            # Bounded: a call that returns nothing within CONSUME_TIMEOUT ends the run.
            while received < records:
                # Never more than are left: consume() waits to fill its batch (as librdkafka's).
                messages = consume(num_messages=min(CONSUME_BATCH, records - received), timeout=CONSUME_TIMEOUT)
                if not messages:
                    raise BenchmarkIntegrityError(self.name, f"no record within {CONSUME_TIMEOUT}s after {received} of {records}")
                for message in messages:
                    if message.error() is not None:
                        raise BenchmarkIntegrityError(self.name, f"consume error: {message.error()}")
                    message.value()
                received += len(messages)
            seconds = time.perf_counter() - started
        finally:
            consumer.close()
        if received != records:
            raise BenchmarkIntegrityError(self.name, f"read {received} records, expected {records}")
        return received, seconds

    # ------------------------------------------------------------------ end to end

    def end_to_end(self, plan: EndToEndPlan, values: list[bytes]) -> LatencySample:
        topic = self._create_topic()
        spec = ReceiverSpec(
            __name__,
            "receive_stamped",
            {
                "consumer_config": self.options.consumer_config(),
                "producer_config": self.options.producer_config(linger_ms=0),
                "topic": topic,
                "client_module": self.options.library.module,
            },
        )
        try:
            with (
                LatencyReceiver(spec, plan.records, seconds_limit=plan.records / plan.rate_per_second + plan.drain_seconds) as receiver,
                self._broker_sampling("e2e", len(values[0])),
            ):
                counter = DeliveryCounter()
                producer = self._client.Producer(self.options.producer_config(linger_ms=0))
                produce, poll = producer.produce, producer.poll
                pacer = RatePacer(plan.rate_per_second)
                pool_size = len(values)
                for index in range(plan.records):
                    wait = pacer.seconds_until_due(index)
                    if wait:
                        time.sleep(wait)
                    produce(topic, stamped_value(values[index % pool_size], pacer.due_ns(index)), on_delivery=counter.on_delivery)
                    poll(0)
                seconds = (time.monotonic_ns() - pacer.start_ns) / 1e9
                remaining = producer.flush(FLUSH_TIMEOUT)
                producer.close()
                latencies = receiver.latencies(timeout=plan.drain_seconds + 5)
        finally:
            self._delete_topic(topic)
        if remaining or counter.first_error is not None:
            raise BenchmarkIntegrityError(self.name, f"{remaining} undelivered, first error: {counter.first_error}")
        if len(latencies) != plan.records:
            raise BenchmarkIntegrityError(self.name, f"received {len(latencies)} of {plan.records} records")
        return LatencySample(len(values[0]), plan.rate_per_second, seconds, latencies)

    def close(self) -> None:
        """The admin client holds no resources that need closing."""


def receive_stamped(
    *,
    expected: int,
    deadline_ns: int,
    on_ready: Callable[[], None],
    consumer_config: dict[str, Any],
    producer_config: dict[str, Any],
    topic: str,
    client_module: str = SDK.module,
) -> array:
    """End-to-end receiver (runs in a child process): consume until ``expected`` records arrived.

    Ready only once a warm-up record it produced itself came back through the consumer: until
    then the consumer may still be connecting, finding the leader and resolving its offset
    (librdkafka took a few hundred milliseconds after assign()), and the first records would
    be charged with that (p99 of ~300 ms at 5,000 records/s through librdkafka).
    """
    client = importlib.import_module(client_module)
    consumer = client.Consumer(consumer_config)
    latencies = array("q")
    try:
        consumer.assign([client.TopicPartition(topic, 0, client.OFFSET_BEGINNING)])
        # consume() waits for all num_messages or the whole timeout (as librdkafka's), which would add
        # up to 100 ms to each latency: the SDK takes what is there once one record came, others poll().
        receive = (lambda: consume_available(consumer, 1000, 0.1)) if client_module == SDK.module else (lambda: [consumer.poll(0.1)])
        _warm_up(client, producer_config, topic, receive, deadline_ns)
        on_ready()
        while len(latencies) < expected and time.monotonic_ns() < deadline_ns:
            messages = [message for message in receive() if message is not None]
            received_ns = time.monotonic_ns()
            for message in messages:
                if message.error() is None and message.value() != WARM_UP_VALUE:
                    latencies.append(received_ns - read_stamp(message.value()))
    finally:
        consumer.close()
    return latencies


def _warm_up(client: ModuleType, producer_config: dict[str, Any], topic: str, receive: Callable[[], list[Any]], deadline_ns: int) -> None:
    """Produce :data:`WARM_UP_VALUE` to ``topic`` and consume until it is read (bounded by ``deadline_ns`` and WARM_UP_SECONDS)."""
    producer = client.Producer(producer_config)
    producer.produce(topic, WARM_UP_VALUE)
    if producer.flush(WARM_UP_SECONDS):
        raise BenchmarkIntegrityError(str(client.__name__), f"the warm-up record was not delivered within {WARM_UP_SECONDS} s")
    until_ns = min(deadline_ns, time.monotonic_ns() + int(WARM_UP_SECONDS * 1e9))
    while time.monotonic_ns() < until_ns:
        if any(message is not None and message.error() is None and message.value() == WARM_UP_VALUE for message in receive()):
            return
    raise BenchmarkIntegrityError(str(client.__name__), f"the warm-up record was not read back within {WARM_UP_SECONDS} s")

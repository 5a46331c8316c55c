"""NATS JetStream as a peer: asynchronous publish into a file-backed stream, pull to consume.

Every run creates a stream of its own (``WEIR_BENCH_<random>`` on subject
``weir-bench.<random>``, file storage, one replica) and deletes it afterwards. The client
(nats-py) is asyncio-based; each scenario runs its own event loop and connection.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from array import array
from collections.abc import Callable
from typing import Any

import nats
from nats.js import api
from nats.js.errors import Error as JetStreamError

from bench.latency_receiver import LatencyReceiver, ReceiverSpec
from bench.measurements import LatencySample, LatencySummary, ThroughputSample
from bench.pacing import RatePacer
from bench.payloads import read_stamp, stamped_value
from bench.systems.base import LATENCY_SAMPLE_INTERVAL, BenchmarkIntegrityError, EndToEndPlan, SystemUnavailable

NAME = "NATS JetStream"
# Publishes in flight without an acknowledgement (nats-py's default is 4,000).
PUBLISH_WINDOW = 10_000
# Messages asked for per pull request.
FETCH_BATCH = 10_000
# Seconds one pull request may wait for its batch.
FETCH_TIMEOUT = 10.0


# Seconds allowed for connecting, in total.
CONNECT_TIMEOUT = 10.0


async def _ignore_error(error: Exception) -> None:
    """Connection errors surface as exceptions from the calls; nats-py would also log each one."""


async def _connect(url: str) -> nats.NATS:
    # nats-py retries the first connection forever with allow_reconnect=False or
    # max_reconnect_attempts=0; one attempt without waiting fails fast with NoServersError.
    connecting = nats.connect(url, connect_timeout=2, max_reconnect_attempts=1, reconnect_time_wait=0, error_cb=_ignore_error)
    return await asyncio.wait_for(connecting, timeout=CONNECT_TIMEOUT)


class NatsJetStreamSystem:
    """The NATS server at ``url`` (``nats://127.0.0.1:4222``) with JetStream enabled."""

    name = NAME

    def __init__(self, url: str) -> None:
        self.url = url
        try:
            asyncio.run(self._check_reachable())
        except (TimeoutError, OSError, nats.errors.Error, JetStreamError) as error:
            raise SystemUnavailable(NAME, f"{url}: {type(error).__name__} {error}") from None

    async def _check_reachable(self) -> None:
        connection = await _connect(self.url)
        try:
            await connection.jetstream().account_info()
        finally:
            await connection.close()

    def describe_settings(self) -> str:
        return (
            f"NATS JetStream at {self.url}: file storage, publish_async with {PUBLISH_WINDOW:,} in flight, "
            f"pull fetch batch {FETCH_BATCH:,}, ack policy none; e2e push subscription"
        )

    async def _with_stream(self, work: Callable[[Any, str, str], Any]) -> Any:
        """Run ``work(jetstream, stream, subject)`` on a fresh stream, deleted afterwards."""
        connection = await _connect(self.url)
        suffix = uuid.uuid4().hex
        stream, subject = f"WEIR_BENCH_{suffix}", f"weir-bench.{suffix}"
        jetstream = connection.jetstream(publish_async_max_pending=PUBLISH_WINDOW)
        await jetstream.add_stream(name=stream, subjects=[subject], storage=api.StorageType.FILE, num_replicas=1)
        try:
            return await work(jetstream, stream, subject)
        finally:
            await jetstream.delete_stream(stream)
            await connection.close()

    async def _load(self, jetstream: Any, stream: str, subject: str, records: int, values: list[bytes]) -> tuple[float, list[int]]:
        publish_async = jetstream.publish_async
        pool_size = len(values)
        latencies: list[int] = []

        def acknowledged_after(published_ns: int) -> Callable[[asyncio.Future], None]:
            return lambda _future: latencies.append(time.perf_counter_ns() - published_ns)

        started = time.perf_counter()
        for chunk_start in range(0, records, LATENCY_SAMPLE_INTERVAL):
            future = await publish_async(subject, values[chunk_start % pool_size])
            future.add_done_callback(acknowledged_after(time.perf_counter_ns()))
            for index in range(chunk_start + 1, min(chunk_start + LATENCY_SAMPLE_INTERVAL, records)):
                await publish_async(subject, values[index % pool_size])
        await jetstream.publish_async_completed()
        seconds = time.perf_counter() - started
        info = await jetstream.stream_info(stream)
        if info.state.messages != records:
            raise BenchmarkIntegrityError(NAME, f"stream holds {info.state.messages} messages after {records} publishes")
        return seconds, latencies

    def produce(self, records: int, values: list[bytes]) -> ThroughputSample:
        async def work(jetstream: Any, stream: str, subject: str) -> tuple[float, list[int]]:
            return await self._load(jetstream, stream, subject, records, values)

        seconds, latencies = asyncio.run(self._with_stream(work))
        return ThroughputSample(records, len(values[0]), seconds, LatencySummary.from_nanoseconds(latencies))

    def consume(self, records: int, values: list[bytes]) -> ThroughputSample:
        async def work(jetstream: Any, stream: str, subject: str) -> tuple[int, float]:
            await self._load(jetstream, stream, subject, records, values)
            config = api.ConsumerConfig(ack_policy=api.AckPolicy.NONE, deliver_policy=api.DeliverPolicy.ALL)
            subscription = await jetstream.pull_subscribe(subject, stream=stream, config=config)
            received = 0
            started = time.perf_counter()
            # Bounded: each fetch returns at least one message or raises its timeout.
            while received < records:
                messages = await subscription.fetch(batch=min(FETCH_BATCH, records - received), timeout=FETCH_TIMEOUT)
                for message in messages:
                    _ = message.data  # read every payload, as a consumer would
                received += len(messages)
            seconds = time.perf_counter() - started
            await subscription.unsubscribe()
            return received, seconds

        received, seconds = asyncio.run(self._with_stream(work))
        return ThroughputSample(received, len(values[0]), seconds)

    def end_to_end(self, plan: EndToEndPlan, values: list[bytes]) -> LatencySample:
        async def work(jetstream: Any, stream: str, subject: str) -> tuple[float, array]:
            spec = ReceiverSpec(__name__, "receive_stamped", {"url": self.url, "stream": stream, "subject": subject})
            with LatencyReceiver(spec, plan.records, seconds_limit=plan.records / plan.rate_per_second + plan.drain_seconds) as receiver:
                pacer = RatePacer(plan.rate_per_second)
                pool_size = len(values)
                for index in range(plan.records):
                    wait = pacer.seconds_until_due(index)
                    # A blocking sleep: asyncio's timers round up to whole milliseconds,
                    # which would send records late and charge that to NATS.
                    if wait:
                        time.sleep(wait)
                    await jetstream.publish_async(subject, stamped_value(values[index % pool_size], pacer.due_ns(index)))
                    # Let the connection's flusher and acknowledgement reader run.
                    await asyncio.sleep(0)
                seconds = (time.monotonic_ns() - pacer.start_ns) / 1e9
                await jetstream.publish_async_completed()
                return seconds, receiver.latencies(timeout=plan.drain_seconds + 5)

        seconds, latencies = asyncio.run(self._with_stream(work))
        if len(latencies) != plan.records:
            raise BenchmarkIntegrityError(NAME, f"received {len(latencies)} of {plan.records} records")
        return LatencySample(len(values[0]), plan.rate_per_second, seconds, latencies)

    def close(self) -> None:
        """Nothing to release: every scenario closes its own connection."""


def receive_stamped(*, expected: int, deadline_ns: int, on_ready: Callable[[], None], url: str, stream: str, subject: str) -> array:
    """End-to-end receiver (runs in a child process): a push subscription until ``expected`` arrived."""

    async def receive() -> array:
        connection = await _connect(url)
        latencies = array("q")
        everything_arrived = asyncio.Event()

        async def on_message(message: Any) -> None:
            latencies.append(time.monotonic_ns() - read_stamp(message.data))
            if len(latencies) >= expected:
                everything_arrived.set()

        jetstream = connection.jetstream()
        config = api.ConsumerConfig(ack_policy=api.AckPolicy.NONE)
        subscription = await jetstream.subscribe(subject, stream=stream, cb=on_message, config=config, deliver_policy=api.DeliverPolicy.ALL)
        on_ready()
        try:
            await asyncio.wait_for(everything_arrived.wait(), timeout=max(0.0, (deadline_ns - time.monotonic_ns()) / 1e9))
        except TimeoutError:
            pass  # The parent compares the count with what it sent and reports the loss.
        await subscription.unsubscribe()
        await connection.close()
        return latencies

    return asyncio.run(receive())

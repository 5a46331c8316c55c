"""Redis Streams as a peer: XADD in pipelines to produce, XREAD COUNT to consume.

Every run uses a stream key of its own (``weir-bench:<random>``) and deletes it afterwards;
MAXLEN is not set, so Redis keeps every record, as a log does.
"""

from __future__ import annotations

import time
import uuid
from array import array

import redis
from redis.utils import HIREDIS_AVAILABLE

from bench.latency_receiver import LatencyReceiver, ReceiverSpec
from bench.measurements import LatencySample, LatencySummary, ThroughputSample
from bench.pacing import RatePacer
from bench.payloads import read_stamp, stamped_value
from bench.systems.base import BenchmarkIntegrityError, EndToEndPlan, SystemUnavailable

NAME = "Redis Streams"
# XADDs sent per pipeline round trip.
PIPELINE_DEPTH = 1000
# Entries per XREAD reply.
READ_COUNT = 10_000
# Field name of the value inside a stream entry.
VALUE_FIELD = b"v"
# How long one blocking XREAD waits in the end-to-end receiver (milliseconds).
BLOCK_MILLISECONDS = 100


def _client(url: str) -> redis.Redis:
    return redis.Redis.from_url(url, socket_connect_timeout=2, socket_timeout=60)


class RedisStreamsSystem:
    """Redis at ``url`` (``redis://127.0.0.1:6379/0``). One connection; used from one thread."""

    name = NAME

    def __init__(self, url: str) -> None:
        self.url = url
        self._redis = _client(url)
        try:
            self._redis.ping()
        except (redis.ConnectionError, redis.TimeoutError) as error:
            raise SystemUnavailable(NAME, f"{url}: {error}") from None

    def describe_settings(self) -> str:
        parser = "hiredis" if HIREDIS_AVAILABLE else "pure Python (hiredis missing)"
        return (
            f"Redis Streams at {self.url}: redis-py, replies parsed by {parser}; XADD in pipelines of {PIPELINE_DEPTH:,}, "
            f"XREAD COUNT {READ_COUNT:,}; e2e XADD per record + XREAD BLOCK"
        )

    def _new_key(self) -> str:
        return f"weir-bench:{uuid.uuid4().hex}"

    def _load(self, key: str, records: int, values: list[bytes]) -> tuple[float, list[int]]:
        """XADD ``records`` values; returns the seconds it took and sampled latencies (ns)."""
        pipeline = self._redis.pipeline(transaction=False)
        pool_size = len(values)
        latencies: list[int] = []
        started = time.perf_counter()
        for chunk_start in range(0, records, PIPELINE_DEPTH):
            chunk_end = min(chunk_start + PIPELINE_DEPTH, records)
            queued_ns = time.perf_counter_ns()
            for index in range(chunk_start, chunk_end):
                pipeline.xadd(key, {VALUE_FIELD: values[index % pool_size]})
            pipeline.execute()
            # The first record of each pipeline is the sample: queued first, acknowledged with the last.
            latencies.append(time.perf_counter_ns() - queued_ns)
        seconds = time.perf_counter() - started
        stored = self._redis.xlen(key)
        if stored != records:
            raise BenchmarkIntegrityError(NAME, f"stream holds {stored} entries after {records} XADDs")
        return seconds, latencies

    def produce(self, records: int, values: list[bytes]) -> ThroughputSample:
        key = self._new_key()
        try:
            seconds, latencies = self._load(key, records, values)
        finally:
            self._redis.delete(key)
        return ThroughputSample(records, len(values[0]), seconds, LatencySummary.from_nanoseconds(latencies))

    def consume(self, records: int, values: list[bytes]) -> ThroughputSample:
        key = self._new_key()
        try:
            self._load(key, records, values)
            received = 0
            last_id: bytes | str = "0-0"
            started = time.perf_counter()
            # Bounded: every reply holds at least one entry until all are read, else we stop.
            while received < records:
                reply = self._redis.xread({key: last_id}, count=READ_COUNT)
                if not reply:
                    raise BenchmarkIntegrityError(NAME, f"stream ended after {received} of {records} entries")
                entries = reply[0][1]
                for _entry_id, fields in entries:
                    fields[VALUE_FIELD]
                received += len(entries)
                last_id = entries[-1][0]
            seconds = time.perf_counter() - started
        finally:
            self._redis.delete(key)
        return ThroughputSample(received, len(values[0]), seconds)

    def end_to_end(self, plan: EndToEndPlan, values: list[bytes]) -> LatencySample:
        key = self._new_key()
        spec = ReceiverSpec(__name__, "receive_stamped", {"url": self.url, "key": key})
        try:
            with LatencyReceiver(spec, plan.records, seconds_limit=plan.records / plan.rate_per_second + plan.drain_seconds) as receiver:
                pacer = RatePacer(plan.rate_per_second)
                pool_size = len(values)
                xadd = self._redis.xadd
                for index in range(plan.records):
                    wait = pacer.seconds_until_due(index)
                    if wait:
                        time.sleep(wait)
                    xadd(key, {VALUE_FIELD: stamped_value(values[index % pool_size], pacer.due_ns(index))})
                seconds = (time.monotonic_ns() - pacer.start_ns) / 1e9
                latencies = receiver.latencies(timeout=plan.drain_seconds + 5)
        finally:
            self._redis.delete(key)
        if len(latencies) != plan.records:
            raise BenchmarkIntegrityError(NAME, f"received {len(latencies)} of {plan.records} records")
        return LatencySample(len(values[0]), plan.rate_per_second, seconds, latencies)

    def close(self) -> None:
        self._redis.close()


def receive_stamped(*, expected: int, deadline_ns: int, on_ready, url: str, key: str) -> array:
    """End-to-end receiver (runs in a child process): XREAD BLOCK until ``expected`` entries arrived."""
    client = _client(url)
    client.ping()
    latencies = array("q")
    last_id: bytes | str = "0-0"
    on_ready()
    while len(latencies) < expected and time.monotonic_ns() < deadline_ns:
        reply = client.xread({key: last_id}, count=READ_COUNT, block=BLOCK_MILLISECONDS)
        if not reply:
            continue
        received_ns = time.monotonic_ns()
        entries = reply[0][1]
        for _entry_id, fields in entries:
            latencies.append(received_ns - read_stamp(fields[VALUE_FIELD]))
        last_id = entries[-1][0]
    client.close()
    return latencies

"""``python -m bench lag-latency``: how long a commit takes to show in the lag API, on a `make up` stack.

The stack runs as deployed (``deploy.local``): the lag evaluator (``python -m
spark_pipelines.lag_monitor``) tails ``__consumer_offsets``, polls end offsets every
``WEIR_LAG_REFRESH_SECONDS`` (2 s by default, left as it is), evaluates and writes what changed,
and ``GET /api/v1/consumer-groups/{group}/lag`` reads it.

Each sample: a pause drawn uniformly from one refresh interval (so that commits fall anywhere
in the evaluator's round, not in step with it), then a synchronous commit of the next offset
for the benchmark's group (``Consumer.commit``, no member: an ``assign()``-style group); then
the API is polled every ``POLL_SECONDS`` until the group's partition shows that committed
offset. The latency runs from the commit's acknowledgement to the first answer showing it.
Issue 17's targets: p50 <= 5 s and p99 <= 10 s. Expected: about half a round of reading plus
the round's broker lookups and database write, plus half a poll.
"""

from __future__ import annotations

import random
import time
from collections.abc import Mapping, Sequence
from typing import Any

from rich.console import Console
from rich.table import Table

from bench.replicated_topics import TopicSetupError, create_topic, wait_until_healthy
from bench.report import machine_description
from bench.stack import ApiClient, LocalStack, StackError
from weir import Consumer, KafkaException, Producer, TopicPartition
from weir.admin import AdminClient

PREFIX = "demo-bench"  # the demo service account may use topics and groups starting with "demo"
TOPIC = f"{PREFIX}-lag"
GROUP = f"{PREFIX}-lag-latency"
RECORDS = 1000  # produced once; each sample commits one offset further
REPLICATION_FACTOR = 3
DEFAULT_RUNS = 40
REFRESH_SECONDS = 2.0  # WEIR_LAG_REFRESH_SECONDS's default (spark_pipelines.lag_monitor)
POLL_SECONDS = 0.1  # how often the API is asked while waiting for a commit to show
TOPIC_READY_TIMEOUT_SECONDS = 60.0
VISIBLE_TIMEOUT_SECONDS = 60.0  # a commit not visible by then is a failure
TARGET_P50_SECONDS = 5.0
TARGET_P99_SECONDS = 10.0


class LagLatencyError(Exception):
    """A sample could not be taken; the message says what was missing."""

    retriable = False


def visible_offset(api: ApiClient) -> int | None:
    """The committed offset the lag API shows for the group's partition 0; None before any."""
    status, body = api.request("GET", f"/consumer-groups/{GROUP}/lag")
    if status == 404:
        return None
    if status != 200 or not isinstance(body, dict):
        raise LagLatencyError(f"GET /consumer-groups/{GROUP}/lag answered {status}: {body}")
    offsets = [
        partition["current_offset"] for partition in body.get("partitions", []) if partition.get("topic_name") == TOPIC and partition.get("partition_id") == 0
    ]
    return offsets[0] if offsets else None


def take_sample(consumer: Consumer, api: ApiClient, offset: int) -> float:
    """Commit ``offset`` and wait until the lag API shows it; the seconds that took."""
    consumer.commit(offsets=[TopicPartition(TOPIC, 0, offset)], asynchronous=False)
    committed_at = time.monotonic()
    deadline = committed_at + VISIBLE_TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        if visible_offset(api) == offset:
            return time.monotonic() - committed_at
        time.sleep(POLL_SECONDS)
    raise LagLatencyError(f"offset {offset} committed for {GROUP} was not shown by the lag API within {VISIBLE_TIMEOUT_SECONDS:.0f} s")


def load_topic(client_config: Mapping[str, Any]) -> None:
    producer = Producer(client_config)
    for index in range(RECORDS):
        producer.produce(TOPIC, value=f"record-{index}".encode(), partition=0)
    if producer.flush(60) != 0:
        raise LagLatencyError(f"{TOPIC}: records still undelivered after 60 s")


def measure(client_config: Mapping[str, Any], api: ApiClient, runs: int, console: Console) -> tuple[list[float], list[str]]:
    samples: list[float] = []
    failures: list[str] = []
    consumer = Consumer({**client_config, "group.id": GROUP, "enable.auto.commit": False})
    try:
        for run in range(runs):
            time.sleep(random.uniform(0, REFRESH_SECONDS))
            try:
                latency = take_sample(consumer, api, run + 1)
            except (LagLatencyError, KafkaException, OSError) as error:
                failures.append(f"sample {run + 1}: {error}")
                continue
            samples.append(latency)
            console.print(f"lag-latency: sample {run + 1}/{runs}: {latency:.2f} s", markup=False)
    finally:
        consumer.close()
    return samples, failures


def percentile(values: Sequence[float], fraction: float) -> float | None:
    """The nearest-rank percentile (``fraction`` in (0, 1]) of ``values``; None without any."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(int(-(-fraction * len(ordered) // 1)), 1)  # ceil(fraction * n), at least 1
    return ordered[min(rank, len(ordered)) - 1]


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def latency_table(samples: Sequence[float], runs: int, command: str) -> Table:
    table = Table(
        title=f"Lag evaluator: commit -> visible in GET /consumer-groups/{{g}}/lag (rounds every {REFRESH_SECONDS:g} s, the default)",
        caption=(
            f"{command}\nFrom a commit's acknowledgement (at a random point of the evaluator's round) to the first API answer showing it "
            f"(polled every {POLL_SECONDS:g} s). Targets (issue 17): p50 <= {TARGET_P50_SECONDS:g} s, p99 <= {TARGET_P99_SECONDS:g} s."
        ),
    )
    for column in ("samples", "min s", "p50 s", "p90 s", "p99 s", "max s", "targets"):
        table.add_column(column, justify="right")
    p50, p99 = percentile(samples, 0.5), percentile(samples, 0.99)
    met = p50 is not None and p99 is not None and p50 <= TARGET_P50_SECONDS and p99 <= TARGET_P99_SECONDS and len(samples) == runs
    table.add_row(
        f"{len(samples)}/{runs}",
        _seconds(min(samples, default=None)),
        _seconds(p50),
        _seconds(percentile(samples, 0.9)),
        _seconds(p99),
        _seconds(max(samples, default=None)),
        "met" if met else "not met",
    )
    return table


def main(runs: int, console: Console) -> int:
    """Start a stack, take ``runs`` samples, print the table; 1 when any sample failed."""
    samples: list[float] = []
    failures: list[str] = []
    try:
        with LocalStack(console, "lag-latency") as stack:
            assert stack.credentials is not None
            client_config = stack.credentials.client_config()
            api = ApiClient.for_stack(stack.credentials)
            admin = AdminClient(client_config)
            try:
                create_topic(api, TOPIC, 1, REPLICATION_FACTOR, {})
                wait_until_healthy(admin, TOPIC, 1, TOPIC_READY_TIMEOUT_SECONDS)
                load_topic(client_config)
                samples, failures = measure(client_config, api, runs, console)
            except (LagLatencyError, TopicSetupError, KafkaException) as error:
                failures.append(str(error))
            finally:
                admin.close()
            if failures:
                console.print(stack.log_tails(), markup=False, highlight=False)
    except StackError as error:
        failures.append(str(error))
    command = f"python -m bench lag-latency --runs {runs}"
    console.print(latency_table(samples, runs, command))
    console.print(machine_description(malloc_tuned=False), markup=False)
    for failure in failures[:10]:
        console.print(f"failure: {failure}", markup=False)
    return 1 if failures or len(samples) < runs else 0

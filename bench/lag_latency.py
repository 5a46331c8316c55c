"""``python -m bench lag-latency``: how long a commit takes to show in the lag API, on a `make up` stack.

The stack runs as deployed (``deploy.local``): Celery beat queues the lag pipeline every
``WEIR_LAG_PIPELINE_INTERVAL_SECONDS`` (60 s by default, left as it is), the worker launches
``python -m spark_pipelines.jobs.lag`` (a fresh process and JVM per run), the job writes the
evaluation to the database, and ``GET /api/v1/consumer-groups/{group}/lag`` reads it.

Each sample: a pause drawn uniformly from one schedule interval (so that commits fall
anywhere in the beat cycle, not in step with it), then a synchronous commit of the next
offset for the benchmark's group (``Consumer.commit``, no member: an ``assign()``-style
group); then the API is polled every ``POLL_SECONDS`` until the group's partition shows that
committed offset. The latency runs from the commit's acknowledgement to the first answer
showing it. It is split with the pipeline run that produced the evaluation (``/pipeline-runs``):
*wait* from the commit to that run's start (the schedule, plus a whole run when the commit
came after a running job had pinned its range; negative when the commit came after the run
started but before it pinned its range), *job* that run's duration (process start, JVM,
Spark, brokers, database), and the rest (the API poll).

Expected: about half an interval of waiting plus one job, on average, while a run is shorter
than the interval. A longer run makes beat's next tick find it running (the tick is skipped),
so runs start every other interval and the wait grows accordingly.
"""

from __future__ import annotations

import random
import statistics
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
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
DEFAULT_RUNS = 5
DEFAULT_INTERVAL_SECONDS = 60.0  # WEIR_LAG_PIPELINE_INTERVAL_SECONDS's default (webapp.settings)
POLL_SECONDS = 0.5  # how often the API is asked while waiting for a commit to show
TOPIC_READY_TIMEOUT_SECONDS = 60.0
# A commit not visible after this many intervals (plus a job's worth of slack) is a failure.
VISIBLE_TIMEOUT_INTERVALS = 4
VISIBLE_TIMEOUT_SLACK_SECONDS = 180.0


class LagLatencyError(Exception):
    """A sample could not be taken; the message says what was missing."""

    retriable = False


@dataclass(frozen=True)
class Sample:
    """One commit: seconds from its acknowledgement to visible, and the run that made it visible."""

    latency: float
    wait: float | None  # commit -> start of the run that showed it
    job: float | None  # that run's duration
    run_id: str | None


def _parse_time(text: str | None) -> float | None:
    return None if not text else datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def visible_offset(api: ApiClient) -> tuple[int | None, str | None]:
    """The committed offset the lag API shows for the group's partition 0, and its evaluation time; (None, None) before any."""
    status, body = api.request("GET", f"/consumer-groups/{GROUP}/lag")
    if status == 404:
        return None, None
    if status != 200 or not isinstance(body, dict):
        raise LagLatencyError(f"GET /consumer-groups/{GROUP}/lag answered {status}: {body}")
    offsets = [
        partition["current_offset"] for partition in body.get("partitions", []) if partition.get("topic_name") == TOPIC and partition.get("partition_id") == 0
    ]
    return (offsets[0] if offsets else None), body.get("evaluated_at")


def run_that_showed(api: ApiClient, evaluated_at: float, commit_at: float, deadline: float) -> tuple[float | None, float | None, str | None]:
    """(wait, duration, id) of the lag run that made the evaluation at ``evaluated_at``: the
    one started before it. The job writes before it ends (state, Parquet, JVM shutdown), so
    the run may still be RUNNING when the API shows the commit: it is asked again until it
    has finished or ``deadline`` (monotonic) passes, then (wait, None, id)."""
    found: tuple[float | None, float | None, str | None] = (None, None, None)
    while time.monotonic() < deadline:
        status, body = api.request("GET", "/pipeline-runs?pipeline=lag&page_size=50")
        runs = body.get("results", []) if status == 200 and isinstance(body, dict) else []
        started_runs = [(started, run) for run in runs if (started := _parse_time(run.get("started_at"))) is not None and started <= evaluated_at]
        if started_runs:
            started, run = max(started_runs, key=lambda item: item[0])
            found = (started - commit_at, run.get("duration_seconds"), run.get("id"))
            if run.get("status") != "RUNNING":
                return found if run.get("status") == "SUCCEEDED" else (found[0], None, found[2])
        time.sleep(POLL_SECONDS)
    return found


def take_sample(consumer: Consumer, api: ApiClient, offset: int, interval: float) -> Sample:
    """Commit ``offset`` and wait until the lag API shows it."""
    consumer.commit(offsets=[TopicPartition(TOPIC, 0, offset)], asynchronous=False)
    committed_at = time.time()
    timeout = VISIBLE_TIMEOUT_INTERVALS * interval + VISIBLE_TIMEOUT_SLACK_SECONDS
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        shown, evaluated_at = visible_offset(api)
        if shown == offset:
            latency = time.time() - committed_at
            wait, job, run_id = run_that_showed(api, _parse_time(evaluated_at) or time.time(), committed_at, deadline)
            return Sample(latency, wait, job, run_id)
        time.sleep(POLL_SECONDS)
    raise LagLatencyError(f"offset {offset} committed for {GROUP} was not shown by the lag API within {timeout:.0f} s")


def load_topic(client_config: Mapping[str, Any]) -> None:
    producer = Producer(client_config)
    for index in range(RECORDS):
        producer.produce(TOPIC, value=f"record-{index}".encode(), partition=0)
    if producer.flush(60) != 0:
        raise LagLatencyError(f"{TOPIC}: records still undelivered after 60 s")


def measure(client_config: Mapping[str, Any], api: ApiClient, runs: int, interval: float, console: Console) -> tuple[list[Sample], list[str]]:
    samples: list[Sample] = []
    failures: list[str] = []
    consumer = Consumer({**client_config, "group.id": GROUP, "enable.auto.commit": False})
    try:
        for run in range(runs):
            time.sleep(random.uniform(0, interval))
            try:
                sample = take_sample(consumer, api, run + 1, interval)
            except (LagLatencyError, KafkaException, OSError) as error:
                failures.append(f"sample {run + 1}: {error}")
                continue
            samples.append(sample)
            console.print(
                f"lag-latency: sample {run + 1}/{runs}: {sample.latency:.1f} s (wait {_seconds(sample.wait)}, job {_seconds(sample.job)})", markup=False
            )
    finally:
        consumer.close()
    return samples, failures


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def _median(values: Sequence[float | None]) -> float | None:
    known = [value for value in values if value is not None]
    return statistics.median(known) if known else None


def latency_table(samples: Sequence[Sample], runs: int, interval: float, command: str) -> Table:
    table = Table(
        title=f"Lag pipeline: commit -> visible in GET /consumer-groups/{{g}}/lag, beat every {interval:g} s (the default schedule)",
        caption=(
            f"{command}\nFrom a commit's acknowledgement (at a random point of the schedule) to the first API answer showing it; "
            "wait: commit -> start of the pipeline run that showed it; job: that run's duration (process, JVM, Spark, brokers, database)."
        ),
    )
    for column in ("samples", "min s", "median s", "max s", "median wait s", "median job s", "max job s"):
        table.add_column(column, justify="right")
    latencies = [sample.latency for sample in samples]
    jobs = [sample.job for sample in samples if sample.job is not None]
    table.add_row(
        f"{len(samples)}/{runs}",
        _seconds(min(latencies, default=None)),
        _seconds(_median(latencies)),
        _seconds(max(latencies, default=None)),
        _seconds(_median([sample.wait for sample in samples])),
        _seconds(_median(jobs)),
        _seconds(max(jobs, default=None)),
    )
    return table


def main(runs: int, console: Console) -> int:
    """Start a stack, take ``runs`` samples, print the table; 1 when any sample failed."""
    samples: list[Sample] = []
    failures: list[str] = []
    interval = DEFAULT_INTERVAL_SECONDS
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
                samples, failures = measure(client_config, api, runs, interval, console)
            except (LagLatencyError, TopicSetupError, KafkaException) as error:
                failures.append(str(error))
            finally:
                admin.close()
            if failures:
                console.print(stack.log_tails(), markup=False, highlight=False)
    except StackError as error:
        failures.append(str(error))
    command = f"python -m bench lag-latency --runs {runs}"
    console.print(latency_table(samples, runs, interval, command))
    console.print(machine_description(malloc_tuned=False), markup=False)
    for failure in failures[:10]:
        console.print(f"failure: {failure}", markup=False)
    return 1 if failures or len(samples) < runs else 0

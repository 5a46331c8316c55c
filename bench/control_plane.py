"""``python -m bench control-plane``: issues 3 and 19's control-plane figures.

Two figures, each with its targets (issue 3's on a near-empty tenant at 50 requests/s on the
embedded default; issue 19 goal 6's at 1,000 topics per tenant and 200 requests/s on PostgreSQL):

* **Topic readiness** (issue 3: median under 1 s; issue 19: p50 at most 100 ms): the time from sending
  ``POST /api/v1/topics`` until the SDK, authenticated with a cluster key, has produced one
  record to every partition of the new topic. That spans the API's transaction, the Celery
  job, the ``ApplyPartitions`` push to every broker and the client's metadata refresh.
* **API latency** (issue 3: p99 under 100 ms at 50 requests/s; issue 19: p99 at most 50 ms at
  200 requests/s): an open-loop schedule of GET
  requests (topics list, one topic, jobs list, in turn) sent from a thread pool. Latency is
  measured from each request's *due* time, so a server that falls behind cannot hide the
  delay by slowing the sender down (coordinated omission).

The stack is the one ``make up`` starts, run by :class:`bench.stack.LocalStack` (SQLite, two
controllers, three brokers with security on, gunicorn, a Celery worker and beat). Celery's
transport is Redis when it answers, the filesystem otherwise; the report says which. Topics
are created over REST with the demo's cloud key; records are produced with its cluster key,
whose ACLs cover topics starting with ``demo``.

``--database postgres`` runs the control plane on the machine's PostgreSQL
(``127.0.0.1:5432``, user ``postgres``, trust auth) in a fresh database ``weir_bench_<random>``
dropped afterwards. ``--topics-per-tenant N`` first raises the demo tenant to the enterprise
plan and fills it with N one-partition topics over REST (a few requests at a time, then waits
for their jobs), and says how long that took, so that readiness and latency are measured on a
tenant that already holds N topics.
"""

from __future__ import annotations

import itertools
import math
import secrets
import statistics
import subprocess
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime

from rich.console import Console
from rich.table import Table

from bench.measurements import LatencySummary
from bench.pacing import RatePacer
from bench.partition_scale import cpu_seconds, descendants
from bench.stack import DEFAULT_BROKER_COUNT, ApiClient, LocalStack, StackError
from weir import Producer
from weir.errors import KafkaException

TOPIC_PARTITIONS = 3  # one partition per broker, so readiness waits for every broker's push
TOPIC_PREFIX = "demo-bench"  # the demo service account's ACLs cover topics starting with "demo"

READINESS_TARGET_SECONDS = 1.0  # issue 3: a topic is ready within 1 s (median)
API_P99_TARGET_MS = 100.0  # issue 3: API p99 under 100 ms at 50 requests/s
READINESS_GOAL_SECONDS = 0.1  # issue 19 goal 6: ready p50 <= 100 ms at 1,000 topics per tenant
API_P99_GOAL_MS = 50.0  # issue 19 goal 6: API p99 <= 50 ms at 200 requests/s on PostgreSQL
# The conditions of issue 19's goals: a run under others is not judged against them.
GOAL_TOPICS_PER_TENANT = 1_000
GOAL_RATE = 200
GOAL_DATABASE = "PostgreSQL"
TOPIC_READY_TIMEOUT_SECONDS = 30.0  # a topic not ready by then counts as a failure
READINESS_PROBE_PAUSE_SECONDS = 0.005  # between produce attempts while a topic is not ready
LOAD_THREADS = 32  # enough that a slow request never delays the next one at 200 requests/s
FILL_PREFIX = "demo-fill"  # the topics that fill the tenant before measuring (--topics-per-tenant)
FILL_THREADS = 8  # concurrent POSTs while filling the tenant
FILL_JOBS_TIMEOUT_SECONDS = 900.0  # for the fill's provisioning jobs to finish
FILL_POLL_SECONDS = 0.5  # between looks at the fill's unfinished jobs
POSTGRES_ADMIN_URL = "postgres://postgres@127.0.0.1:5432/postgres"  # the machine's PostgreSQL, trust auth
DATABASES = ("sqlite", "postgres")


@dataclass(frozen=True)
class ReadinessStages:
    """Where one topic's readiness went, in seconds, from the client's clock and its job's timestamps
    (same machine, same clock): the POST until the job row existed, the job's wait for a worker
    (commit, Celery dispatch), its attempt (building the map, pushing it to every broker), and from
    the job's end until the client had produced to every partition (metadata, produce)."""

    post_to_job: float
    job_queued: float
    job_attempt: float
    job_to_ready: float

    NAMES = ("POST -> job", "job queued", "job attempt (map + push)", "job done -> ready")

    def values(self) -> tuple[float, float, float, float]:
        return (self.post_to_job, self.job_queued, self.job_attempt, self.job_to_ready)


@dataclass
class RunResult:
    """One run: how long each topic took to be ready, and the API latencies under load."""

    readiness_seconds: list[float] = field(default_factory=list)
    readiness_failures: list[str] = field(default_factory=list)
    stages: list[ReadinessStages] = field(default_factory=list)
    api_latency: LatencySummary | None = None
    api_requests: int = 0
    api_failures: list[str] = field(default_factory=list)
    api_seconds: float = 0.0
    web_cpu_seconds: float | None = None  # CPU of the web process (gunicorn and its workers) during the API load
    # CPU seconds each kind of process (web, Celery worker, brokers) spent while the topics were
    # made ready: unlike the readiness times, barely swayed by other work on the machine.
    readiness_cpu_seconds: dict[str, float] = field(default_factory=dict)


# ----------------------------------------------------------------------------- setup


class PostgresDatabase:
    """A fresh database on the machine's PostgreSQL for one run; a context manager that drops
    it on exit (``WITH (FORCE)``, in case a process of the stack still holds a connection)."""

    def __init__(self, admin_url: str = POSTGRES_ADMIN_URL) -> None:
        self._admin_url = admin_url
        self.name = f"weir_bench_{secrets.token_hex(4)}"
        self.url = admin_url.rsplit("/", 1)[0] + "/" + self.name

    def _psql(self, statement: str) -> None:
        completed = subprocess.run(["psql", self._admin_url, "-v", "ON_ERROR_STOP=1", "-c", statement], capture_output=True, text=True, timeout=60)
        if completed.returncode != 0:
            raise StackError(f"PostgreSQL refused {statement!r}: {completed.stderr.strip()}")

    def __enter__(self) -> PostgresDatabase:
        try:
            self._psql(f"CREATE DATABASE {self.name}")
        except OSError as error:
            raise StackError(f"cannot run psql to create the benchmark's database: {error}") from None
        return self

    def __exit__(self, *_: object) -> None:
        self._psql(f"DROP DATABASE IF EXISTS {self.name} WITH (FORCE)")


def fill_tenant(api: ApiClient, count: int) -> tuple[float, list[str]]:
    """Raise the tenant to the enterprise plan, create ``count`` one-partition topics over REST
    and wait until no job is pending or running; (seconds taken, failures)."""
    started = time.perf_counter()
    status, body = api.request("PATCH", "/tenant", {"plan": "enterprise"})
    if status != 200:
        return time.perf_counter() - started, [f"PATCH /tenant plan=enterprise answered {status}: {body}"]
    failures: list[str] = []

    def create(index: int) -> None:
        name = f"{FILL_PREFIX}-{index}"
        try:
            status, body = api.request("POST", "/topics", {"topic_name": name, "partitions_count": 1, "replication_factor": 1})
        except (OSError, ValueError) as error:
            failures.append(f"{name}: POST /topics: {error}")
            return
        if status not in (200, 201, 202):
            failures.append(f"{name}: POST /topics answered {status}: {body}")

    with ThreadPoolExecutor(max_workers=FILL_THREADS, thread_name_prefix="fill") as pool:
        list(pool.map(create, range(count)))
    deadline = time.perf_counter() + FILL_JOBS_TIMEOUT_SECONDS
    while not _jobs_settled(api):
        if time.perf_counter() > deadline:
            failures.append(f"the fill's jobs were not all done within {FILL_JOBS_TIMEOUT_SECONDS:g} s")
            break
        time.sleep(FILL_POLL_SECONDS)
    return time.perf_counter() - started, failures


def _jobs_settled(api: ApiClient) -> bool:
    """True when the tenant has no job pending or running."""
    for state in ("PENDING", "RUNNING"):
        status, body = api.request("GET", f"/jobs?state={state}&page_size=1")
        if status != 200 or not isinstance(body, dict) or body.get("results") or body.get("data"):
            return False
    return True


# ----------------------------------------------------------------------------- figures


def measure_topic_readiness(
    api: ApiClient, producer: Producer, names: Sequence[str], partitions: int, timings: list[tuple[str, float, float]] | None = None
) -> tuple[list[float], list[str]]:
    """Create each topic in turn; seconds until a record reached every partition, and failures.
    ``timings`` receives (job id, wall time of the POST, wall time ready) of each ready topic."""
    seconds: list[float] = []
    failures: list[str] = []
    for name in names:
        posted_at = time.time()
        started = time.perf_counter()
        try:
            status, body = api.request("POST", "/topics", {"topic_name": name, "partitions_count": partitions, "replication_factor": 1})
        except (OSError, ValueError) as error:
            failures.append(f"{name}: POST /topics: {error}")
            continue
        if status not in (200, 201, 202):
            failures.append(f"{name}: POST /topics answered {status}: {body}")
            continue
        problem = _produce_to_every_partition(producer, name, partitions, started + TOPIC_READY_TIMEOUT_SECONDS)
        if problem is None:
            seconds.append(time.perf_counter() - started)
            job = body.get("job") if isinstance(body, dict) else None
            if timings is not None and isinstance(job, dict) and job.get("id"):
                timings.append((str(job["id"]), posted_at, posted_at + seconds[-1]))
        else:
            failures.append(f"{name}: not ready within {TOPIC_READY_TIMEOUT_SECONDS:g} s: {problem}")
    return seconds, failures


def _produce_to_every_partition(producer: Producer, topic: str, partitions: int, deadline: float) -> str | None:
    """Wait until Metadata shows a leader for every partition, then produce one record to each;
    None once all are delivered, else the last problem seen by the deadline.

    Metadata is asked afresh each time (``list_topics``) rather than through ``produce()``:
    the producer remembers an unknown topic for a second before asking again, which would
    measure the client's cache instead of the control plane.
    """
    last_problem = "no attempt"
    while (remaining := deadline - time.perf_counter()) > 0:
        try:
            metadata = producer.list_topics(topic, timeout=remaining).topics.get(topic)
        except KafkaException as error:
            metadata, last_problem = None, str(error)
        if (
            metadata is None
            or metadata.error is not None
            or len(metadata.partitions) < partitions
            or any(partition.leader < 0 or partition.error is not None for partition in metadata.partitions.values())
        ):
            if metadata is not None:
                last_problem = f"metadata: {metadata.error or metadata.partitions}"
            time.sleep(READINESS_PROBE_PAUSE_SECONDS)
            continue
        delivered: list[int] = []
        errors: list[str] = []

        def on_delivery(error: object, _message: object, delivered: list[int] = delivered, errors: list[str] = errors) -> None:
            if error is None:
                delivered.append(1)
            else:
                errors.append(str(error))

        for partition in range(partitions):
            producer.produce(topic, value=b"ready?", partition=partition, on_delivery=on_delivery)
        producer.flush(max(deadline - time.perf_counter(), 0.001))
        if len(delivered) == partitions:
            return None
        last_problem = "; ".join(errors) or "deliveries still pending at the deadline"
        time.sleep(READINESS_PROBE_PAUSE_SECONDS)
    return last_problem


def readiness_stages(api: ApiClient, timings: Sequence[tuple[str, float, float]]) -> list[ReadinessStages]:
    """Each ready topic's stages (see :class:`ReadinessStages`) from its job's timestamps; a job
    whose timestamps cannot be read is left out."""
    stages = []
    for job_id, posted_at, ready_at in timings:
        status, body = api.request("GET", f"/jobs/{job_id}")
        if status != 200 or not isinstance(body, dict) or not all(body.get(key) for key in ("created_at", "started_at", "finished_at")):
            continue
        created, started, finished = (
            datetime.fromisoformat(str(body[key]).replace("Z", "+00:00")).timestamp() for key in ("created_at", "started_at", "finished_at")
        )
        stages.append(ReadinessStages(created - posted_at, started - created, finished - started, ready_at - finished))
    return stages


def load_paths(topic_names: Sequence[str]) -> Iterator[str]:
    """The endless mix of GET paths of the load: topics list, one topic, jobs list, in turn."""
    for topic in itertools.cycle(topic_names):
        yield "/topics"
        yield f"/topics/{topic}"
        yield "/jobs"


def run_api_load(api: ApiClient, topic_names: Sequence[str], rate: int, seconds: float) -> tuple[LatencySummary | None, int, list[str], float]:
    """GET requests at ``rate`` per second for ``seconds``: latency summary, count, failures, wall time."""
    pacer = RatePacer(rate)
    total = pacer.records_in(seconds)
    latencies_ns: list[int] = []
    failures: list[str] = []
    lock = threading.Lock()

    def send(index: int, path: str) -> None:
        due_ns = pacer.due_ns(index)
        try:
            status, _body = api.request("GET", path)
            problem = None if status == 200 else f"GET {path} answered {status}"
        except (OSError, ValueError) as error:
            problem = f"GET {path}: {error}"
        elapsed_ns = time.monotonic_ns() - due_ns
        with lock:
            latencies_ns.append(elapsed_ns)
            if problem is not None:
                failures.append(problem)

    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=LOAD_THREADS, thread_name_prefix="api-load") as pool:
        for index, path in zip(range(total), load_paths(topic_names)):
            time.sleep(pacer.seconds_until_due(index))
            pool.submit(send, index, path)
    wall = time.perf_counter() - started
    summary = LatencySummary.from_nanoseconds(latencies_ns) if latencies_ns else None
    return summary, len(latencies_ns), failures, wall


def process_tree_cpu_seconds(root_pid: int) -> float:
    """CPU seconds used so far by ``root_pid`` and every process below it that is still running."""
    return sum(cpu_seconds(pid) or 0.0 for pid in descendants(root_pid))


def cpu_by_kind(pids: Mapping[str, Sequence[int]]) -> dict[str, float]:
    """CPU seconds used so far by each kind's processes (and their children), by kind."""
    return {kind: sum(process_tree_cpu_seconds(pid) for pid in kind_pids) for kind, kind_pids in pids.items()}


def run_once(
    api: ApiClient,
    producer: Producer,
    run: int,
    topics: int,
    rate: int,
    seconds: float,
    web_pid: int | None = None,
    process_pids: Mapping[str, Sequence[int]] | None = None,
) -> RunResult:
    """``process_pids``: the pids of each kind of process whose CPU during readiness is reported."""
    names = [f"{TOPIC_PREFIX}-r{run}-t{index}" for index in range(topics)]
    result = RunResult()
    timings: list[tuple[str, float, float]] = []
    cpu_before = cpu_by_kind(process_pids or {})
    result.readiness_seconds, result.readiness_failures = measure_topic_readiness(api, producer, names, TOPIC_PARTITIONS, timings)
    result.readiness_cpu_seconds = {kind: spent - cpu_before[kind] for kind, spent in cpu_by_kind(process_pids or {}).items()}
    result.stages = readiness_stages(api, timings)
    ready_names = [name for name in names if not any(failure.startswith(name + ":") for failure in result.readiness_failures)] or names
    web_cpu_before = process_tree_cpu_seconds(web_pid) if web_pid is not None else None
    result.api_latency, result.api_requests, result.api_failures, result.api_seconds = run_api_load(api, ready_names, rate, seconds)
    if web_pid is not None and web_cpu_before is not None:
        result.web_cpu_seconds = process_tree_cpu_seconds(web_pid) - web_cpu_before
    return result


# ----------------------------------------------------------------------------- report


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:,.1f}"


def _quantile(values: Sequence[float], fraction: float) -> float | None:
    """Nearest-rank quantile of ``values`` (as bench.measurements.percentile), None when empty."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[math.ceil(fraction * len(ordered)) - 1]


def results_table(results: Sequence[RunResult], rate: int) -> Table:
    table = Table(title=f"Control plane: topic readiness and API latency at {rate} requests/s")
    for column in (
        "run",
        "topics ready",
        "ready p50 ms",
        "ready p90 ms",
        "ready max ms",
        "requests",
        "achieved req/s",
        "API p50 ms",
        "API p99 ms",
        "API max ms",
        "web CPU ms/req",
        "failures",
    ):
        table.add_column(column, justify="right")
    for number, result in enumerate(results, start=1):
        latency = result.api_latency
        table.add_row(
            str(number),
            f"{len(result.readiness_seconds)}/{len(result.readiness_seconds) + len(result.readiness_failures)}",
            _ms(_seconds_ms(_quantile(result.readiness_seconds, 0.5))),
            _ms(_seconds_ms(_quantile(result.readiness_seconds, 0.9))),
            _ms(_seconds_ms(max(result.readiness_seconds, default=None))),
            f"{result.api_requests:,}",
            f"{result.api_requests / result.api_seconds:,.1f}" if result.api_seconds else "-",
            _ms(latency.p50_ms if latency else None),
            _ms(latency.p99_ms if latency else None),
            _ms(latency.max_ms if latency else None),
            _ms(result.web_cpu_seconds * 1000 / result.api_requests if result.web_cpu_seconds is not None and result.api_requests else None),
            str(len(result.readiness_failures) + len(result.api_failures)),
        )
    return table


def stages_table(results: Sequence[RunResult]) -> Table:
    """Median milliseconds of each readiness stage per run (see :class:`ReadinessStages`)."""
    table = Table(title="Where topic readiness went (median ms per stage)")
    table.add_column("run", justify="right")
    for name in ReadinessStages.NAMES:
        table.add_column(name, justify="right")
    for number, result in enumerate(results, start=1):
        if not result.stages:
            table.add_row(str(number), *("-" for _ in ReadinessStages.NAMES))
            continue
        medians = [statistics.median(stage.values()[index] for stage in result.stages) for index in range(len(ReadinessStages.NAMES))]
        table.add_row(str(number), *(_ms(median * 1000) for median in medians))
    return table


def readiness_cpu_table(results: Sequence[RunResult]) -> Table:
    """CPU milliseconds per ready topic of each kind of process, per run."""
    kinds = sorted({kind for result in results for kind in result.readiness_cpu_seconds})
    table = Table(title="CPU per ready topic (ms; each kind's processes, while the topics were made ready)")
    table.add_column("run", justify="right")
    for kind in kinds:
        table.add_column(kind, justify="right")
    for number, result in enumerate(results, start=1):
        ready = len(result.readiness_seconds)
        table.add_row(
            str(number), *(_ms(result.readiness_cpu_seconds[kind] * 1000 / ready if ready and kind in result.readiness_cpu_seconds else None) for kind in kinds)
        )
    return table


def _seconds_ms(value: float | None) -> float | None:
    return None if value is None else value * 1000


def verdicts(
    results: Sequence[RunResult], *, topics_per_tenant: int = GOAL_TOPICS_PER_TENANT, rate: int = GOAL_RATE, database: str = GOAL_DATABASE
) -> list[str]:
    """One line per figure: the median over runs against issue 3's target and issue 19's goal.

    Issue 19's goals hold at 1,000 topics per tenant, and (the API's) at 200 requests/s on
    PostgreSQL: a run under other conditions is "not judged" against them, never "met".
    """
    readiness_medians = [statistics.median(result.readiness_seconds) for result in results if result.readiness_seconds]
    p99s = [result.api_latency.p99_ms for result in results if result.api_latency is not None]
    lines = []
    if readiness_medians:
        median = statistics.median(readiness_medians)
        lines.append(
            f"topic ready (median of run medians): {median * 1000:,.0f} ms; "
            f"issue 3 target < {READINESS_TARGET_SECONDS * 1000:,.0f} ms: {_met(median < READINESS_TARGET_SECONDS)}; "
            f"issue 19 goal <= {READINESS_GOAL_SECONDS * 1000:,.0f} ms at 1,000 topics per tenant: "
            + (
                _met(median <= READINESS_GOAL_SECONDS)
                if topics_per_tenant >= GOAL_TOPICS_PER_TENANT
                else f"not judged ({topics_per_tenant:,} topics per tenant here)"
            )
        )
    else:
        lines.append("topic ready: no topic became ready: targets NOT met")
    if p99s:
        median = statistics.median(p99s)
        lines.append(
            f"API p99 (median of runs): {median:,.1f} ms; "
            f"issue 3 target < {API_P99_TARGET_MS:g} ms at 50 requests/s: {_met(median < API_P99_TARGET_MS)}; "
            f"issue 19 goal <= {API_P99_GOAL_MS:g} ms at 200 requests/s on PostgreSQL: "
            + (_met(median <= API_P99_GOAL_MS) if rate >= GOAL_RATE and database == GOAL_DATABASE else f"not judged ({rate:,} requests/s on {database} here)")
        )
    else:
        lines.append("API p99: no request answered: targets NOT met")
    return lines


def _met(met: bool) -> str:
    return "met" if met else "NOT met"


# ----------------------------------------------------------------------------- entry point


def main(runs: int, topics: int, rate: int, seconds: float, console: Console, database: str = "sqlite", topics_per_tenant: int = 0) -> int:
    """Start the stack (on ``database``), fill the tenant with ``topics_per_tenant`` topics,
    measure ``runs`` times, print the table and verdicts; 1 on any failure."""
    if database not in DATABASES:
        raise ValueError(f"database must be one of {', '.join(DATABASES)}, not {database!r}")
    try:
        if database == "postgres":
            with PostgresDatabase() as postgres:
                console.print(f"control-plane: PostgreSQL database {postgres.name}", markup=False)
                return _measure(runs, topics, rate, seconds, console, {"DATABASE_URL": postgres.url}, topics_per_tenant, "PostgreSQL")
        return _measure(runs, topics, rate, seconds, console, {}, topics_per_tenant, "SQLite")
    except StackError as error:
        console.print(f"control-plane: {error}", markup=False)
        return 1


def _web_pid(stack: LocalStack) -> int | None:
    """The web process's (gunicorn master's) pid from its pid file; None when it cannot be read."""
    try:
        return int((stack.data_dir / "run" / "web.pid").read_text().strip())
    except (OSError, ValueError):
        return None


def _process_pids(stack: LocalStack) -> dict[str, list[int]]:
    """The pids of the web process, the Celery worker and the brokers, by kind (a kind whose pid
    file cannot be read is left out)."""
    pids: dict[str, list[int]] = {}
    for kind, stems in (("web", ["web"]), ("Celery worker", ["celery-worker"]), ("brokers", [f"broker-{node}" for node in range(1, DEFAULT_BROKER_COUNT + 1)])):
        try:
            pids[kind] = [int((stack.data_dir / "run" / f"{stem}.pid").read_text().strip()) for stem in stems]
        except (OSError, ValueError):
            continue
    return pids


def _measure(runs: int, topics: int, rate: int, seconds: float, console: Console, settings: dict[str, str], topics_per_tenant: int, database: str) -> int:
    fill_failures: list[str] = []
    fill_seconds = 0.0
    with LocalStack(console, "control-plane", settings=settings) as stack:
        assert stack.credentials is not None
        credentials = stack.credentials
        console.print(f"control-plane: stack up; {stack.transport}")
        api = ApiClient.for_stack(credentials)
        if topics_per_tenant:
            console.print(f"control-plane: filling the tenant with {topics_per_tenant:,} topics over REST ({FILL_THREADS} at a time)", markup=False)
            fill_seconds, fill_failures = fill_tenant(api, topics_per_tenant)
            console.print(f"control-plane: {topics_per_tenant:,} topics created and provisioned in {fill_seconds:,.1f} s", markup=False)
        producer = Producer(
            {
                **credentials.client_config(),
                "linger.ms": 0,
                # A leader that has not applied the placement yet answers a retriable error;
                # retry soon, so that the figure measures the brokers, not the client's backoff.
                "retry.backoff.ms": 10,
            }
        )
        results = []
        try:
            for run in range(1, runs + 1):
                console.print(f"control-plane: run {run} of {runs}: {topics} topics, then {seconds:g} s of GETs at {rate}/s")
                results.append(run_once(api, producer, run, topics, rate, seconds, _web_pid(stack), _process_pids(stack)))
        finally:
            producer.flush(5)
        if fill_failures or any(result.readiness_failures or result.api_failures for result in results):
            console.print(stack.log_tails(), markup=False, highlight=False)
    console.print(results_table(results, rate))
    console.print(stages_table(results))
    console.print(readiness_cpu_table(results))
    console.print(
        f"{database}, {DEFAULT_BROKER_COUNT} brokers, gunicorn, Celery: {stack.transport}; "
        f"tenant pre-filled with {topics_per_tenant:,} topics" + (f" in {fill_seconds:,.1f} s" if topics_per_tenant else ""),
        markup=False,
    )
    for line in verdicts(results, topics_per_tenant=topics_per_tenant, rate=rate, database=database):
        console.print(line, markup=False)
    failures = fill_failures + [failure for result in results for failure in (*result.readiness_failures, *result.api_failures)]
    for failure in failures[:10]:
        console.print(f"failure: {failure}", markup=False)
    return 1 if failures else 0

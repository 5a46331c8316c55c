"""``python -m bench usage-job``: the usage job's cost per usage row, on ``local[2]``.

Two figures, each the median over runs:

1. **The job over N usage rows** (default 10 million, 1,000 tenants, 10,000 partitions), without the brokers and the database:
   the job's own code (:func:`spark_pipelines.jobs.usage.store_and_aggregate`) from
   ``__usage``-shaped records (Kafka's columns, binary values as brokers write them) to the raw,
   hourly and daily Parquet and the rows handed to the database writer (collected, not
   written). That is: decode and validate the rows, drop duplicates by identity, append the
   rows to an empty raw store (with its anti-join), recompute every hour and day bucket, write
   them. The input is generated once, before any timing, into Parquet (so each run starts by
   reading it, where the job reads its records from the brokers): ``tenants x topics x
   partitions`` partitions led by 3 brokers, one traffic row and one partition row per
   partition and one-minute window, as many windows as N needs, and 1 % of the rows re-sent
   duplicates of earlier ones. Each run writes to a fresh directory.
2. **The DataSource's read of usage records** from one real broker (``spark.read.format("weir")``
   over a 3-partition topic holding M records encoded with ``log_formats.usage_records``, default
   500,000): rows per second from planning to the last row, every value materialised.

The job's time for N rows read from the brokers is about (1) plus N divided by (2); the
report prints that estimate too. Also timed, once: **the next run**, N/10 new rows in the
windows after the first run's, over the stores the first run left (a run's cost follows its
new rows, not the stored ones); and with ``--usage-scale`` **the growth series**: N/4, N/2
and N rows at the default shape (1,000 tenants, 10,000 partitions), N/4 rows with 1,000 tenants
of 1-partition topics (2,000 partitions), with 100 tenants (1,000 partitions) and with 100
tenants of 50-partition topics (10,000 partitions), each into empty stores, with their CPU seconds.

``--workers 1,2`` times the same job over the same N rows on a Spark standalone cluster instead
(:mod:`spark_pipelines.standalone`: a master and that many workers of one core each, started from
the installed PySpark on loopback, one cluster per count, the driver in this process), and
prints the seconds side by side: how adding a worker shortens a large usage run.
"""

from __future__ import annotations

import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from bench.broker_launcher import LocalBroker
from bench.report import machine_description

DEFAULT_ROWS = 10_000_000
DEFAULT_READ_ROWS = 500_000
DEFAULT_RUNS = 3
QUICK_ROWS = 200_000
QUICK_READ_ROWS = 50_000
MASTER = "local[2]"
DRIVER_MEMORY = "4g"  # 10 million rows persisted on a 2-core machine: spills to disk beyond this
TENANTS = 1_000
TOPICS_PER_TENANT = 2
PARTITIONS_PER_TOPIC = 5  # 1,000 tenants x 2 topics x 5 partitions = 10,000 partitions
BROKERS = 3
INCREMENT_FRACTION = 0.1  # the incremental run: this fraction of N new rows, in the windows after the first run's
WINDOW_MS = 60_000
BASE_MS = 1_772_323_200_000  # 2026-03-01T00:00:00Z
DUPLICATE_FRACTION = 0.01  # of the rows: brokers re-sending windows
WORKER_CORES = 1  # each standalone worker: the machine has 2 cores
WORKER_MEMORY = "3g"  # each standalone worker offers this; its executor takes EXECUTOR_MEMORY of it
EXECUTOR_MEMORY = "2g"
CLUSTER_DRIVER_MEMORY = "1g"  # on a cluster the driver only plans and collects
READ_TOPIC = "usage-bench"
READ_PARTITIONS = 3
ADMIN_TIMEOUT_SECONDS = 30.0


@dataclass(frozen=True)
class Shape:
    """How the synthetic usage rows spread: tenants x topics x partitions."""

    tenants: int = TENANTS
    topics_per_tenant: int = TOPICS_PER_TENANT
    partitions_per_topic: int = PARTITIONS_PER_TOPIC

    @property
    def partitions(self) -> int:
        return self.tenants * self.topics_per_tenant * self.partitions_per_topic

    def label(self) -> str:
        return f"{self.tenants:,} tenants, {self.partitions:,} partitions"


# The growth series (``--usage-scale``): (fraction of N, shape), each a run into an empty store.
SCALE_CASES = (
    (0.25, Shape()),
    (0.5, Shape()),
    (1.0, Shape()),
    (0.25, Shape(partitions_per_topic=1)),
    (0.25, Shape(tenants=100)),
    (0.25, Shape(tenants=100, partitions_per_topic=50)),
)


@dataclass(frozen=True)
class JobRun:
    seconds: float
    raw_rows: int
    hour_rows: int
    day_rows: int
    cpu_seconds: float | None = None  # the Spark JVM's (and its reaped children's) user + system CPU seconds


def jvm_cpu_seconds(spark) -> float | None:  # type: ignore[no-untyped-def]
    """User + system CPU seconds the session's JVM and its Python workers have used so far, None
    where /proc or the gateway process is not there.

    On a machine shared with other work, a run's wall-clock seconds grow with the others' load;
    its CPU seconds much less: on an idle local[2] the run takes at least CPU seconds / 2. The
    Python workers (``mapInArrow``'s decoding) are children of the JVM's Python daemon and live
    as long as it does, so their CPU is counted from their own /proc entries, not only once reaped.
    """
    process = getattr(getattr(spark.sparkContext, "_gateway", None), "proc", None)
    pid = getattr(process, "pid", None)
    if pid is None:
        return None
    ticks = os.sysconf("SC_CLK_TCK")
    try:
        return sum(_process_ticks(member) for member in _process_tree(pid)) / ticks
    except OSError:
        return None


def _process_tree(root: int) -> list[int]:
    """``root`` and every living process descending from it."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue  # ended while listed
            children.setdefault(parent, []).append(int(entry.name))
    tree, pending = [], [root]
    while pending:
        pid = pending.pop()
        tree.append(pid)
        pending.extend(children.get(pid, []))
    return tree


def _process_ticks(pid: int) -> int:
    """utime + stime + cutime + cstime of ``pid`` (fields 14-17 of proc(5)), 0 if it has ended."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except FileNotFoundError:
        return 0
    # Counted here from field 3 (state).
    return sum(int(value) for value in fields[11:15])


def spark_for_bench():  # type: ignore[no-untyped-def]
    """The session the job would have on ``local[2]`` (its defaults), with room for N rows."""
    from spark_pipelines.session import spark_session

    session = spark_session(
        "weir-bench-usage-job",
        master=MASTER,
        extra_conf={"spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false", "spark.driver.memory": DRIVER_MEMORY},
    )
    session.sparkContext.setLogLevel("ERROR")
    return session


def _binary_value(row, kind: str):  # type: ignore[no-untyped-def]
    """The binary encoding of ``log_formats.usage_records`` (``encode``) of a struct of a row's fields, with Spark's column functions."""
    from pyspark.sql import functions as F

    from log_formats.usage_records import BINARY_FORMAT, COUNTER_SLOTS, KIND_CODES, KIND_FIELDS, STRING_FIELDS_IN_ORDER

    def integer(column, size: int):  # type: ignore[no-untyped-def]
        # hex() of a negative long is its 16 two's-complement digits; the fields that are 4 or 2 bytes are never negative.
        return F.unhex(F.lpad(F.hex(column.cast("long")), 2 * size, "0"))

    counters = [row[name] for name in KIND_FIELDS[kind]]
    counters += [F.lit(0)] * (COUNTER_SLOTS - len(counters))
    strings = [F.encode(row[name], "UTF-8") for name in STRING_FIELDS_IN_ORDER]
    return F.concat(
        F.lit(bytearray([BINARY_FORMAT, KIND_CODES[kind]])),
        *(integer(row[name], 8) for name in ("node_id", "sequence", "window_start_ms", "window_end_ms")),
        integer(row["partition"], 4),
        *(integer(counter, 8) for counter in counters),
        *(integer(F.octet_length(value), 2) for value in strings),
        *strings,
    )


def generate_records(spark, rows: int, path: Path, shape: Shape = Shape(), first_row: int = 0, encoding: str = "binary") -> None:  # type: ignore[no-untyped-def]  # noqa: B008 - frozen
    """Write ``rows`` synthetic ``__usage`` records (see the module docstring) as Parquet at
    ``path``: the rows numbered from ``first_row`` on (a later batch continues the windows);
    values in the binary encoding brokers write, or ``encoding="json"``, the one they wrote before."""
    from pyspark.sql import functions as F

    partitions = shape.partitions
    unique = max(1, int(rows / (1 + DUPLICATE_FRACTION)))
    ids = spark.range(rows)
    # Rows past ``unique`` repeat earlier ones, spread over the whole range.
    source = F.when(F.col("id") < unique, F.col("id")).otherwise((F.col("id") - unique) * 7919 % unique) + first_row
    frame = ids.select((F.col("id") + first_row).alias("offset_id"), source.alias("u"))
    frame = (
        frame.withColumn("window", (F.col("u") / (2 * partitions)).cast("long"))
        .withColumn("slot", F.col("u") % (2 * partitions))
        .withColumn("p", F.col("slot") % partitions)
        .withColumn("is_traffic", F.col("slot") < partitions)
        .withColumn("node_id", (F.col("p") % BROKERS + 1).cast("long"))
    )
    window_start = F.lit(BASE_MS) + F.col("window") * WINDOW_MS
    noise = F.abs(F.xxhash64(F.col("u")))
    common = [
        F.lit("weir.usage/1").alias("schema"),
        F.when(F.col("is_traffic"), F.lit("traffic")).otherwise(F.lit("partition")).alias("kind"),
        F.col("node_id"),
        F.concat(F.lit("inc"), F.col("node_id").cast("string")).alias("incarnation"),
        F.col("window").alias("sequence"),
        window_start.alias("window_start_ms"),
        (window_start + WINDOW_MS).alias("window_end_ms"),
        F.format_string("tn-%010d", (F.col("p") / (shape.topics_per_tenant * shape.partitions_per_topic)).cast("int")).alias("tenant_id"),
        F.format_string("topic-%02d", ((F.col("p") / shape.partitions_per_topic).cast("int") % shape.topics_per_tenant)).alias("topic"),
        (F.col("p") % shape.partitions_per_topic).cast("int").alias("partition"),
    ]
    traffic = F.struct(
        *common,
        (noise % 1_000_000).alias("bytes_in"),
        (noise % 1_000).alias("records_in"),
        (noise % 3_000_000).alias("bytes_out"),
        (noise % 3_000).alias("records_out"),
        (noise % 50).alias("produce_requests"),
        (noise % 80).alias("fetch_requests"),
        F.lit(0).alias("throttle_time_ms"),
    )
    stored = F.struct(
        *common,
        ((F.col("window") + 1) * 10_000 + noise % 10_000).alias("log_size_bytes"),
        F.lit(0).alias("log_start_offset"),
        (F.col("window") * 100).alias("log_end_offset"),
        (F.col("window") * 100).alias("high_watermark"),
        F.lit(0).alias("leader_epoch"),
    )
    if encoding == "json":
        value = F.when(F.col("is_traffic"), F.to_json(traffic)).otherwise(F.to_json(stored)).cast("binary")
    else:
        value = F.when(F.col("is_traffic"), _binary_value(traffic, "traffic")).otherwise(_binary_value(stored, "partition"))
    records = frame.select(
        F.col("node_id").cast("string").cast("binary").alias("key"),
        value.alias("value"),
        F.lit("__usage").alias("topic"),
        (F.col("node_id") - 1).cast("int").alias("partition"),
        F.col("offset_id").alias("offset"),
        F.timestamp_millis(window_start + WINDOW_MS).alias("timestamp"),
        F.lit(0).alias("timestampType"),
    )
    records.write.mode("overwrite").parquet(str(path))


def time_job(spark, records_path: Path, output_dir: Path, *, fresh: bool = True) -> JobRun:  # type: ignore[no-untyped-def]
    """One timed run of the job's code over the generated records into ``output_dir`` (emptied
    first when ``fresh``, else holding an earlier run's stores)."""
    from spark_pipelines.jobs.usage import UsagePaths, store_and_aggregate

    written: dict[str, int] = {}

    def collect_only(granularity: str, rows: list[dict[str, Any]]) -> int:
        written[granularity] = len(rows)
        return len(rows)

    if fresh:
        shutil.rmtree(output_dir, ignore_errors=True)
    cpu_before = jvm_cpu_seconds(spark)
    started = time.perf_counter()
    records = spark.read.parquet(str(records_path))
    result = store_and_aggregate(spark, records, list(range(BROKERS)), UsagePaths.under(output_dir), collect_only)
    seconds = time.perf_counter() - started
    cpu_after = jvm_cpu_seconds(spark)
    cpu = cpu_after - cpu_before if cpu_before is not None and cpu_after is not None else None
    return JobRun(seconds, result.get("raw_rows_added", 0), written.get("hour", 0), written.get("day", 0), cpu)


def fill_broker(address: str, rows: int) -> None:
    """``rows`` usage records (the brokers' codec) in a 3-partition topic of a standalone broker."""
    from log_formats.usage_records import PartitionRow, TrafficRow, encode
    from weir import Producer
    from weir.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": address})
    admin.create_topics([NewTopic(READ_TOPIC, num_partitions=READ_PARTITIONS, replication_factor=1)])[READ_TOPIC].result(timeout=ADMIN_TIMEOUT_SECONDS)
    producer = Producer({"bootstrap.servers": address, "linger.ms": 20})
    partitions = TENANTS * TOPICS_PER_TENANT * PARTITIONS_PER_TOPIC
    for index in range(rows):
        window, slot = divmod(index, 2 * partitions)
        p = slot % partitions
        start = BASE_MS + window * WINDOW_MS
        node = p % BROKERS + 1
        common = (
            node,
            f"inc{node}",
            window,
            start,
            start + WINDOW_MS,
            f"tn-{p // (TOPICS_PER_TENANT * PARTITIONS_PER_TOPIC):010d}",
            f"topic-{p // PARTITIONS_PER_TOPIC % TOPICS_PER_TENANT:02d}",
            p % PARTITIONS_PER_TOPIC,
        )
        row = (
            TrafficRow(*common, bytes_in=index % 1_000_000, records_in=index % 1_000)
            if slot < partitions
            else PartitionRow(*common, window * 10_000, 0, window * 100, window * 100, 0)
        )
        producer.produce(READ_TOPIC, value=encode(row), key=str(node).encode(), partition=node - 1)
        if index % 10_000 == 0:
            producer.poll(0)
    remaining = producer.flush(120)
    if remaining:
        raise RuntimeError(f"{remaining} usage records were not acknowledged by the benchmark broker")


def time_read(spark, address: str, rows: int) -> float:  # type: ignore[no-untyped-def]
    """Seconds to read every record of the benchmark topic with the DataSource (values materialised)."""
    from pyspark.sql import functions as F

    started = time.perf_counter()
    frame = spark.read.format("weir").option("bootstrap.servers", address).option("subscribe", READ_TOPIC).load()
    [totals] = frame.select(F.count("*").alias("rows"), F.sum(F.length("value")).alias("bytes")).collect()
    seconds = time.perf_counter() - started
    if totals["rows"] != rows:
        raise RuntimeError(f"the DataSource read {totals['rows']} records, the topic holds {rows}")
    return seconds


def _cpu(run: JobRun) -> str:
    return f" ({run.cpu_seconds:.1f} CPU s, JVM and Python workers)" if run.cpu_seconds is not None else ""


def _seconds(values: Sequence[float]) -> str:
    return ", ".join(f"{value:.1f}" for value in values)


@dataclass(frozen=True)
class Figures:
    """Everything one benchmark measured."""

    rows: int
    read_rows: int
    job_runs: list[JobRun]
    incremental: JobRun
    increment_rows: int
    read_seconds: list[float]
    scale: list[tuple[int, Shape, JobRun]]


def report(console: Console, figures: Figures) -> None:
    rows, read_rows, job_runs = figures.rows, figures.read_rows, figures.job_runs
    job_median = statistics.median(run.seconds for run in job_runs)
    read_median = statistics.median(figures.read_seconds)
    read_rate = read_rows / read_median
    last = job_runs[-1]
    console.print()
    console.print(machine_description(False))
    console.print(
        f"Settings: master {MASTER}, driver memory {DRIVER_MEMORY}, Spark defaults otherwise (as the job runs); median of {len(job_runs)} run(s); "
        f"{Shape().label()} ({TOPICS_PER_TENANT} topics x {PARTITIONS_PER_TOPIC} partitions each), 1-minute windows, {DUPLICATE_FRACTION:.0%} duplicates"
    )
    table = Table(title="Usage job on local[2]: seconds (median) and usage rows per second", title_justify="left")
    for column, justify in (("Figure", "left"), ("Rows", "right"), ("Seconds", "right"), ("Rows/s", "right"), ("Every run (s); growth: CPU s", "right")):
        table.add_column(column, justify=justify)  # type: ignore[arg-type]
    table.add_row(
        "Job without brokers and database: parse, dedupe, store raw, hour+day buckets, Parquet",
        f"{rows:,}",
        f"{job_median:.1f}",
        f"{rows / job_median:,.0f}",
        _seconds([run.seconds for run in job_runs]),
    )
    incremental = figures.incremental
    table.add_row(
        "The next run: new rows in the following windows, over the stores of the first",
        f"{figures.increment_rows:,}",
        f"{incremental.seconds:.1f}",
        f"{figures.increment_rows / incremental.seconds:,.0f}",
        "-",
    )
    table.add_row(
        "DataSource read of usage records (1 broker, 3 partitions)", f"{read_rows:,}", f"{read_median:.1f}", f"{read_rate:,.0f}", _seconds(figures.read_seconds)
    )
    estimate = job_median + rows / read_rate
    table.add_row("Estimate: the job reading them from the brokers (sum of the two)", f"{rows:,}", f"{estimate:.1f}", f"{rows / estimate:,.0f}", "-")
    for scale_rows, shape, run in figures.scale:
        cpu = f"{run.cpu_seconds:.1f} CPU s" if run.cpu_seconds is not None else "-"
        table.add_row(f"Growth: {shape.label()}, empty stores", f"{scale_rows:,}", f"{run.seconds:.1f}", f"{scale_rows / run.seconds:,.0f}", cpu)
    console.print(table)
    cpu = [run.cpu_seconds for run in job_runs if run.cpu_seconds is not None]
    if cpu:
        console.print(
            f"The CPU seconds (user + system) of the JVM and its Python workers, median of {len(cpu)}: {statistics.median(cpu):.1f} (every run: {_seconds(cpu)}); "
            f"on an idle machine a run takes at least half of that on local[2], whatever others' load added to the seconds above"
        )
    console.print(
        f"Last run: {last.raw_rows:,} raw rows stored after deduplication, {last.hour_rows:,} hour rows and {last.day_rows:,} day rows for the database; "
        f"the next run {incremental.hour_rows:,} hour rows and {incremental.day_rows:,} day rows"
    )


def main(*, rows: int = DEFAULT_ROWS, read_rows: int = DEFAULT_READ_ROWS, runs: int = DEFAULT_RUNS, scale: bool = False, console: Console) -> int:
    """Generate, run the job ``runs`` times, once more with new rows, the growth series when
    ``scale``, and the read ``runs`` times; print the table; exit status."""
    directory = Path(tempfile.mkdtemp(prefix="weir-bench-usage-job-"))
    spark = spark_for_bench()
    try:
        console.print(f"Generating {rows:,} usage records (not timed)...")
        generate_records(spark, rows, directory / "records")
        job_runs = []
        for run in range(1, runs + 1):
            job_runs.append(time_job(spark, directory / "records", directory / "output"))
            console.print(f"  job run {run}: {job_runs[-1].seconds:.1f} s{_cpu(job_runs[-1])}")
            console.file.flush()
        increment_rows = max(1, int(rows * INCREMENT_FRACTION))
        generate_records(spark, increment_rows, directory / "increment", first_row=rows)
        incremental = time_job(spark, directory / "increment", directory / "output", fresh=False)
        console.print(f"  next run, {increment_rows:,} new rows: {incremental.seconds:.1f} s{_cpu(incremental)}")
        console.file.flush()
        scale_runs = []
        for fraction, shape in SCALE_CASES if scale else ():
            scale_rows = max(1, int(rows * fraction))
            generate_records(spark, scale_rows, directory / "scale", shape)
            scale_runs.append((scale_rows, shape, time_job(spark, directory / "scale", directory / "output")))
            console.print(f"  growth, {scale_rows:,} rows, {shape.label()}: {scale_runs[-1][2].seconds:.1f} s{_cpu(scale_runs[-1][2])}")
            console.file.flush()
        with LocalBroker() as broker:
            console.print(f"Producing {read_rows:,} usage records to a broker (not timed)...")
            fill_broker(broker.address, read_rows)
            read_seconds = []
            for run in range(1, runs + 1):
                read_seconds.append(time_read(spark, broker.address, read_rows))
                console.print(f"  read run {run}: {read_seconds[-1]:.1f} s")
    except Exception as error:  # noqa: BLE001 - a benchmark reports its failure and exits 1
        console.print(f"[red]usage-job benchmark failed: {type(error).__name__}: {error}[/red]")
        return 1
    finally:
        spark.stop()
        shutil.rmtree(directory, ignore_errors=True)
    report(console, Figures(rows, read_rows, job_runs, incremental, increment_rows, read_seconds, scale_runs))
    return 0


def spark_on_cluster(cluster):  # type: ignore[no-untyped-def]
    """A session of this process on ``cluster`` (a started :class:`spark_pipelines.standalone.StandaloneCluster`)."""
    from spark_pipelines.session import spark_session

    conf = cluster.session_conf(executor_memory=EXECUTOR_MEMORY)
    master = conf.pop("spark.master")
    session = spark_session(
        "weir-bench-usage-job-cluster",
        master=master,
        extra_conf={**conf, "spark.ui.showConsoleProgress": "false", "spark.driver.memory": CLUSTER_DRIVER_MEMORY},
    )
    session.sparkContext.setLogLevel("ERROR")
    return session


def report_workers(console: Console, rows: int, timings: dict[int, list[float]]) -> None:
    first = statistics.median(next(iter(timings.values())))
    console.print()
    console.print(machine_description(False))
    console.print(
        f"Settings: Spark standalone master and workers of {WORKER_CORES} core and {WORKER_MEMORY} each on loopback (executors of {EXECUTOR_MEMORY}), "
        f"the driver in this process; {Shape().label()}, 1-minute windows, {DUPLICATE_FRACTION:.0%} duplicates; each run into empty stores"
    )
    table = Table(title=f"Usage job over {rows:,} rows on a standalone cluster: seconds (median) by workers", title_justify="left")
    for column in ("Workers", "Cores", "Seconds", "Rows/s", "Speed-up", "Every run (s)"):
        table.add_column(column, justify="right")
    for workers, seconds in timings.items():
        median = statistics.median(seconds)
        table.add_row(str(workers), str(workers * WORKER_CORES), f"{median:.1f}", f"{rows / median:,.0f}", f"{first / median:.2f}x", _seconds(seconds))
    console.print(table)


def _time_on_cluster(directory: Path, workers: int) -> float:
    """Seconds of one job run over ``directory/records`` on a new cluster of ``workers`` workers."""
    from spark_pipelines.standalone import StandaloneCluster

    cluster_directory = Path(tempfile.mkdtemp(prefix=f"cluster-{workers}-", dir=directory))
    with StandaloneCluster(cluster_directory, workers=workers, cores=WORKER_CORES, memory=WORKER_MEMORY) as cluster:
        spark = spark_on_cluster(cluster)
        try:
            return time_job(spark, directory / "records", directory / "output").seconds
        finally:
            spark.stop()


def cluster_main(*, rows: int = DEFAULT_ROWS, worker_counts: Sequence[int], runs: int = 1, console: Console) -> int:
    """Generate N rows (locally, not timed), then ``runs`` times, for each count in
    ``worker_counts``, start a standalone cluster of that many workers and time the job on it
    (a new cluster each time, its start not timed); print the seconds side by side; exit status."""
    directory = Path(tempfile.mkdtemp(prefix="weir-bench-usage-cluster-"))
    timings: dict[int, list[float]] = {}
    try:
        console.print(f"Generating {rows:,} usage records (not timed)...")
        spark = spark_for_bench()
        try:
            generate_records(spark, rows, directory / "records")
        finally:
            spark.stop()
        # Runs alternate between the cluster sizes, so that a spell of others' load on a shared
        # machine does not fall on one size only.
        for run in range(1, runs + 1):
            for workers in worker_counts:
                timings.setdefault(workers, []).append(_time_on_cluster(directory, workers))
                console.print(f"  {workers} worker(s), run {run}: {timings[workers][-1]:.1f} s")
                console.file.flush()
    except Exception as error:  # noqa: BLE001 - a benchmark reports its failure and exits 1
        console.print(f"[red]usage-job benchmark on a standalone cluster failed: {type(error).__name__}: {error}[/red]")
        return 1
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    report_workers(console, rows, timings)
    return 0

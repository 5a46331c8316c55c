"""``python -m bench {produce,consume,e2e,all,control-plane,failover,replication-throughput,groups,lag-latency,usage-job,flood,transactions,e2e-breakdown,partition-scale}``:
Weir's throughput and latency beside its peers; or, each on a `make up` stack of its own,
issue 3's topic readiness and REST API latency (``control-plane``), issue 4's failover time
(``failover``) and its replicated produce throughput ratio (``replication-throughput``),
issue 5's consumer-group settling time and group consumption throughput ratio (``groups``), and
issue 17's commit-to-visible latency of the lag evaluator, p50 and p99 (``lag-latency``)
and the usage job's seconds over 10 million usage rows on local[2] (``usage-job``, no stack); or
issue 12's produce latency of a well-behaved tenant while another floods its broker with
maximum-size requests (``flood``, one secured broker); or issue 15's transactional produce
throughput beside the idempotent producer's, commit latency and read_committed end-to-end latency
through librdkafka and the SDK (``transactions``, ``--client``); or issue 19's end-to-end latency split into stages, each
record timed at produce(), the sender's Produce call, the consumer's Fetch answer, its queueing
and consume() (``e2e-breakdown``, one broker, see ``bench.latency_breakdown``); or issue 19's scale of
one broker: 10,000 partitions of 100 tenants, its RSS, idle CPU, produce to random partitions and
restart after kill -9, or with ``--idle-stack`` the idle CPU of every process of a `make up` stack
(``partition-scale``, see ``bench.partition_scale``).

``--profile-broker DIR`` (produce, consume, e2e, all) samples the broker the benchmark starts with
py-spy during each measured run of each door and prints, after the report, where its time went:
own samples by area (``broker_nodes/storage``, ``kio``, ``grpc``, ``asyncio``, ...), the top
functions by own and by inclusive samples, and the collapsed-stack file in DIR
(``broker-<scenario>-<sdk|librdkafka>-<size>B.txt``) for speedscope or a flame graph. Figures of a
profiled run show where the time goes; they are not the results."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from rich.console import Console

from bench import settings as defaults
from bench.failover import CONFIGURATIONS as FAILOVER_CONFIGURATIONS
from bench.settings import BenchSettings
from server_runtime.malloc_tuning import tune_this_process

# Not peer comparisons: each starts the whole stack and has its own options.
CONTROL_PLANE = "control-plane"
FAILOVER = "failover"
REPLICATION_THROUGHPUT = "replication-throughput"
GROUPS = "groups"
LAG_LATENCY = "lag-latency"
USAGE_JOB = "usage-job"
FLOOD = "flood"
TRANSACTIONS = "transactions"
E2E_BREAKDOWN = "e2e-breakdown"
PARTITION_SCALE = "partition-scale"
STACK_SCENARIOS = (CONTROL_PLANE, FAILOVER, REPLICATION_THROUGHPUT, GROUPS, LAG_LATENCY, USAGE_JOB, FLOOD, TRANSACTIONS, E2E_BREAKDOWN, PARTITION_SCALE)

_Value = TypeVar("_Value", int, float)


def _sizes(text: str) -> tuple[int, ...]:
    sizes = tuple(int(part) for part in text.split(",") if part.strip())
    if not sizes or any(size < 8 for size in sizes):
        raise argparse.ArgumentTypeError("record sizes must be a comma-separated list of integers >= 8")
    return sizes


def _clients(text: str) -> tuple[str, ...]:
    from bench.transactions import parse_clients

    try:
        return parse_clients(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _peers(text: str) -> tuple[str, ...]:
    if text.strip() == "none":
        return ()
    peers = tuple(part.strip() for part in text.split(",") if part.strip())
    unknown = [peer for peer in peers if peer not in defaults.PEERS]
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown peers {unknown}; choose from {', '.join(defaults.PEERS)} or none")
    return peers


def _failover_configurations(text: str) -> tuple[str, ...]:
    names = tuple(dict.fromkeys(part.strip() for part in text.split(",") if part.strip()))
    unknown = [name for name in names if name not in FAILOVER_CONFIGURATIONS]
    if not names or unknown:
        raise argparse.ArgumentTypeError(
            f"unknown failover configurations {unknown or [text]}; choose from {', '.join(FAILOVER_CONFIGURATIONS)}, comma-separated"
        )
    return names


def _record_bytes(text: str) -> int:
    value = int(text)
    if value < 8:
        raise argparse.ArgumentTypeError("the record size must be an integer >= 8")
    return value


def _positive_int(text: str) -> int:
    value = int(text)
    if value <= 0:
        raise argparse.ArgumentTypeError("must be a positive integer")
    return value


def _non_negative_int(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError("must be zero or a positive integer")
    return value


def _worker_counts(text: str) -> tuple[int, ...]:
    try:
        counts = tuple(int(item) for item in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected numbers of workers separated by commas (e.g. 1,2), not {text!r}") from None
    if not counts or min(counts) <= 0:
        raise argparse.ArgumentTypeError(f"every number of workers must be at least 1, got {text!r}")
    return counts


def _broker_setting(text: str) -> tuple[str, str]:
    key, separator, value = text.partition("=")
    if not separator or not key.strip():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE (a broker setting), not {text!r}")
    return key.strip(), value.strip()


def _positive_seconds(text: str) -> float:
    value = float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError("must be a positive number of seconds")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("scenario", choices=(*defaults.SCENARIOS, "all", *STACK_SCENARIOS))
    parser.add_argument(
        "--records", type=_positive_int, help=f"records per produce/consume run at 100 B, fewer for larger records (default {defaults.DEFAULT_RECORDS:,})"
    )
    parser.add_argument("--sizes", type=_sizes, default=defaults.DEFAULT_SIZES, help="record sizes in bytes, comma-separated (default 100,1024)")
    parser.add_argument(
        "--runs",
        type=_positive_int,
        help=f"runs per figure; the report shows medians (default {defaults.DEFAULT_RUNS}; failover, groups: 5; lag-latency: 40 samples)",
    )
    parser.add_argument("--peers", type=_peers, default=defaults.PEERS, help="redis,nats (default), a subset, or none")
    parser.add_argument("--compression", choices=("none", "lz4"), default="none", help="Weir producer compression.type")
    parser.add_argument(
        "--delivery",
        choices=("sampled", "every"),
        default="every",
        help="Weir delivery reports: a callback on every record (default) or on 1 record in 1,000 plus an end-offset check",
    )
    parser.add_argument("--bootstrap", metavar="HOST:PORT", help="use a running Weir broker instead of starting one")
    parser.add_argument("--profile", type=Path, metavar="DIR", help="cProfile the Weir client side, save .prof files in DIR and print the top functions")
    parser.add_argument(
        "--profile-broker",
        type=Path,
        metavar="DIR",
        help="sample the started broker with py-spy during each Weir run, save collapsed stacks in DIR and print where its time went "
        "(the figures of a profiled run are not results)",
    )
    parser.add_argument(
        "--profile-broker-rate",
        type=_positive_int,
        default=defaults.DEFAULT_BROKER_PROFILE_RATE,
        metavar="HZ",
        help=f"samples per second of --profile-broker (default {defaults.DEFAULT_BROKER_PROFILE_RATE}; higher costs the broker more CPU)",
    )
    parser.add_argument("--e2e-rate", type=_positive_int, default=defaults.DEFAULT_E2E_RATE, help="records/s of the end-to-end producer (default 5000)")
    parser.add_argument("--e2e-seconds", type=float, help=f"duration of an end-to-end run (default {defaults.DEFAULT_E2E_SECONDS:g})")
    parser.add_argument(
        "--no-replicated-e2e",
        dest="replicated_e2e",
        action="store_false",
        help="e2e: leave out the acks=all RF=3 row (three more brokers of its own; only when the benchmark starts Weir itself)",
    )
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/0")
    parser.add_argument("--nats-url", default="nats://127.0.0.1:4222")
    parser.add_argument("--topics", type=_positive_int, default=20, help="control-plane: topics created (and timed) per run (default 20)")
    parser.add_argument("--rate", type=_positive_int, default=50, help="control-plane: GET requests per second of the API load (default 50)")
    parser.add_argument("--seconds", type=float, default=20.0, help="control-plane: duration of the API load per run (default 20)")
    parser.add_argument(
        "--database",
        choices=("sqlite", "postgres"),
        default="sqlite",
        help="control-plane: the control plane's database: the embedded SQLite, or a fresh database on PostgreSQL at 127.0.0.1:5432 (default sqlite)",
    )
    parser.add_argument(
        "--topics-per-tenant",
        type=_non_negative_int,
        default=0,
        help="control-plane: topics created in the tenant before measuring (default 0; issue 19 measures at 1000)",
    )
    parser.add_argument(
        "--failover-config",
        type=_failover_configurations,
        default=tuple(FAILOVER_CONFIGURATIONS),
        help="failover: session timeout configurations measured, one stack each: default (9 s), tuned (2 s), or both comma-separated (default both)",
    )
    parser.add_argument(
        "--record-bytes",
        type=_record_bytes,
        default=100,
        help="replication-throughput, groups: record size in bytes (default 100); --records defaults to 200,000 there, 500,000 for groups",
    )
    parser.add_argument("--rows", type=_positive_int, help="usage-job: synthetic usage rows the job processes (default 10,000,000)")
    parser.add_argument("--read-rows", type=_positive_int, help="usage-job: usage records read back through the DataSource from one broker (default 500,000)")
    parser.add_argument("--usage-scale", action="store_true", help="usage-job: also time N/4, N/2, N rows and fewer tenants or partitions (how run time grows)")
    parser.add_argument(
        "--workers",
        type=_worker_counts,
        help="usage-job: time the job on a Spark standalone cluster of each of these numbers of 1-core workers instead of local[2], e.g. 1,2",
    )
    parser.add_argument("--flood-seconds", type=_positive_seconds, help="flood: seconds of each phase (alone, under the flood) per run (default 10)")
    parser.add_argument("--flood-threads", type=_positive_int, default=4, help="flood: threads sending maximum-size requests (default 4)")
    parser.add_argument(
        "--broker-config", type=_broker_setting, action="append", default=[], metavar="KEY=VALUE", help="flood: a setting of the broker it starts (repeatable)"
    )
    parser.add_argument(
        "--idle-stack", action="store_true", help="partition-scale: measure the idle CPU of every process of a `make up`-like stack instead of one broker"
    )
    parser.add_argument("--client", type=_clients, metavar="NAMES", help="transactions: the clients measured, comma-separated: librdkafka, sdk (default both)")
    parser.add_argument("--quick", action="store_true", help="small runs for a smoke test (20,000 records, 1 run, 1 s end to end) unless given explicitly")
    return parser


def settings_from(arguments: argparse.Namespace) -> BenchSettings:
    quick = arguments.quick

    def chosen(given: object, quick_value: object, default: object) -> object:
        if given is not None:
            return given
        return quick_value if quick else default

    return BenchSettings(
        scenarios=defaults.SCENARIOS if arguments.scenario == "all" else (arguments.scenario,),
        records=chosen(arguments.records, defaults.QUICK_RECORDS, defaults.DEFAULT_RECORDS),  # type: ignore[arg-type]
        sizes=arguments.sizes,
        runs=chosen(arguments.runs, defaults.QUICK_RUNS, defaults.DEFAULT_RUNS),  # type: ignore[arg-type]
        peers=arguments.peers,
        compression=arguments.compression,
        bootstrap=arguments.bootstrap,
        profile_directory=arguments.profile,
        delivery=arguments.delivery,
        e2e_rate=arguments.e2e_rate,
        e2e_seconds=chosen(arguments.e2e_seconds, defaults.QUICK_E2E_SECONDS, defaults.DEFAULT_E2E_SECONDS),  # type: ignore[arg-type]
        redis_url=arguments.redis_url,
        nats_url=arguments.nats_url,
        broker_profile_directory=arguments.profile_broker,
        broker_profile_rate=arguments.profile_broker_rate,
        replicated_e2e=arguments.replicated_e2e,
    )


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; exit status 1 when Weir was unavailable or any run failed."""
    arguments = build_parser().parse_args(argv)
    run_stack_scenario = STACK_RUNNERS.get(arguments.scenario)
    if run_stack_scenario is not None:
        return run_stack_scenario(arguments, _console())
    return _run_peer_comparison(arguments)


def _console() -> Console:
    # Piped output (CI logs) gets wide lines instead of the 80 columns rich assumes without a terminal.
    return Console(width=200) if not sys.stdout.isatty() else Console()


def _chosen(arguments: argparse.Namespace, given: _Value | None, quick_value: _Value, default: _Value) -> _Value:
    """An option as given, else its --quick value, else its default."""
    if given is not None:
        return given
    return quick_value if arguments.quick else default


def _run_control_plane(arguments: argparse.Namespace, console: Console) -> int:
    from bench import control_plane

    runs = _chosen(arguments, arguments.runs, 1, 3)
    return control_plane.main(
        runs=runs,
        topics=arguments.topics,
        rate=arguments.rate,
        seconds=arguments.seconds,
        console=console,
        database=arguments.database,
        topics_per_tenant=arguments.topics_per_tenant,
    )


def _run_failover(arguments: argparse.Namespace, console: Console) -> int:
    from bench import failover

    runs = _chosen(arguments, arguments.runs, 1, 5)
    return failover.main(runs=runs, configuration_names=arguments.failover_config, console=console)


def _run_replication_throughput(arguments: argparse.Namespace, console: Console) -> int:
    from bench import replication_throughput as scenario

    runs = _chosen(arguments, arguments.runs, 1, scenario.DEFAULT_RUNS)
    records = _chosen(arguments, arguments.records, scenario.QUICK_RECORDS, scenario.DEFAULT_RECORDS)
    return scenario.main(runs=runs, records=records, record_bytes=arguments.record_bytes, delivery=arguments.delivery, console=console)


def _run_usage_job(arguments: argparse.Namespace, console: Console) -> int:
    from bench import usage_job

    runs = _chosen(arguments, arguments.runs, 1, usage_job.DEFAULT_RUNS)
    rows = _chosen(arguments, arguments.rows, usage_job.QUICK_ROWS, usage_job.DEFAULT_ROWS)
    read_rows = _chosen(arguments, arguments.read_rows, usage_job.QUICK_READ_ROWS, usage_job.DEFAULT_READ_ROWS)
    if arguments.workers:
        return usage_job.cluster_main(rows=rows, worker_counts=arguments.workers, runs=runs, console=console)
    return usage_job.main(rows=rows, read_rows=read_rows, runs=runs, scale=arguments.usage_scale, console=console)


def _run_lag_latency(arguments: argparse.Namespace, console: Console) -> int:
    from bench import lag_latency

    return lag_latency.main(runs=_chosen(arguments, arguments.runs, 1, lag_latency.DEFAULT_RUNS), console=console)


def _run_flood(arguments: argparse.Namespace, console: Console) -> int:
    from bench import flood

    runs = _chosen(arguments, arguments.runs, 1, flood.DEFAULT_RUNS)
    seconds = _chosen(arguments, arguments.flood_seconds, flood.QUICK_SECONDS, flood.DEFAULT_SECONDS)
    return flood.main(runs=runs, seconds=seconds, threads=arguments.flood_threads, broker_configs=dict(arguments.broker_config), console=console)


def _run_groups(arguments: argparse.Namespace, console: Console) -> int:
    from bench import groups

    runs = _chosen(arguments, arguments.runs, 1, groups.DEFAULT_RUNS)
    records = _chosen(arguments, arguments.records, groups.QUICK_RECORDS, groups.DEFAULT_RECORDS)
    return groups.main(runs=runs, records=records, record_bytes=arguments.record_bytes, console=console)


def _run_transactions(arguments: argparse.Namespace, console: Console) -> int:
    from bench import transactions

    runs = _chosen(arguments, arguments.runs, 1, transactions.DEFAULT_RUNS)
    records = _chosen(arguments, arguments.records, transactions.QUICK_RECORDS, transactions.DEFAULT_RECORDS)
    e2e_seconds = _chosen(arguments, arguments.e2e_seconds, transactions.QUICK_E2E_SECONDS, transactions.DEFAULT_E2E_SECONDS)
    clients = arguments.client or transactions.DEFAULT_CLIENTS
    return transactions.main(runs=runs, records=records, record_bytes=arguments.record_bytes, e2e_seconds=e2e_seconds, console=console, clients=clients)


def _run_e2e_breakdown(arguments: argparse.Namespace, console: Console) -> int:
    from bench import latency_breakdown

    seconds = _chosen(arguments, arguments.e2e_seconds, defaults.QUICK_E2E_SECONDS, latency_breakdown.DEFAULT_SECONDS)
    runs = _chosen(arguments, arguments.runs, 1, latency_breakdown.DEFAULT_RUNS)
    report = latency_breakdown.run(bootstrap=arguments.bootstrap, rate=arguments.e2e_rate, seconds=seconds, runs=runs)
    console.print(report, markup=False, highlight=False)
    return 0


def _run_partition_scale(arguments: argparse.Namespace, console: Console) -> int:
    from bench import partition_scale

    runs = _chosen(arguments, arguments.runs, 1, partition_scale.DEFAULT_RUNS)
    records = _chosen(arguments, arguments.records, partition_scale.QUICK_RECORDS, partition_scale.DEFAULT_RECORDS)
    return partition_scale.main(runs=runs, records=records, idle_stack=arguments.idle_stack, console=console)


# The scenarios that start a stack of their own, each with its own options (imported only when run: some need Django or Spark).
STACK_RUNNERS: dict[str, Callable[[argparse.Namespace, Console], int]] = {
    CONTROL_PLANE: _run_control_plane,
    FAILOVER: _run_failover,
    REPLICATION_THROUGHPUT: _run_replication_throughput,
    USAGE_JOB: _run_usage_job,
    LAG_LATENCY: _run_lag_latency,
    FLOOD: _run_flood,
    GROUPS: _run_groups,
    TRANSACTIONS: _run_transactions,
    E2E_BREAKDOWN: _run_e2e_breakdown,
    PARTITION_SCALE: _run_partition_scale,
}


def _run_peer_comparison(arguments: argparse.Namespace) -> int:
    """produce / consume / e2e / all: Weir beside its peers, one report."""
    settings = settings_from(arguments)
    # Before any large allocation: later-started processes inherit the environment variables.
    malloc_tuned = tune_this_process()
    console = _console()

    from bench.broker_profile import print_profile
    from bench.report import print_report
    from bench.runner import open_systems, run_scenario

    with open_systems(settings, console) as systems:
        results = [run_scenario(scenario, systems.available, settings, console) for scenario in settings.scenarios]
        descriptions = [system.describe_settings() for system in systems.available]
        profiles = [summary for system in systems.available for summary in getattr(system, "profile_summaries", [])]
        broker_profiles = list(systems.broker_sampler.profiles.values()) if systems.broker_sampler else []
    if broker_profiles:
        console.print(
            f"[yellow]Profiled run: py-spy sampled the broker at {settings.broker_profile_rate} Hz, which costs it CPU; these figures are not results.[/yellow]"
        )
    print_report(console, results, systems.unavailable, descriptions, settings, malloc_tuned)
    for summary in profiles:
        console.print(summary, markup=False, highlight=False)
    for broker_profile in broker_profiles:
        print_profile(console, broker_profile)
    weir_missing = not any(system.name == "Weir" for system in systems.available)
    any_failed = any(row.failure for result in results for row in result.rows)
    return 1 if weir_missing or any_failed else 0


if __name__ == "__main__":
    sys.exit(main())

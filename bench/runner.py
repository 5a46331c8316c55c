"""Runs the chosen scenarios on every available system and collects medians per row.

Runs are interleaved (run 1 of every system, then run 2 of every system, ...) so that a slow
stretch of the machine, a page-cache flush say, spreads over all systems instead of landing
on one. A run that fails (lost records, a client error) marks its row failed with the
reason; it never stops the other systems.

With ``--profile-broker`` the started broker is sampled with py-spy during the measured part of
every run of each of its doors (:mod:`bench.broker_sampler`): one profile per scenario, door and
record size, the runs of each added up.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from rich.console import Console

from bench.broker_launcher import BrokerStartError, LocalBroker
from bench.broker_sampler import BrokerSampler
from bench.measurements import Figures, LatencySample, ThroughputSample, median_figures
from bench.payloads import value_pool
from bench.settings import BenchSettings
from bench.systems.base import BenchmarkedSystem, EndToEndPlan, SystemUnavailable

if TYPE_CHECKING:
    # Only a type here: the Weir SDK is imported when a benchmark actually runs (see open_systems).
    from bench.systems.weir_system import BrokerSampling

# The broker's two front doors, as profile names spell them.
SDK_DOOR = "sdk"
KAFKA_DOOR = "librdkafka"


@dataclass
class Row:
    """One system at one record size: the medians of its runs, or why it has none."""

    system: str
    record_size: int
    records_per_run: int
    figures: Figures | None = None
    failure: str | None = None


@dataclass
class ScenarioResult:
    scenario: str
    rows: list[Row] = field(default_factory=list)


@dataclass
class Systems:
    """The systems that answered, and one line for each that did not."""

    available: list[BenchmarkedSystem] = field(default_factory=list)
    unavailable: list[str] = field(default_factory=list)
    broker_sampler: BrokerSampler | None = None  # --profile-broker on a broker the benchmark started


def _run_once(system: BenchmarkedSystem, scenario: str, records: int, values: list[bytes], settings: BenchSettings) -> ThroughputSample | LatencySample:
    if scenario == "produce":
        return system.produce(records, values)
    if scenario == "consume":
        return system.consume(records, values)
    if scenario == "e2e":
        return system.end_to_end(EndToEndPlan(settings.e2e_rate, settings.e2e_records()), values)
    raise ValueError(f"unknown scenario {scenario!r}")


def describe_sample(sample: ThroughputSample | LatencySample) -> str:
    text = f"{sample.records_per_second:,.0f} records/s"
    if isinstance(sample, LatencySample):
        summary = sample.summary()
        text += f", p50 {summary.p50_ms:.2f} ms, p99 {summary.p99_ms:.2f} ms"
    return text


def takes_part(system: BenchmarkedSystem, scenario: str) -> bool:
    """Whether ``system`` is measured in ``scenario``: every scenario, unless it names its own (a ``scenarios`` attribute)."""
    scenarios: tuple[str, ...] | None = getattr(system, "scenarios", None)
    return scenarios is None or scenario in scenarios


def run_scenario(scenario: str, systems: list[BenchmarkedSystem], settings: BenchSettings, console: Console) -> ScenarioResult:
    """Every system that takes part, every record size, ``settings.runs`` runs each; progress goes to ``console``."""
    result = ScenarioResult(scenario)
    systems = [system for system in systems if takes_part(system, scenario)]
    for record_size in settings.sizes:
        values = value_pool(record_size)
        records = settings.e2e_records() if scenario == "e2e" else settings.records_for(record_size)
        samples: dict[str, list[ThroughputSample | LatencySample]] = {system.name: [] for system in systems}
        failures: dict[str, str] = {}
        for run in range(1, settings.runs + 1):
            for system in systems:
                if system.name in failures:
                    continue
                try:
                    sample = _run_once(system, scenario, records, values, settings)
                except Exception as error:  # A failed run is reported in its row; the others go on.
                    failures[system.name] = f"{type(error).__name__}: {error}"
                    console.print(f"[red]{scenario} {record_size} B run {run}/{settings.runs} {system.name}: failed: {failures[system.name]}[/red]")
                    continue
                samples[system.name].append(sample)
                console.print(f"[dim]{scenario} {record_size} B run {run}/{settings.runs} {system.name}: {describe_sample(sample)}[/dim]")
        for system in systems:
            row = Row(system.name, record_size, records)
            if system.name in failures:
                row.failure = failures[system.name]
            else:
                row.figures = median_figures(samples[system.name])
            result.rows.append(row)
    return result


@contextlib.contextmanager
def open_systems(settings: BenchSettings, console: Console) -> Iterator[Systems]:
    """Start (or reach) Weir and connect to each requested peer; everything is closed afterwards."""
    # Imported here: the Weir SDK is only needed once a benchmark actually runs.
    from bench.systems.nats_jetstream import NatsJetStreamSystem
    from bench.systems.redis_streams import RedisStreamsSystem

    if settings.broker_profile_directory is not None and settings.bootstrap is not None:
        console.print("[yellow]Broker not profiled: --profile-broker samples the broker the benchmark starts, not one given with --bootstrap.[/yellow]")

    systems = Systems()
    with contextlib.ExitStack() as stack:
        bootstrap = settings.bootstrap
        try:
            from bench.systems.weir_system import LIBRDKAFKA, WeirOptions, WeirSystem
        except ImportError as error:
            # A source checkout whose SDK is broken still benchmarks the peers, and says why Weir is missing.
            systems.unavailable.append(f"Weir unavailable: the SDK cannot be imported ({error})")
            bootstrap = None
        kafka_bootstrap = None  # the started broker's Kafka listener (an external broker's is not known)
        if bootstrap is None and not systems.unavailable:
            try:
                console.print("[dim]starting a Weir broker (python -m broker_nodes) ...[/dim]")
                local = stack.enter_context(LocalBroker())
                bootstrap, kafka_bootstrap = local.address, local.kafka_address
                if settings.broker_profile_directory is not None:
                    systems.broker_sampler = BrokerSampler(local.pid, settings.broker_profile_directory, settings.broker_profile_rate, console)
            except BrokerStartError as error:
                systems.unavailable.append(f"Weir unavailable: {error}")
        if bootstrap is not None:
            options = WeirOptions(bootstrap=bootstrap, compression=settings.compression, delivery=settings.delivery)
            sdk_sampling = _door_sampling(systems.broker_sampler, SDK_DOOR)
            _connect(systems, stack, lambda: WeirSystem(options, settings.profile_directory, sdk_sampling))
        if kafka_bootstrap is not None:
            # The same broker through its second front door, with the same client settings.
            kafka_options = WeirOptions(bootstrap=kafka_bootstrap, compression=settings.compression, delivery=settings.delivery, library=LIBRDKAFKA)
            kafka_sampling = _door_sampling(systems.broker_sampler, KAFKA_DOOR)
            _connect(systems, stack, lambda: WeirSystem(kafka_options, settings.profile_directory, kafka_sampling))
        peer_factories: dict[str, Callable[[], BenchmarkedSystem]] = {
            "redis": lambda: RedisStreamsSystem(settings.redis_url),
            "nats": lambda: NatsJetStreamSystem(settings.nats_url),
        }
        if settings.replicated_e2e and "e2e" in settings.scenarios and settings.bootstrap is None and bootstrap is not None:
            _connect_replicated(systems, stack, console)
        for peer in settings.peers:
            _connect(systems, stack, peer_factories[peer])
        yield systems


def _connect_replicated(systems: Systems, stack: contextlib.ExitStack, console: Console) -> None:
    """Issue 19's acks=all RF=3 end-to-end row: three brokers of their own (``bench.replicated_brokers``)."""
    from bench.replicated_brokers import ReplicatedBrokers
    from bench.systems.replicated_weir import NAME, ReplicatedWeirSystem

    console.print("[dim]starting three replicating Weir brokers for the acks=all RF=3 end-to-end row ...[/dim]")
    try:
        brokers = stack.enter_context(ReplicatedBrokers())
    except BrokerStartError as error:
        systems.unavailable.append(f"{NAME} unavailable: {error}")
        return
    _connect(systems, stack, lambda: ReplicatedWeirSystem(brokers))


def _door_sampling(sampler: BrokerSampler | None, door: str) -> BrokerSampling:
    """What a Weir system of ``door`` brackets its measured stretches with: the broker sampler,
    naming each profile ``<scenario>-<door>-<size>B``, or nothing."""
    if sampler is None:
        return lambda scenario, record_size: contextlib.nullcontext()
    return lambda scenario, record_size: sampler.sampling(f"{scenario}-{door}-{record_size}B")


def _connect(systems: Systems, stack: contextlib.ExitStack, factory: Callable[[], BenchmarkedSystem]) -> None:
    try:
        system = factory()
    except SystemUnavailable as error:
        systems.unavailable.append(str(error))
        return
    stack.callback(system.close)
    systems.available.append(system)

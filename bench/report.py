"""Rich tables of the results: one per scenario, Weir first, each peer with its ratio to Weir."""

from __future__ import annotations

import os
import platform
import sys

from rich.console import Console
from rich.table import Table

from bench.runner import Row, ScenarioResult
from bench.settings import BenchSettings, Targets

WEIR = "Weir"
TITLES = {
    "produce": "Produce: one producer, records/s from the first produce() to the last acknowledgement",
    "consume": "Consume: one consumer reading every record from the beginning",
    "e2e": "End to end: fixed-rate producer (records/s: the rate it achieved), consumer in another process; latency = receipt - due time",
}


def machine_description(malloc_tuned: bool) -> str:
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return (
        f"Machine: {os.cpu_count()} CPUs ({usable} usable), {platform.machine()}, {platform.system()} {platform.release()}, "
        f"Python {sys.version.split()[0]}; glibc malloc thresholds raised: {'yes' if malloc_tuned else 'no'}"
    )


def settings_description(settings: BenchSettings) -> str:
    sizes = ", ".join(f"{size} B: {settings.records_for(size):,} records" for size in settings.sizes)
    return (
        f"Settings: median of {settings.runs} run(s); produce/consume {sizes}; "
        f"e2e {settings.e2e_rate:,} records/s for {settings.e2e_seconds:g} s ({settings.e2e_records():,} records); "
        f"values are random letters; MiB = 2^20 bytes of record values"
    )


def _ratio(weir: Row | None, peer: Row, scenario: str) -> str:
    """Weir's records/s over the peer's; for e2e, Weir's p99 over the peer's (lower is better)."""
    if weir is None or weir.figures is None or peer.figures is None:
        return "-"
    if scenario == "e2e":
        if weir.figures.latency is None or peer.figures.latency is None or peer.figures.latency.p99_ms == 0:
            return "-"
        return f"{weir.figures.latency.p99_ms / peer.figures.latency.p99_ms:.2f}x p99"
    return f"{weir.figures.records_per_second / peer.figures.records_per_second:.2f}x"


def _milliseconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def scenario_table(result: ScenarioResult) -> Table:
    end_to_end = result.scenario == "e2e"
    table = Table(title=TITLES.get(result.scenario, result.scenario), title_justify="left")
    table.add_column("System")
    table.add_column("Record", justify="right")
    table.add_column("Records/run", justify="right")
    table.add_column("Records/s", justify="right")
    table.add_column("MiB/s", justify="right")
    table.add_column("p50 ms", justify="right")
    table.add_column("p99 ms", justify="right")
    if end_to_end:
        table.add_column("p99.9 ms", justify="right")
    table.add_column("Weir / this", justify="right")
    weir_rows = {row.record_size: row for row in result.rows if row.system == WEIR}
    for row in result.rows:
        if row.figures is None:
            cells = [row.system, f"{row.record_size} B", f"{row.records_per_run:,}", f"[red]failed: {row.failure}[/red]", "", "", ""]
            if end_to_end:
                cells.append("")
            table.add_row(*cells, "-")
            continue
        latency = row.figures.latency
        cells = [
            row.system,
            f"{row.record_size} B",
            f"{row.records_per_run:,}",
            f"{row.figures.records_per_second:,.0f}",
            f"{row.figures.mebibytes_per_second:,.1f}",
            _milliseconds(latency.p50_ms if latency else None),
            _milliseconds(latency.p99_ms if latency else None),
        ]
        if end_to_end:
            cells.append(_milliseconds(latency.p999_ms if latency else None))
        cells.append("" if row.system == WEIR else _ratio(weir_rows.get(row.record_size), row, result.scenario))
        table.add_row(*cells)
    return table


def target_verdict(result: ScenarioResult, targets: Targets | None = None) -> str | None:
    """One line comparing Weir's 100-byte figures with the issue's targets, when there are any."""
    targets = targets if targets is not None else Targets()
    weir = next((row for row in result.rows if row.system == WEIR and row.record_size == 100 and row.figures), None)
    if weir is None or weir.figures is None:
        return None
    peers = [row for row in result.rows if row.system != WEIR and row.record_size == 100 and row.figures]
    rate = weir.figures.records_per_second
    if result.scenario in ("produce", "consume"):
        target = targets.produce_records_per_second if result.scenario == "produce" else targets.consume_records_per_second
        kafka = targets.kafka_produce_records_per_second if result.scenario == "produce" else targets.kafka_consume_records_per_second
        ahead = all(rate > peer.figures.records_per_second for peer in peers if peer.figures)
        met = rate >= target and ahead
        return (
            f"Target (100 B): >= {target:,} records/s and ahead of every peer: {'met' if met else 'NOT met'} "
            f"({rate:,.0f} records/s, {rate / target:.2f}x target, {rate / kafka:.2f}x Kafka's published {kafka:,})"
        )
    if result.scenario == "e2e" and weir.figures.latency is not None:
        p99 = weir.figures.latency.p99_ms
        return f"Target (100 B): p99 <= {targets.e2e_p99_ms:g} ms: {'met' if p99 <= targets.e2e_p99_ms else 'NOT met'} ({p99:.2f} ms); " + _latency_goal(
            result, targets
        )
    return None


def _latency_goal(result: ScenarioResult, targets: Targets) -> str:
    """Issue 19 goal 1 over Weir's SDK rows at 100 B (acks=1 on one broker, and acks=all RF=3 when measured)."""
    rows = [row for row in result.rows if row.system.startswith(WEIR) and "librdkafka" not in row.system and row.record_size == 100]
    measured = [(row.system, row.figures.latency) for row in rows if row.figures is not None and row.figures.latency is not None]
    met = bool(measured) and all(latency.p99_ms <= targets.e2e_goal_p99_ms and latency.p999_ms <= targets.e2e_goal_p999_ms for _name, latency in measured)
    figures = "; ".join(f"{name}: {latency.p99_ms:.2f} / {latency.p999_ms:.2f} ms" for name, latency in measured)
    return f"issue 19: p99 <= {targets.e2e_goal_p99_ms:g} ms and p99.9 <= {targets.e2e_goal_p999_ms:g} ms: {'met' if met else 'NOT met'} ({figures})"


def print_report(
    console: Console, results: list[ScenarioResult], unavailable: list[str], descriptions: list[str], settings: BenchSettings, malloc_tuned: bool
) -> None:
    console.print()
    console.print(machine_description(malloc_tuned))
    console.print(settings_description(settings))
    for description in descriptions:
        console.print(f"  {description}")
    for line in unavailable:
        console.print(f"[yellow]{line}[/yellow]")
    for result in results:
        console.print()
        console.print(scenario_table(result))
        verdict = target_verdict(result)
        if verdict:
            console.print(verdict)

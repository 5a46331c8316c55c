"""`python -m bench partition-scale`: how it finds and times the processes it measures, and its verdicts.

The benchmark itself (10,000 partitions, a restart, an idle stack) is too long for the suite; these
check the parts that decide its figures. No timing assertion: the machine may be busy."""

from __future__ import annotations

import os
import subprocess
import sys

from rich.console import Console

from bench.partition_scale import BROKER_IDLE_CPU_TARGET, ScaleFigures, broker_table, cpu_seconds, descendants


def test_descendants_include_the_root_and_its_children_with_their_commands() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        found = descendants(os.getpid())
        assert os.getpid() in found
        assert child.pid in found
        assert "-c" in found[child.pid]
    finally:
        assert child.stdin is not None
        child.stdin.close()
        child.wait(30)


def test_cpu_seconds_counts_this_process_and_none_for_a_process_that_is_gone() -> None:
    before = cpu_seconds(os.getpid())
    assert before is not None
    sum(range(2_000_000))  # some CPU of our own
    after = cpu_seconds(os.getpid())
    assert after is not None and after >= before
    assert cpu_seconds(2**22 + 12345) is None  # beyond Linux's default pid_max


def test_table_shows_each_figure_beside_its_target_and_a_verdict() -> None:
    figures = ScaleFigures(
        partitions=10_001,
        provision_seconds=9.0,
        rss_bytes=140 * 2**20,
        idle_cpu=BROKER_IDLE_CPU_TARGET * 2,
        random_partition_rates=[90_000.0, 100_000.0, 80_000.0],
        single_partition_rates=[100_000.0],
        random_partition_broker_us=[0.5, 0.4, 0.6],
        single_partition_broker_us=[0.3],
        random_partition_client_us=[1.7],
        single_partition_client_us=[1.2],
        unclean_restart_seconds=4.0,
    )
    console = Console(width=200, record=True)
    console.print(broker_table(figures, 1_000, "python -m bench partition-scale"))
    text = console.export_text()
    assert "│ RSS once provisioned, MiB" in text and "140" in text
    idle_row = next(line for line in text.splitlines() if "idle CPU" in line)
    assert "10.0%" in idle_row and "NOT met" in idle_row
    ratio_row = next(line for line in text.splitlines() if "random / one partition" in line)
    assert "0.90" in ratio_row and "met" in ratio_row and "NOT" not in ratio_row
    broker_cpu_row = next(line for line in text.splitlines() if "broker CPU per record" in line)
    assert "0.50 / 0.30" in broker_cpu_row  # medians of each side's runs
    producer_cpu_row = next(line for line in text.splitlines() if "producer (SDK) CPU per record" in line)
    assert "1.70 / 1.20" in producer_cpu_row
    restart_row = next(line for line in text.splitlines() if "kill -9" in line)
    assert "4.00" in restart_row and " met" in restart_row
    clean_row = next(line for line in text.splitlines() if "clean stop" in line)
    assert clean_row.count("-") >= 2  # not measured: no figure, no verdict

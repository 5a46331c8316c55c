"""The broker profile: the collapsed-stack summary, the sampler's failure path, the CLI option,
and one real benchmark run with py-spy attached to the broker it starts."""

from __future__ import annotations

import io
import re
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from bench.__main__ import build_parser, settings_from
from bench.broker_profile import (
    NO_PYTHON_FRAME,
    FunctionKey,
    area_of,
    merge_collapsed,
    parse_frame,
    summarize,
)
from bench.broker_sampler import BrokerSampler, process_cpu_seconds, py_spy_executable

REPOSITORY = Path(__file__).resolve().parents[2]

# 10 samples in all: 4 appending, 3 decoding a request with kio, 2 in a recursive walk, 1 idle in the event loop.
COLLAPSED = """\
Thread.run (threading.py:982);handle_produce (broker_nodes/kafka_protocol/handlers/produce.py:42);LogSegment.append (broker_nodes/storage/segment.py:120) 3
Thread.run (threading.py:982);handle_produce (broker_nodes/kafka_protocol/handlers/produce.py:44);LogSegment.append (broker_nodes/storage/segment.py:131) 1
Thread.run (threading.py:982);read_request (broker_nodes/kafka_protocol/connection.py:88);decode (kio/serial/readers.py:17) 3
Thread.run (threading.py:982);walk (weir/records.py:10);walk (weir/records.py:12);walk (weir/records.py:12) 2
run_forever (asyncio/base_events.py:607);EpollSelector.select (selectors.py:468) 1
"""


def test_own_samples_count_the_running_frame_by_function_and_file_whatever_the_line() -> None:
    summary = summarize(COLLAPSED)
    own = dict(summary.own)
    assert summary.total_samples == 10
    assert own[FunctionKey("LogSegment.append", "broker_nodes/storage/segment.py")] == 4
    assert own[FunctionKey("decode", "kio/serial/readers.py")] == 3
    assert FunctionKey("handle_produce", "broker_nodes/kafka_protocol/handlers/produce.py") not in own
    assert summary.own[0] == (FunctionKey("LogSegment.append", "broker_nodes/storage/segment.py"), 4)
    assert summary.percent(4) == pytest.approx(40.0)


def test_inclusive_samples_count_every_function_on_the_stack_and_a_recursion_once() -> None:
    inclusive = dict(summarize(COLLAPSED).inclusive)
    assert inclusive[FunctionKey("Thread.run", "threading.py")] == 9
    assert inclusive[FunctionKey("handle_produce", "broker_nodes/kafka_protocol/handlers/produce.py")] == 4
    # Three frames of walk on each of 2 samples: 2, not 6.
    assert inclusive[FunctionKey("walk", "weir/records.py")] == 2


def test_own_samples_group_by_project_package_one_level_deep_and_by_library_module() -> None:
    summary = summarize(COLLAPSED)
    assert dict(summary.areas) == {"broker_nodes/storage": 4, "kio": 3, "weir/records": 2, "selectors": 1}
    assert summary.areas[0] == ("broker_nodes/storage", 4)
    assert sum(summary.percent(samples) for _area, samples in summary.areas) == pytest.approx(100.0)


@pytest.mark.parametrize(
    ("file", "area"),
    [
        ("broker_nodes/kafka_protocol/handlers/fetch.py", "broker_nodes/kafka_protocol"),
        ("broker_nodes/replica_manager.py", "broker_nodes/replica_manager"),
        ("grpc/_server.py", "grpc"),
        ("threading.py", "threading"),
        ("concurrent/futures/thread.py", "concurrent"),
        ("/work/main/.venv/lib/python3.12/site-packages/kio/schema/produce/v10/request.py", "kio"),
        ("/usr/lib/python3.12/asyncio/base_events.py", "asyncio"),
        ("/work/main/broker_nodes/storage/segment.py", "broker_nodes/storage"),
        ("/tmp/script.py", "script"),
        ("", NO_PYTHON_FRAME),
    ],
)
def test_area_of_short_and_full_file_names(file: str, area: str) -> None:
    assert area_of(file) == area


def test_generated_code_counts_in_the_area_of_its_nearest_caller_with_a_source_file() -> None:
    text = (
        "decode (kio/serial/readers.py:17);__create_fn__.<locals>.__init__ (<string>:3) 4\n"
        "import_module (importlib/__init__.py:126);_find_and_load (<frozen importlib._bootstrap>:1176) 1\n"
        "__create_fn__.<locals>.__init__ (<string>:3) 1\n"
    )
    summary = summarize(text)
    assert dict(summary.areas) == {"kio": 4, "importlib": 1, "<string>": 1}
    assert dict(summary.own)[FunctionKey("__create_fn__.<locals>.__init__", "<string>")] == 5


def test_frames_without_a_file_and_stacks_without_frames_are_kept_not_dropped() -> None:
    assert parse_frame("process 12:python -m broker_nodes") == FunctionKey("process 12:python -m broker_nodes", "")
    summary = summarize(" 5\nrun (threading.py:1) 5\n")
    assert summary.total_samples == 10
    assert dict(summary.own)[FunctionKey(NO_PYTHON_FRAME, "")] == 5
    assert dict(summary.areas)[NO_PYTHON_FRAME] == 5


def test_a_truncated_line_is_counted_as_malformed_not_as_samples() -> None:
    summary = summarize("run (threading.py:1) 5\nrun (threading.py:1) 2\nrun (threading.py")
    assert summary.total_samples == 7
    assert summary.malformed_lines == 1


def test_merging_runs_adds_the_counts_of_identical_stacks() -> None:
    merged = merge_collapsed(["a (x.py:1);b (x.py:2) 3\n", "a (x.py:1);b (x.py:2) 4\nc (y.py:1) 1\n"])
    assert merged == "a (x.py:1);b (x.py:2) 7\nc (y.py:1) 1\n"


def test_an_empty_profile_has_no_rows_and_no_division_by_zero() -> None:
    summary = summarize("")
    assert (summary.total_samples, summary.own, summary.areas) == (0, [], [])
    assert summary.percent(0) == 0.0


def test_profile_broker_option_parses_directory_and_rate() -> None:
    settings = settings_from(build_parser().parse_args(["produce", "--profile-broker", "/tmp/b", "--profile-broker-rate", "250"]))
    assert settings.broker_profile_directory == Path("/tmp/b")
    assert settings.broker_profile_rate == 250
    unprofiled = settings_from(build_parser().parse_args(["produce"]))
    assert unprofiled.broker_profile_directory is None


def test_profile_broker_rate_must_be_positive() -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["produce", "--profile-broker", "/tmp/b", "--profile-broker-rate", "0"])


def test_sampler_that_cannot_attach_says_so_once_and_runs_the_block_unprofiled(tmp_path: Path) -> None:
    executable = py_spy_executable()
    if executable is None:
        pytest.skip("py-spy is not installed (make install)")
    output = io.StringIO()
    # A process id that is not running: py-spy exits with its reason, as when ptrace is refused.
    finished = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True, check=True)
    sampler = BrokerSampler(int(finished.stdout), tmp_path, 100, Console(file=output, width=300), executable=executable)
    ran = []
    for _run in range(2):
        with sampler.sampling("produce-sdk-100B"):
            ran.append(True)
    assert ran == [True, True]
    assert sampler.unavailable_reason is not None
    assert output.getvalue().count("Broker not profiled") == 1
    assert sampler.profiles == {}


def test_sampler_without_py_spy_reports_it_missing(tmp_path: Path) -> None:
    output = io.StringIO()
    sampler = BrokerSampler(1, tmp_path, 100, Console(file=output), executable="")
    with sampler.sampling("produce-sdk-100B"):
        pass
    assert sampler.unavailable_reason == "py-spy is not installed (make install)"
    assert output.getvalue().count("Broker not profiled: py-spy is not installed") == 1


def test_cpu_seconds_of_a_process_that_is_gone_is_unknown() -> None:
    finished = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True, check=True)
    assert process_cpu_seconds(int(finished.stdout)) is None


@pytest.mark.slow
def test_profiled_produce_run_writes_broker_samples_and_names_broker_functions(tmp_path: Path) -> None:
    if py_spy_executable() is None:
        pytest.skip("py-spy is not installed (make install)")
    command = [sys.executable, "-m", "bench", "produce", "--records", "20000", "--sizes", "100", "--runs", "1", "--peers", "none"]
    command += ["--profile-broker", str(tmp_path), "--profile-broker-rate", "1000"]
    completed = subprocess.run(command, cwd=REPOSITORY, capture_output=True, text=True, timeout=180)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert "Broker not profiled" not in completed.stdout, completed.stdout
    profile = tmp_path / "broker-produce-sdk-100B.txt"
    assert summarize(profile.read_text()).total_samples > 0
    assert (tmp_path / "broker-produce-librdkafka-100B.txt").is_file()
    assert "these figures are not results" in completed.stdout
    assert "produce-sdk-100B: top functions by own samples" in completed.stdout
    assert re.search(r"│ broker_nodes/\S+\.py", completed.stdout), completed.stdout
    assert f"flamegraph.pl: {profile}" in completed.stdout

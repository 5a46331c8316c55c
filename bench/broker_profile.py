"""Where a broker's time goes, from a sampling profiler's collapsed stacks.

py-spy's ``--format raw`` (the collapsed-stack format that speedscope, inferno and
flamegraph.pl read) writes one line per distinct stack: frames from the thread's root to the
frame that was running, separated by ``;``, then a space and how many samples saw that stack::

    Thread.run (threading.py:982);handle_produce (broker_nodes/kafka_protocol/handlers/produce.py:42) 7

A frame is ``function (file:line)``. :func:`summarize` turns such a text into three views,
each sample counted against the total so that percentages add up:

- **own** samples: the frame that was running (the stack's last frame), by function and file
  (line numbers dropped: a function is one row however many of its lines were sampled);
- **inclusive** samples: every function on the stack, counted once per stack however often it
  recurses, so a function's figure never exceeds 100 %;
- own samples by **area**: the project's packages one level deep (``broker_nodes/storage``,
  ``weir/records``), any other module by its top-level name (``kio``, ``grpc``, ``asyncio``,
  ``threading``), so a reader sees at a glance how much went to decoding requests, appending, or
  waiting in the event loop. Code without a source file (``<string>``: the ``__init__`` that
  ``dataclasses`` generates for every kio message, say; ``<frozen ...>`` import machinery)
  counts in the area of the nearest caller that has one, which is where the work was asked for.

:func:`summarize` is a pure function of the text; :mod:`bench.broker_sampler` records the
files, and :func:`print_profile` prints a :class:`BrokerProfile`'s summary after a report.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from rich.console import Console
from rich.table import Table

# Packages of this repository, whose areas are one level deeper than a library's.
PROJECT_PACKAGES = ("broker_nodes", "weir", "server_runtime", "log_formats", "grpc_protos")
# Rows of each printed table.
TOP_FUNCTIONS = 15
# A stack with no Python frame at all (py-spy saw a thread holding the interpreter lock outside Python code).
NO_PYTHON_FRAME = "<no Python frame>"

# "function (file:line)"; the line is absent when py-spy ran with --nolineno.
_FRAME = re.compile(r"^(?P<function>.*) \((?P<file>[^()]*?)(?::\d+)?\)$")
# Where an absolute file name's importable part starts (py-spy --full-filenames).
_LIBRARY_ROOT = re.compile(r".*/(?:site-packages|dist-packages|python3\.\d+)/")


@dataclass(frozen=True, order=True)
class FunctionKey:
    """A function as a profile row: its (qualified) name and its file, without a line number."""

    function: str
    file: str


_Key = TypeVar("_Key", FunctionKey, str)


@dataclass(frozen=True)
class ProfileSummary:
    """The samples of one profile by own function, inclusive function and area, most first."""

    total_samples: int
    own: list[tuple[FunctionKey, int]]
    inclusive: list[tuple[FunctionKey, int]]
    areas: list[tuple[str, int]]
    malformed_lines: int = 0

    def percent(self, samples: int) -> float:
        """``samples`` as a percentage of the profile's samples (0 for an empty profile)."""
        return 100.0 * samples / self.total_samples if self.total_samples else 0.0


def parse_frame(frame: str) -> FunctionKey:
    """``"append (broker_nodes/storage/partition_log.py:120)"`` -> ``FunctionKey("append", "broker_nodes/storage/partition_log.py")``;
    a frame without a file (a thread or process label) keeps its whole text as the function."""
    match = _FRAME.match(frame)
    if match is None:
        return FunctionKey(frame, "")
    return FunctionKey(match.group("function"), match.group("file"))


def area_of(file: str) -> str:
    """The area a file belongs to: a project package one level deep, else the top-level module."""
    if not file:
        return NO_PYTHON_FRAME
    parts = _LIBRARY_ROOT.sub("", file).removesuffix(".py").split("/")
    if parts[0] == "":
        # An absolute path outside the libraries (py-spy --full-filenames): from this
        # repository's package on, or else just the module's own name.
        starts = [index for index, part in enumerate(parts) if part in PROJECT_PACKAGES]
        parts = parts[starts[0] :] if starts else parts[-1:]
    if parts[0] in PROJECT_PACKAGES and len(parts) > 1:
        return f"{parts[0]}/{parts[1]}"
    return parts[0]


def _area_of_stack(frames: list[FunctionKey]) -> str:
    """The area of the running frame, or of its nearest caller with a source file when it has none."""
    for frame in reversed(frames):
        if frame.file and not frame.file.startswith("<"):
            return area_of(frame.file)
    return area_of(frames[-1].file)


def parse_collapsed(text: str) -> tuple[Counter[str], int]:
    """The sample count of every stack in a collapsed-stack text (identical stacks added up),
    and the number of lines that were not ``stack count`` (a truncated last line, say)."""
    stacks: Counter[str] = Counter()
    malformed = 0
    for line in text.splitlines():
        if not line.strip():
            continue
        stack, separator, count = line.rpartition(" ")
        if not separator or not count.isdigit():
            malformed += 1
            continue
        stacks[stack] += int(count)
    return stacks, malformed


def merge_collapsed(texts: Iterable[str]) -> str:
    """Several collapsed-stack texts (runs of one scenario) as one; counts are additive."""
    merged: Counter[str] = Counter()
    for text in texts:
        merged.update(parse_collapsed(text)[0])
    return "".join(f"{stack} {count}\n" for stack, count in merged.most_common())


def summarize(text: str) -> ProfileSummary:
    """Own, inclusive and per-area samples of a collapsed-stack text (see the module docstring)."""
    stacks, malformed = parse_collapsed(text)
    own: Counter[FunctionKey] = Counter()
    inclusive: Counter[FunctionKey] = Counter()
    areas: Counter[str] = Counter()
    for stack, count in stacks.items():
        frames = [parse_frame(frame) for frame in stack.split(";") if frame] or [FunctionKey(NO_PYTHON_FRAME, "")]
        own[frames[-1]] += count
        areas[_area_of_stack(frames)] += count
        for function in set(frames):  # once per stack: recursion must not count a sample twice
            inclusive[function] += count
    return ProfileSummary(
        total_samples=sum(stacks.values()),
        own=_ranked(own),
        inclusive=_ranked(inclusive),
        areas=_ranked(areas),
        malformed_lines=malformed,
    )


def _ranked(counts: Counter[_Key]) -> list[tuple[_Key, int]]:
    # Most samples first; equal counts in name order, so that output is stable.
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))


def function_table(title: str, rows: list[tuple[FunctionKey, int]], summary: ProfileSummary, limit: int = TOP_FUNCTIONS) -> Table:
    """The first ``limit`` functions of ``rows`` with their samples and share of the profile."""
    table = Table(title=title, title_justify="left")
    table.add_column("Samples", justify="right")
    table.add_column("%", justify="right")
    table.add_column("Function")
    table.add_column("File")
    for function, samples in rows[:limit]:
        table.add_row(f"{samples:,}", f"{summary.percent(samples):.1f}", function.function, function.file)
    return table


def area_table(title: str, summary: ProfileSummary) -> Table:
    """Own samples by area, every area."""
    table = Table(title=title, title_justify="left")
    table.add_column("Samples", justify="right")
    table.add_column("%", justify="right")
    table.add_column("Area")
    for area, samples in summary.areas:
        table.add_row(f"{samples:,}", f"{summary.percent(samples):.1f}", area)
    return table


def summary_tables(name: str, summary: ProfileSummary) -> list[Table]:
    """The three printed views of one profile: by area, by own samples, by inclusive samples."""
    return [
        area_table(f"{name}: own samples by area", summary),
        function_table(f"{name}: top functions by own samples (the frame running)", summary.own, summary),
        function_table(f"{name}: top functions by inclusive samples (on the stack)", summary.inclusive, summary),
    ]


@dataclass
class BrokerProfile:
    """The samples of every run of one name so far: their merged file, how long they were sampled
    at ``rate`` samples/s, and the CPU time the broker process used meanwhile (None where the
    platform does not say), which tells whether the broker or its client limited the runs."""

    name: str
    path: Path
    rate: int
    seconds: float = 0.0
    cpu_seconds: float | None = 0.0
    runs: int = 0

    def summary(self) -> ProfileSummary:
        return summarize(self.path.read_text() if self.path.exists() else "")

    def cpu_description(self) -> str:
        if self.cpu_seconds is None or not self.seconds:
            return "broker CPU time unknown"
        return f"broker CPU {self.cpu_seconds:.2f} s, {100.0 * self.cpu_seconds / self.seconds:.0f} % of one core"


def print_profile(console: Console, profile: BrokerProfile) -> None:
    """A profile's headline (samples, how busy the broker was), its three tables, and its file."""
    summary = profile.summary()
    console.print()
    console.print(
        f"Broker profile {profile.name}: {summary.total_samples:,} samples with the interpreter lock held, "
        f"{profile.runs} run(s) sampled for {profile.seconds:.2f} s at {profile.rate} Hz; {profile.cpu_description()}",
        highlight=False,
    )
    for table in summary_tables(profile.name, summary):
        console.print(table)
    console.print(f"Collapsed stacks for speedscope, inferno-flamegraph or flamegraph.pl: {profile.path}", markup=False, highlight=False)

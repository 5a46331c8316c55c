"""Where a command's output goes, and how it looks: lines, JSON, rich tables, progress bars.

Data (records, tables, JSON) goes to stdout and everything else to stderr, so that piping
stdout is always safe. Progress bars live on stderr and never redirect stdout.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, BinaryIO, TextIO

from rich import box
from rich.console import Console
from rich.progress import BarColumn, DownloadColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

# Width of tables written to a pipe or file: wide enough that topic names are not wrapped at
# rich's default of 80 columns, which is meant for terminals of unknown size.
PIPE_WIDTH = 200


@dataclass(frozen=True)
class Streams:
    """The three standard streams of one command run (the process's own, or a test's)."""

    stdin: TextIO | BinaryIO
    stdout: TextIO
    stderr: TextIO

    def print_line(self, line: str) -> None:
        self.stdout.write(line + "\n")

    def print_json(self, document: Any) -> None:
        self.stdout.write(json.dumps(document, indent=2) + "\n")

    def print_table(self, title: str | None, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
        table = Table(title=title, box=box.SIMPLE_HEAD, title_justify="left")
        for column in columns:
            table.add_column(column, overflow="fold")
        for row in rows:
            table.add_row(*(str(cell) for cell in row))
        console_for(self.stdout).print(table)

    def print_error(self, message: str) -> None:
        # One line, always: a broker's multi-line message would otherwise look like several errors.
        self.stderr.write("weir: error: " + " ".join(message.split()) + "\n")
        self.stderr.flush()


def is_terminal(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def console_for(stream: TextIO) -> Console:
    """A rich console on ``stream``: colour on terminals only, and no 80-column wrap in pipes."""
    return Console(file=stream, width=None if is_terminal(stream) else PIPE_WIDTH, highlight=False)


class NoProgress:
    """Stands in for a progress bar when none is shown."""

    def __enter__(self) -> NoProgress:
        return self

    def __exit__(self, *exception: object) -> None:
        return None

    def advance(self, amount: int = 1) -> None:
        return None


class ProgressBar:
    """A rich progress bar on stderr, counting ``bytes`` or records; ``total`` None = unknown.

    It is transient on terminals (gone when done) and printed once, finished, elsewhere.
    ``advance`` is cheap enough to call per batch but not per record.
    """

    def __init__(self, stderr: TextIO, description: str, total: int | None, unit: str) -> None:
        console = console_for(stderr)
        count_column = DownloadColumn() if unit == "bytes" else MofNCompleteColumn()
        self._progress = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            BarColumn(),
            count_column,
            TimeElapsedColumn(),
            console=console,
            transient=console.is_terminal,
            # Redirecting would route stdout's data through the stderr console.
            redirect_stdout=False,
            redirect_stderr=False,
        )
        self._task = self._progress.add_task(description, total=total)

    def __enter__(self) -> ProgressBar:
        self._progress.start()
        return self

    def __exit__(self, *exception: object) -> None:
        self._progress.stop()

    def advance(self, amount: int = 1) -> None:
        self._progress.advance(self._task, amount)


def progress_bar(requested: bool, streams: Streams, description: str, total: int | None, unit: str, *, writes_stdout: bool) -> ProgressBar | NoProgress:
    """A bar when ``requested`` (--progress), or when stderr is a terminal that the command's
    stdout data is not also printed on: a bar redrawn between output lines would garble them."""
    if requested or (is_terminal(streams.stderr) and not (writes_stdout and is_terminal(streams.stdout))):
        return ProgressBar(streams.stderr, description, total, unit)
    return NoProgress()

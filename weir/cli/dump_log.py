"""``weir dump-log PATH...``: print and verify segment files with ``weir.dump_log``; no broker."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from weir.cli.arguments import add_command, add_progress_option
from weir.cli.errors import EXIT_OK, CommandError
from weir.cli.output import Streams, progress_bar
from weir.cli.values import non_negative_int
from weir.dump_log import DumpLogError, DumpProblem, dump, files_to_dump


def register(commands: Any) -> None:
    command = add_command(commands, "dump-log", "print and verify .log/.index/.timeindex files or partition directories", run_dump_log, connects=False)
    command.add_argument("paths", nargs="+", metavar="PATH", type=Path)
    command.add_argument("--print-data-log", action="store_true", help="also print every record")
    command.add_argument("--verify-index-only", action="store_true", help="print only index problems, not entries or batches")
    command.add_argument("--max-bytes", type=non_negative_int, help="read at most this many bytes of each log")
    add_progress_option(command)


def run_dump_log(args: argparse.Namespace, streams: Streams, environ: Mapping[str, str]) -> int:
    """Dump every path; exit 1 when any file has a problem (each is also printed where found)."""
    try:
        # Every path is checked before the first is dumped, and the total sizes the bar.
        total = sum(file.stat().st_size for path in args.paths for file in files_to_dump(path))
        problems: list[DumpProblem] = []
        with progress_bar(args.progress, streams, "reading log files", total, "bytes", writes_stdout=True) as progress:
            for path in args.paths:
                report = dump(
                    path,
                    streams.stdout,
                    print_data=args.print_data_log,
                    verify_index_only=args.verify_index_only,
                    max_bytes=args.max_bytes,
                    progress=progress.advance,
                )
                problems += report.problems
    except DumpLogError as error:
        raise CommandError(str(error)) from None
    streams.stdout.flush()
    if problems:
        raise CommandError(f"{len(problems)} problem(s) found; the first: {problems[0]}")
    return EXIT_OK

"""``weir-dump-log PATH...`` (or ``python -m log_formats.dump_log_command``): print and verify a
broker's segment files with :mod:`log_formats.dump_log`; no broker is contacted.

Kafka ships the same tool as ``kafka-dump-log.sh``. It reads files that only brokers write, so it
is installed with the server side (the ``weir-server`` distribution), not with the SDK: an
application that installs ``weir`` gets the client CLI only. It follows the ``weir`` CLI's
conventions (``weir.cli``): data on stdout, progress bars and the one-line ``weir: error: ...`` on
stderr; exit 0 when every file is sound, 1 when any has a problem (each also printed where it was
found), 2 for bad usage.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from log_formats.dump_log import DumpLogError, DumpProblem, dump, files_to_dump
from weir.cli.errors import EXIT_FAILURE, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE, CommandError
from weir.cli.output import Streams, progress_bar
from weir.cli.values import non_negative_int

PROGRAM = "weir-dump-log"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=PROGRAM, description="Print and verify .log/.index/.timeindex/.txnindex files or partition directories of a broker.")
    parser.add_argument("paths", nargs="+", metavar="PATH", type=Path)
    parser.add_argument("--print-data-log", action="store_true", help="also print every record")
    parser.add_argument("--verify-index-only", action="store_true", help="print only index problems, not entries or batches")
    parser.add_argument("--max-bytes", type=non_negative_int, help="read at most this many bytes of each log")
    parser.add_argument("--progress", action="store_true", help="show a progress bar on stderr even when it is not a terminal")
    return parser


def main(argv: Sequence[str] | None = None, *, stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    """Dump every path and return the exit code; the streams default to the process's own."""
    streams = Streams(stdin=sys.stdin, stdout=stdout if stdout is not None else sys.stdout, stderr=stderr if stderr is not None else sys.stderr)
    # argparse prints help and errors to sys.stdout / sys.stderr itself.
    with contextlib.redirect_stdout(streams.stdout), contextlib.redirect_stderr(streams.stderr):
        try:
            args = build_parser().parse_args(argv)
        except SystemExit as exit_request:
            return exit_request.code if isinstance(exit_request.code, int) else EXIT_USAGE
    try:
        return run_dump_log(args, streams)
    except CommandError as error:
        streams.print_error(str(error))
        return EXIT_FAILURE
    except KeyboardInterrupt:
        streams.print_error("interrupted")
        return EXIT_INTERRUPTED


def run_dump_log(args: argparse.Namespace, streams: Streams) -> int:
    """Dump every path; raise CommandError when any file has a problem (each is also printed where found)."""
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


if __name__ == "__main__":
    sys.exit(main())

"""The ``weir`` entry point: parse the command line, run the command, map outcomes to exit codes."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Mapping, Sequence
from typing import BinaryIO, TextIO

from weir.cli import acls, consume, groups, produce, topics, transactions
from weir.cli.connection import add_connection_options, bootstrap_servers
from weir.cli.errors import EXIT_FAILURE, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE, CommandError, UsageError, describe_kafka_error
from weir.cli.output import Streams
from weir.errors import KafkaException

DEBUG_ENVIRONMENT = "WEIR_DEBUG"  # set to 1 to see the traceback of an unexpected error


def build_parser() -> argparse.ArgumentParser:
    """The whole ``weir`` parser; every leaf command sets ``run`` and ``command_parser``."""
    parser = argparse.ArgumentParser(
        prog="weir", description="Weir command line: manage topics, consumer groups, transactions and ACLs, produce and consume records."
    )
    add_connection_options(parser, top_level=True)
    commands = parser.add_subparsers(title="commands", metavar="COMMAND", required=True)
    for command_module in (topics, groups, transactions, acls, produce, consume):
        command_module.register(commands)
    return parser


def main(
    argv: Sequence[str] | None = None,
    *,
    stdin: TextIO | BinaryIO | None = None,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
    environ: Mapping[str, str] | None = None,
) -> int:
    """Run one ``weir`` command and return its exit code.

    The streams and environment default to the process's own; tests pass their own to run
    commands in-process.
    """
    streams = Streams(
        stdin=stdin if stdin is not None else sys.stdin,
        stdout=stdout if stdout is not None else sys.stdout,
        stderr=stderr if stderr is not None else sys.stderr,
    )
    environ = os.environ if environ is None else environ
    # argparse prints help and errors to sys.stdout / sys.stderr itself.
    with contextlib.redirect_stdout(streams.stdout), contextlib.redirect_stderr(streams.stderr):
        try:
            args = build_parser().parse_args(argv)
        except SystemExit as exit_request:
            return exit_request.code if isinstance(exit_request.code, int) else EXIT_USAGE
    try:
        exit_code: int = args.run(args, streams, environ)
        return exit_code
    except CommandError as error:
        streams.print_error(str(error))
        return EXIT_FAILURE
    except UsageError as error:
        args.command_parser.print_usage(streams.stderr)
        streams.print_error(str(error))
        return EXIT_USAGE
    except KafkaException as error:
        streams.print_error(describe_kafka_error(error.args[0], bootstrap_servers(args, environ)))
        return EXIT_FAILURE
    except KeyboardInterrupt:
        streams.print_error("interrupted")
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader of stdout went away (`weir consume t | head -1`): it has what it wanted.
        _detach_stdout(streams)
        return EXIT_OK
    except Exception as error:
        if environ.get(DEBUG_ENVIRONMENT):
            raise
        streams.print_error(f"unexpected {type(error).__name__}: {error} (set {DEBUG_ENVIRONMENT}=1 to see the traceback)")
        return EXIT_FAILURE


def _detach_stdout(streams: Streams) -> None:
    """Point the process's stdout at /dev/null, so that the flush at interpreter exit cannot
    raise BrokenPipeError again (the recipe of Python's signal module documentation)."""
    if streams.stdout is not sys.stdout:
        return
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass

"""Building blocks of the argument parser: commands and the options several commands share."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from weir.cli.connection import add_connection_options


def add_command(commands: Any, name: str, help_text: str, run: Callable[..., int], *, connects: bool = True) -> argparse.ArgumentParser:
    """A leaf command whose ``run(args, streams, environ)`` returns the exit code."""
    command: argparse.ArgumentParser = commands.add_parser(name, help=help_text, description=help_text)
    if connects:
        add_connection_options(command, top_level=False)
    command.set_defaults(run=run, command_parser=command)
    return command


def add_output_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--output", choices=["table", "json"], default="table", help="table for people, json for scripts")


def add_progress_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--progress", action="store_true", help="show a progress bar on stderr even when it is not a terminal")

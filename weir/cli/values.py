"""Parsing of option values: counts and KEY=VALUE pairs."""

from __future__ import annotations

import argparse
from collections.abc import Iterable

from weir.cli.errors import UsageError


def positive_int(text: str) -> int:
    value = _integer(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def non_negative_int(text: str) -> int:
    value = _integer(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must not be negative, not {value}")
    return value


def _integer(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, not {text!r}") from None


def parse_pair(text: str, option: str) -> tuple[str, str]:
    """``KEY=VALUE`` -> (KEY, VALUE); the value may itself contain ``=``."""
    key, separator, value = text.partition("=")
    if not separator or not key.strip():
        raise UsageError(f"{option} expects KEY=VALUE, not {text!r}")
    return key.strip(), value


def parse_pairs(texts: Iterable[str], option: str) -> dict[str, str]:
    return dict(parse_pair(text, option) for text in texts)

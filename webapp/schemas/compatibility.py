"""Compatibility levels and modes, and which earlier versions a new schema is checked against.

BACKWARD: the new schema reads data written with the latest version; FORWARD: the latest version
reads data written with the new one; FULL: both. The ``_TRANSITIVE`` levels check every live
version instead of the latest; NONE checks nothing. Soft-deleted versions are never checked.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from webapp.schemas.errors import InvalidCompatibilityLevel, InvalidMode
from webapp.schemas.schema_types import SchemaFormat

NONE = "NONE"
BACKWARD = "BACKWARD"
BACKWARD_TRANSITIVE = "BACKWARD_TRANSITIVE"
FORWARD = "FORWARD"
FORWARD_TRANSITIVE = "FORWARD_TRANSITIVE"
FULL = "FULL"
FULL_TRANSITIVE = "FULL_TRANSITIVE"
LEVELS = (NONE, BACKWARD, BACKWARD_TRANSITIVE, FORWARD, FORWARD_TRANSITIVE, FULL, FULL_TRANSITIVE)
DEFAULT_LEVEL = BACKWARD

READWRITE = "READWRITE"
READONLY = "READONLY"
IMPORT = "IMPORT"
MODES = (READWRITE, READONLY, IMPORT)
DEFAULT_MODE = READWRITE


def check_level(level: object) -> str:
    """The level, upper-cased; InvalidCompatibilityLevel (42203) naming the allowed ones."""
    if isinstance(level, str) and level.upper() in LEVELS:
        return level.upper()
    raise InvalidCompatibilityLevel(f"Invalid compatibility level '{level}'. Valid values are {', '.join(LEVELS)}.")


def check_mode(mode: object) -> str:
    if isinstance(mode, str) and mode.upper() in MODES:
        return mode.upper()
    raise InvalidMode(f"Invalid mode '{mode}'. Valid values are {', '.join(MODES)}.")


@dataclass(frozen=True)
class EarlierVersion:
    """A live version of the subject, oldest first in the sequences below."""

    version: int
    parsed: Any


Version = TypeVar("Version")


def versions_to_check(level: str, earlier: Sequence[Version]) -> Sequence[Version]:
    """The versions ``level`` checks a new schema against (``earlier`` oldest first)."""
    if level == NONE or not earlier:
        return ()
    return earlier if level.endswith("_TRANSITIVE") else earlier[-1:]


def incompatibilities(schema_format: SchemaFormat, level: str, new: Any, checked: Sequence[EarlierVersion]) -> list[str]:
    """Every reason the new schema breaks ``level``'s direction against each ``checked`` version (chosen
    with :func:`versions_to_check`, or the one version a check names); empty when it does not."""
    backward = level.startswith(BACKWARD) or level.startswith(FULL)
    forward = level.startswith(FORWARD) or level.startswith(FULL)
    reasons: list[str] = []
    for old in checked:
        if backward:
            for reason in schema_format.incompatibilities(new, old.parsed):
                reasons.append(f"version {old.version} ({level}: the new schema must read data written with it): {reason}")
        if forward:
            for reason in schema_format.incompatibilities(old.parsed, new):
                reasons.append(f"version {old.version} ({level}: it must read data written with the new schema): {reason}")
    return reasons

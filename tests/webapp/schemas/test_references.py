"""Resolving references: dependencies first, versions made concrete, missing and cyclic ones refused."""

from __future__ import annotations

import pytest

from webapp.schemas.errors import InvalidSchemaError
from webapp.schemas.references import LATEST, Reference, ReferencedText, resolve

# (subject, version) -> (text, references); LATEST is version 2 of "b".
STORED = {
    ("a", 1): ("A", [Reference("B", "b", LATEST)]),
    ("b", 2): ("B", [Reference("C", "c", 1)]),
    ("c", 1): ("C", []),
    ("loop", 1): ("L", [Reference("M", "mid", 1)]),
    ("mid", 1): ("M", [Reference("L", "loop", 1)]),
}


def lookup(subject: str, version: int) -> ReferencedText:
    if subject == "b" and version == LATEST:
        version = 2
    if (subject, version) not in STORED:
        raise InvalidSchemaError(f"missing {subject} {version}")
    text, references = STORED[(subject, version)]
    return ReferencedText(version=version, text=text, references=references)


def test_texts_come_after_what_they_depend_on_and_latest_becomes_a_version() -> None:
    resolved, texts = resolve([Reference("A", "a", 1), Reference("B", "b", LATEST)], lookup)
    assert resolved == [Reference("A", "a", 1), Reference("B", "b", 2)]
    assert list(texts.items()) == [("C", "C"), ("B", "B"), ("A", "A")]


def test_a_cycle_is_an_invalid_schema_naming_the_chain() -> None:
    with pytest.raises(InvalidSchemaError, match=r"a reference cycle: loop v1 -> mid v1 -> loop v1"):
        resolve([Reference("L", "loop", 1)], lookup)


def test_a_missing_reference_is_an_invalid_schema() -> None:
    with pytest.raises(InvalidSchemaError, match="missing nowhere 3"):
        resolve([Reference("X", "nowhere", 3)], lookup)

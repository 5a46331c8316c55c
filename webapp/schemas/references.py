"""A schema's references: read from a request, resolved to the texts its format parses with.

A reference names another subject's version (``{"name", "subject", "version"}``; version -1 is the
latest live one). Resolution walks references of references depth first, so a schema's texts come
after the texts they depend on; a missing version, or a walk that comes back to a version it is
inside (a cycle), is an invalid schema (42201) naming it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from webapp.schemas.errors import BadRequest, InvalidSchemaError
from webapp.schemas.limits import MAX_REFERENCES

LATEST = -1


@dataclass(frozen=True)
class Reference:
    name: str
    subject: str
    version: int


@dataclass(frozen=True)
class ReferencedText:
    """What a reference points at: the version it resolved to, the schema's text and its own references."""

    version: int
    text: str
    references: Sequence[Reference]


# (subject, version or LATEST) -> what it points at; raises InvalidSchemaError when there is none.
Lookup = Callable[[str, int], ReferencedText]


def parse_references(raw: object) -> list[Reference]:
    """The references of a request body; BadRequest naming the entry that is malformed."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise BadRequest("'references' must be a list of {name, subject, version}.")
    if len(raw) > MAX_REFERENCES:
        raise InvalidSchemaError(f"A schema may have at most {MAX_REFERENCES} references; this one has {len(raw)}.")
    references = []
    for index, entry in enumerate(raw):
        if not isinstance(entry, dict):
            raise BadRequest(f"references[{index}] must be an object with name, subject and version.")
        name, subject, version = entry.get("name"), entry.get("subject"), entry.get("version")
        if not isinstance(name, str) or not name or not isinstance(subject, str) or not subject:
            raise BadRequest(f"references[{index}] needs a non-empty 'name' and 'subject'.")
        if isinstance(version, bool) or not isinstance(version, int) or not (version == LATEST or 1 <= version <= 2**31 - 1):
            raise BadRequest(f"references[{index}].version must be a version number (or -1 for the latest).")
        references.append(Reference(name=name, subject=subject, version=version))
    names = [reference.name for reference in references]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise InvalidSchemaError(f"Reference names must be unique; repeated: {', '.join(duplicates)}.")
    return references


def resolve(references: Sequence[Reference], lookup: Lookup) -> tuple[list[Reference], dict[str, str]]:
    """The references with concrete versions, and every text they need by name (dependencies first)."""
    texts: dict[str, str] = {}
    done: set[tuple[str, int]] = set()

    def visit(reference: Reference, inside: tuple[tuple[str, int], ...]) -> int:
        target = lookup(reference.subject, reference.version)
        key = (reference.subject, target.version)
        if key in inside:
            chain = " -> ".join(f"{subject} v{version}" for subject, version in (*inside, key))
            raise InvalidSchemaError(f"Invalid schema: a reference cycle: {chain}.")
        if key not in done:
            for child in target.references:
                visit(child, (*inside, key))
            done.add(key)
        texts.setdefault(reference.name, target.text)
        return target.version

    resolved = [Reference(reference.name, reference.subject, visit(reference, ())) for reference in references]
    return resolved, texts

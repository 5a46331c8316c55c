"""Avro schemas: parsing with fastavro and Avro's schema-resolution rules as compatibility.

``incompatibilities(reader, writer)`` answers "can data written with ``writer`` be read with
``reader``?" by Avro's specification ("Schema Resolution"), the rules Confluent's registry applies:

- primitives match themselves, and the writer's type may be promoted: int -> long, float, double;
  long -> float, double; float -> double; string <-> bytes;
- records match by unqualified name (or a reader alias naming the writer's full name); every reader
  field is found in the writer by name or by one of the reader field's aliases, and a reader field the
  writer lacks needs a default; writer fields the reader lacks are skipped;
- enums match by name; a writer symbol the reader lacks needs the reader enum's default;
- fixed types match by name and size; arrays by items; maps by values;
- a writer union is readable when each of its branches is; a reader union reads a writer type when
  one of its branches does.

Named types the schema takes from its references are resolved by name; a recursive type is assumed
compatible where the walk meets a pair of types it is already comparing.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from fastavro.schema import parse_schema

from webapp.schemas.formats.errors import InvalidSchema

PRIMITIVES = frozenset({"null", "boolean", "int", "long", "float", "double", "bytes", "string"})
# Writer type -> the reader types its values are promoted to (Avro's "Schema Resolution").
PROMOTIONS: Mapping[str, frozenset[str]] = {
    "int": frozenset({"long", "float", "double"}),
    "long": frozenset({"float", "double"}),
    "float": frozenset({"double"}),
    "string": frozenset({"bytes"}),
    "bytes": frozenset({"string"}),
}


@dataclass(frozen=True)
class AvroSchema:
    """A parsed Avro schema: fastavro's parsed form and every named type it can refer to by full name."""

    canonical: str
    parsed: Any
    named: Mapping[str, Any] = field(repr=False)


def parse(schema: str, references: Mapping[str, str]) -> AvroSchema:
    """Parse ``schema`` with the named types its ``references`` define (texts in dependency order:
    a reference's own references come before it). Raises InvalidSchema naming what is wrong."""
    named: dict[str, Any] = {}
    for name, text in references.items():
        _parse_text(text, named, f"the reference '{name}'")
    parsed = _parse_text(schema, named, "the schema")
    canonical = json.dumps(json.loads(schema), sort_keys=True, separators=(",", ":"))
    return AvroSchema(canonical=canonical, parsed=parsed, named=dict(named))


def _parse_text(text: str, named: dict[str, Any], what: str) -> Any:
    try:
        document = json.loads(text)
    except (ValueError, RecursionError) as error:
        raise InvalidSchema(f"{what} is not JSON: {error}") from None
    if not isinstance(document, (str, dict, list)):
        raise InvalidSchema(f"{what} must be a JSON string, object or array, not {type(document).__name__}")
    try:
        return parse_schema(document, named_schemas=named)
    # fastavro reports a bad schema with several exception types (SchemaParseException, UnknownType,
    # KeyError, TypeError, ...); each is the user's mistake, never the registry's.
    except Exception as error:  # noqa: BLE001
        raise InvalidSchema(f"{what} is not a valid Avro schema: {type(error).__name__}: {error}") from None


def incompatibilities(reader: AvroSchema, writer: AvroSchema) -> list[str]:
    """Why data written with ``writer`` cannot be read with ``reader``; empty when it can."""
    return _Resolution(reader.named, writer.named).check(reader.parsed, writer.parsed, _root_path(reader.parsed))


def _root_path(schema: Any) -> str:
    if isinstance(schema, dict) and isinstance(schema.get("name"), str):
        return str(schema["name"])
    return "(root)"


def _short(name: str) -> str:
    return name.rsplit(".", 1)[-1]


def _kind(node: Any) -> str:
    if isinstance(node, list):
        return "union"
    if isinstance(node, str):
        return node
    return str(node["type"])


def _describe(node: Any) -> str:
    kind = _kind(node)
    if isinstance(node, dict) and "name" in node:
        return f"{kind} {node['name']}"
    return kind


class _Resolution:
    """One comparison of a reader schema with a writer schema; ``check`` returns the reasons."""

    def __init__(self, reader_names: Mapping[str, Any], writer_names: Mapping[str, Any]) -> None:
        self.reader_names = reader_names
        self.writer_names = writer_names
        self.in_progress: set[tuple[int, int]] = set()

    def check(self, reader: Any, writer: Any, path: str) -> list[str]:
        reader = _resolve(reader, self.reader_names)
        writer = _resolve(writer, self.writer_names)
        if isinstance(writer, list):
            reasons: list[str] = []
            for index, branch in enumerate(writer):
                reasons += self._read_one(reader, _resolve(branch, self.writer_names), f"{path}<{_describe_resolved(branch, self.writer_names)}>", index)
            return reasons
        return self._read_one(reader, writer, path, None)

    def _read_one(self, reader: Any, writer: Any, path: str, writer_branch: int | None) -> list[str]:
        """A non-union writer type read by the reader (a union or not)."""
        if not isinstance(reader, list):
            return self._match(reader, writer, path)
        candidates = [self._match(_resolve(branch, self.reader_names), writer, path) for branch in reader]
        if any(not reasons for reasons in candidates):
            return []
        where = f"the writer's union branch {writer_branch} ({_describe(writer)})" if writer_branch is not None else f"the writer's {_describe(writer)}"
        return [f"{path}: {where} matches no branch of the reader's union [{', '.join(_describe_resolved(b, self.reader_names) for b in reader)}]"]

    def _match(self, reader: Any, writer: Any, path: str) -> list[str]:
        """Both non-union types."""
        reader_kind, writer_kind = _kind(reader), _kind(writer)
        if writer_kind in PRIMITIVES and reader_kind in PRIMITIVES:
            if reader_kind == writer_kind or reader_kind in PROMOTIONS.get(writer_kind, frozenset()):
                return []
            return [f"{path}: the writer's {writer_kind} cannot be read as {reader_kind} (no type promotion from {writer_kind} to {reader_kind})"]
        if reader_kind != writer_kind:
            return [f"{path}: the type changed from the writer's {_describe(writer)} to the reader's {_describe(reader)}"]
        if reader_kind == "array":
            return self.check(reader["items"], writer["items"], f"{path}[]")
        if reader_kind == "map":
            return self.check(reader["values"], writer["values"], f"{path}{{}}")
        name_problem = _name_problem(reader, writer, path)
        if name_problem:
            return [name_problem]
        key = (id(reader), id(writer))
        if key in self.in_progress:
            return []
        self.in_progress.add(key)
        try:
            if reader_kind == "record" or reader_kind == "error":
                return self._records(reader, writer, path)
            if reader_kind == "enum":
                return _enums(reader, writer, path)
            if reader_kind == "fixed" and reader["size"] != writer["size"]:
                return [f"{path}: the fixed size changed from the writer's {writer['size']} to the reader's {reader['size']}"]
            return []
        finally:
            self.in_progress.discard(key)

    def _records(self, reader: Any, writer: Any, path: str) -> list[str]:
        writer_fields = {field["name"]: field for field in writer["fields"]}
        reasons: list[str] = []
        for reader_field in reader["fields"]:
            name = reader_field["name"]
            writer_field = writer_fields.get(name)
            if writer_field is None:
                writer_field = next((writer_fields[alias] for alias in reader_field.get("aliases", ()) if alias in writer_fields), None)
            if writer_field is None:
                if "default" not in reader_field:
                    reasons.append(
                        f"{path}.{name}: the reader's field '{name}' has no default and the writer has no such field (a field added without a default, or removed while the other side still needs it)"
                    )
                continue
            reasons += self.check(reader_field["type"], writer_field["type"], f"{path}.{name}")
        return reasons


def _enums(reader: Any, writer: Any, path: str) -> list[str]:
    missing = [symbol for symbol in writer["symbols"] if symbol not in reader["symbols"]]
    if missing and "default" not in reader:
        return [f"{path}: the reader's enum lacks the writer's symbols {missing} and has no default symbol"]
    return []


def _name_problem(reader: Any, writer: Any, path: str) -> str | None:
    reader_name, writer_name = str(reader["name"]), str(writer["name"])
    namespace = reader_name.rsplit(".", 1)[0] if "." in reader_name else ""
    # fastavro keeps aliases as written; a bare alias is in the reader's namespace.
    aliases = {alias if "." in alias or not namespace else f"{namespace}.{alias}" for alias in reader.get("aliases", ())}
    if _short(reader_name) == _short(writer_name) or writer_name in aliases:
        return None
    return f"{path}: the {_kind(reader)} name changed from the writer's {writer_name} to the reader's {reader_name} (and no reader alias names {writer_name})"


def _resolve(node: Any, names: Mapping[str, Any]) -> Any:
    """A type with a named reference replaced by its definition and ``{"type": "int"}`` by ``"int"``."""
    if isinstance(node, str):
        return node if node in PRIMITIVES else names.get(node, node)
    if isinstance(node, dict) and node.get("type") in PRIMITIVES:
        return node["type"]
    if isinstance(node, dict) and isinstance(node.get("type"), (dict, list)):
        return _resolve(node["type"], names)
    return node


def _describe_resolved(node: Any, names: Mapping[str, Any]) -> str:
    return _describe(_resolve(node, names))

"""The shape of a JSON subschema as Confluent's compatibility rules see it (everit's schema classes).

Confluent's registry loads a JSON Schema with the everit library, which turns each subschema into one
typed object: an ObjectSchema, StringSchema, NumberSchema, ArraySchema, BooleanSchema, NullSchema,
EnumSchema, ConstSchema, NotSchema, CombinedSchema (allOf/anyOf/oneOf), EmptySchema (``true``, ``{}``)
or FalseSchema. A subschema that says several of these at once (``"type": ["string", "null"]``, or
``"type": "object"`` beside ``"oneOf"``) becomes a CombinedSchema of them: ``anyOf`` of the types, and
``allOf`` of the type, ``enum``, ``const``, ``not`` and combinators present. :func:`shape` does the
same over the parsed document, without copying it, so that :mod:`.json_schema_compat` compares the
same kinds Confluent compares. A ``$ref`` is followed (everit's ReferenceSchema is always unwrapped
before comparing); from draft 2019-09 on, keywords beside a ``$ref`` apply too (an ``allOf`` of both).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from webapp.schemas.formats.json_schema_parse import Node, child, resolve

# Keywords that imply a type when "type" is absent (everit infers the schema class from them).
IMPLIED_BY = {
    "string": frozenset({"minLength", "maxLength", "pattern", "format"}),
    "number": frozenset({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"}),
    "object": frozenset(
        {"properties", "required", "additionalProperties", "patternProperties", "minProperties", "maxProperties", "dependencies"}
        | {"dependentRequired", "dependentSchemas", "propertyNames"}
    ),
    "array": frozenset({"items", "additionalItems", "prefixItems", "minItems", "maxItems", "uniqueItems", "contains"}),
}
COMBINATORS = ("allOf", "anyOf", "oneOf")
# Keywords that say nothing about which documents are valid: beside a $ref they add no constraint.
ANNOTATIONS = frozenset({"$ref", "$schema", "$id", "id", "$comment", "title", "description", "default", "examples", "definitions", "$defs", "$anchor"})
_DRAFTS_WITH_REF_SIBLINGS = ("https://json-schema.org/draft/2019-09/schema", "https://json-schema.org/draft/2020-12/schema")


@dataclass(frozen=True)
class Shape:
    """One subschema as one of everit's kinds.

    ``kind`` is "empty", "false", "string", "number", "boolean", "null", "object", "array", "enum",
    "const", "not" or "combined". ``node`` is the subschema whose keywords the kind reads (for a
    type among several, the same node: keywords of other types are ignored by each). A combined
    shape has a ``criterion`` and ``parts``: further shapes, or nodes shaped when compared (so that a
    recursive schema is shaped lazily).
    """

    kind: str
    node: Node
    criterion: str = ""
    parts: tuple[Shape | Node, ...] = field(default=())
    requires_integer: bool = False

    @property
    def keywords(self) -> Mapping[str, Any]:
        contents = self.node.contents
        return contents if isinstance(contents, dict) else {}

    def identity(self) -> str:
        """Equal for two shapes of equal JSON (Confluent collapses duplicate subschemas of a combined schema)."""
        if self.kind == "combined" and self.node.contents is None:
            return json.dumps([self.criterion, [part_identity(part) for part in self.parts]], sort_keys=True)
        return json.dumps([self.kind, self.requires_integer, self.node.contents], sort_keys=True, default=str)


def part_identity(part: Shape | Node) -> str:
    return part.identity() if isinstance(part, Shape) else json.dumps(part.contents, sort_keys=True)


def shape_of(part: Shape | Node) -> Shape:
    return part if isinstance(part, Shape) else shape(part)


def shape(node: Node) -> Shape:
    """``node`` as everit's kinds, following any ``$ref`` first."""
    node, extra = _dereferenced(node)
    contents = node.contents
    if contents is True or contents == {}:
        base = Shape("empty", node)
    elif contents is False:
        base = Shape("false", node)
    else:
        parts = _typed_parts(node) + _keyword_parts(node)
        base = parts[0] if len(parts) == 1 else Shape("combined", node, "allOf", tuple(parts)) if parts else Shape("empty", node)
    if extra is None:
        return base
    return Shape("combined", Node(None, node.resolver, node.pointer, node.draft), "allOf", (base, extra))


def _dereferenced(node: Node) -> tuple[Node, Node | None]:
    """The node a ``$ref`` chain ends at, and (2019-09 on) the referring node's other keywords, if any."""
    extra: Node | None = None
    seen = 0
    while isinstance(node.contents, dict) and isinstance(node.contents.get("$ref"), str):
        siblings = {key: value for key, value in node.contents.items() if key not in ANNOTATIONS}
        if siblings and node.draft in _DRAFTS_WITH_REF_SIBLINGS and extra is None:
            extra = Node(siblings, node.resolver, node.pointer, node.draft)
        node = resolve(node, node.contents["$ref"])
        seen += 1
        if seen > 100:  # parse refused longer chains; this only guards a hand-built node
            break
    return node, extra


def _typed_parts(node: Node) -> list[Shape]:
    keywords = node.contents
    declared = keywords.get("type")
    if declared is None:
        implied = [kind for kind, names in IMPLIED_BY.items() if names & keywords.keys()]
        return [Shape(kind, node) for kind in implied]
    names = declared if isinstance(declared, list) else [declared]
    typed: list[Shape] = [_typed(node, name) for name in names]
    if len(typed) == 1:
        return typed
    return [Shape("combined", Node(None, node.resolver, node.pointer, node.draft), "anyOf", tuple(typed))]


def _typed(node: Node, name: str) -> Shape:
    if name == "integer":
        return Shape("number", node, requires_integer=True)
    return Shape(name, node)


def _keyword_parts(node: Node) -> list[Shape]:
    keywords = node.contents
    parts: list[Shape] = []
    if "enum" in keywords:
        parts.append(Shape("enum", node))
    if "const" in keywords:
        parts.append(Shape("const", node))
    if "not" in keywords:
        parts.append(Shape("not", node))
    for criterion in COMBINATORS:
        if isinstance(keywords.get(criterion), list):
            members = tuple(child(node, member, criterion, index) for index, member in enumerate(keywords[criterion]))
            parts.append(Shape("combined", node, criterion, members))
    return parts

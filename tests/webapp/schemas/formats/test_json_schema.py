"""JSON Schemas: parsing (drafts, metaschema, $ref to references and definitions) and Confluent's compatibility rules.

Each compatibility row is (old, new, direction, expected codes): BACKWARD reads old data with the new
schema (reader=new, writer=old), FORWARD the other way round. Many rows mirror cases of Confluent's own
diff fixtures (json-schema-provider's diff-schema-examples.json and diff-combined-schema-examples.json);
on those fixtures this implementation agrees with Confluent's verdict on every case (see the report of
the "formats" helper for the figures)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from webapp.schemas.formats import json_schema, json_schema_compat
from webapp.schemas.formats.errors import InvalidSchema
from webapp.schemas.formats.json_schema_parse import MAX_DEPTH


def codes(old: Any, new: Any, direction: str = "BACKWARD", references: dict[str, str] | None = None) -> list[str]:
    before = json_schema.parse(json.dumps(old), references or {})
    after = json_schema.parse(json.dumps(new), references or {})
    reader, writer = (after, before) if direction == "BACKWARD" else (before, after)
    return [difference.code for difference in json_schema.differences(reader, writer)]


def obj(properties: dict[str, Any], required: tuple[str, ...] = (), **keywords: Any) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(required), **keywords}


STRING, INTEGER, NUMBER = {"type": "string"}, {"type": "integer"}, {"type": "number"}

COMPATIBILITY = [
    ("identical", obj({"a": STRING}), obj({"a": STRING}), "BACKWARD", []),
    ("type changed", obj({"a": STRING}), obj({"a": INTEGER}), "BACKWARD", ["TYPE_CHANGED"]),
    ("number narrowed to integer", obj({"a": NUMBER}), obj({"a": INTEGER}), "BACKWARD", ["TYPE_NARROWED"]),
    ("integer extended to number", obj({"a": INTEGER}), obj({"a": NUMBER}), "BACKWARD", []),
    ("required added", obj({"a": STRING}), obj({"a": STRING}, ("a",)), "BACKWARD", ["REQUIRED_ATTRIBUTE_ADDED"]),
    ("required with default added", obj({"a": STRING}), obj({"a": {"type": "string", "default": "x"}}, ("a",)), "BACKWARD", []),
    ("required removed", obj({"a": STRING}, ("a",)), obj({"a": STRING}), "BACKWARD", []),
    ("property added to open model", obj({"a": STRING}), obj({"a": STRING, "b": STRING}), "BACKWARD", ["OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL"]),
    ("property removed from open model", obj({"a": STRING, "b": STRING}), obj({"a": STRING}), "BACKWARD", []),
    (
        "optional property added to closed model",
        obj({"a": STRING}, additionalProperties=False),
        obj({"a": STRING, "b": STRING}, additionalProperties=False),
        "BACKWARD",
        [],
    ),
    (
        "required property added to closed model",
        obj({"a": STRING}, additionalProperties=False),
        obj({"a": STRING, "b": STRING}, ("b",), additionalProperties=False),
        "BACKWARD",
        ["REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL"],
    ),
    (
        "property removed from closed model",
        obj({"a": STRING, "b": STRING}, additionalProperties=False),
        obj({"a": STRING}, additionalProperties=False),
        "BACKWARD",
        ["PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL"],
    ),
    (
        "property added, covered by patternProperties",
        obj({}, additionalProperties=False, patternProperties={"^I_": INTEGER}),
        obj({"I_1": NUMBER}, additionalProperties=False, patternProperties={"^I_": INTEGER}),
        "BACKWARD",
        [],
    ),
    (
        "property added, not covered by additionalProperties schema",
        obj({}, additionalProperties=STRING),
        obj({"b": NUMBER}, additionalProperties=STRING),
        "BACKWARD",
        ["TYPE_CHANGED", "PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"],
    ),
    ("additionalProperties closed", obj({"a": STRING}), obj({"a": STRING}, additionalProperties=False), "BACKWARD", ["ADDITIONAL_PROPERTIES_REMOVED"]),
    ("additionalProperties opened", obj({"a": STRING}, additionalProperties=False), obj({"a": STRING}), "BACKWARD", []),
    ("enum narrowed", {"enum": ["a", "b"]}, {"enum": ["a"]}, "BACKWARD", ["ENUM_ARRAY_NARROWED"]),
    ("enum extended", {"enum": ["a"]}, {"enum": ["a", "b"]}, "BACKWARD", []),
    ("enum extended read forward", {"enum": ["a"]}, {"enum": ["a", "b"]}, "FORWARD", ["ENUM_ARRAY_NARROWED"]),
    ("maxLength decreased", {"type": "string", "maxLength": 10}, {"type": "string", "maxLength": 5}, "BACKWARD", ["MAX_LENGTH_DECREASED"]),
    ("minLength added", STRING, {"type": "string", "minLength": 1}, "BACKWARD", ["MIN_LENGTH_ADDED"]),
    ("pattern added", STRING, {"type": "string", "pattern": "^a"}, "BACKWARD", ["PATTERN_ADDED"]),
    ("pattern removed", {"type": "string", "pattern": "^a"}, STRING, "BACKWARD", []),
    ("minimum increased", {"type": "integer", "minimum": 0}, {"type": "integer", "minimum": 1}, "BACKWARD", ["MINIMUM_INCREASED"]),
    ("maximum increased", {"type": "integer", "maximum": 9}, {"type": "integer", "maximum": 10}, "BACKWARD", []),
    (
        "exclusiveMaximum decreased",
        {"type": "number", "exclusiveMaximum": 10},
        {"type": "number", "exclusiveMaximum": 5},
        "BACKWARD",
        ["EXCLUSIVE_MAXIMUM_DECREASED"],
    ),
    ("multipleOf expanded", {"type": "integer", "multipleOf": 2}, {"type": "integer", "multipleOf": 4}, "BACKWARD", ["MULTIPLE_OF_EXPANDED"]),
    ("multipleOf reduced", {"type": "integer", "multipleOf": 4}, {"type": "integer", "multipleOf": 2}, "BACKWARD", []),
    ("made nullable", STRING, {"type": ["string", "null"]}, "BACKWARD", []),
    ("nullable removed", {"type": ["string", "null"]}, STRING, "BACKWARD", ["TYPE_CHANGED"]),
    ("oneOf extended", {"oneOf": [STRING]}, {"oneOf": [NUMBER, STRING]}, "BACKWARD", []),
    ("oneOf narrowed", {"oneOf": [STRING, NUMBER]}, {"oneOf": [STRING]}, "BACKWARD", ["SUM_TYPE_NARROWED"]),
    ("oneOf subschema changed", {"oneOf": [STRING]}, {"oneOf": [NUMBER]}, "BACKWARD", ["COMBINED_TYPE_SUBSCHEMAS_CHANGED"]),
    ("allOf to anyOf", {"allOf": [STRING, {"maxLength": 3}]}, {"anyOf": [STRING, {"maxLength": 3}]}, "BACKWARD", []),
    ("anyOf to allOf", {"anyOf": [STRING, INTEGER]}, {"allOf": [STRING, INTEGER]}, "BACKWARD", ["COMBINED_TYPE_CHANGED"]),
    ("allOf gained a subschema", {"allOf": [STRING]}, {"allOf": [STRING, {"maxLength": 3}]}, "BACKWARD", ["PRODUCT_TYPE_EXTENDED"]),
    ("array items type changed", {"type": "array", "items": STRING}, {"type": "array", "items": INTEGER}, "BACKWARD", ["TYPE_CHANGED"]),
    ("uniqueItems added", {"type": "array"}, {"type": "array", "uniqueItems": True}, "BACKWARD", ["UNIQUE_ITEMS_ADDED"]),
    ("maxItems added", {"type": "array"}, {"type": "array", "maxItems": 3}, "BACKWARD", ["MAX_ITEMS_ADDED"]),
    (
        "tuple item added to closed tuple",
        {"type": "array", "items": [STRING], "additionalItems": False},
        {"type": "array", "items": [STRING, STRING], "additionalItems": False},
        "BACKWARD",
        [],
    ),
    (
        "tuple item added to open tuple",
        {"type": "array", "items": [STRING]},
        {"type": "array", "items": [STRING, STRING]},
        "BACKWARD",
        ["ITEM_ADDED_TO_OPEN_CONTENT_MODEL"],
    ),
    ("not narrowed", {"not": NUMBER}, {"not": INTEGER}, "BACKWARD", []),
    ("not extended", {"not": INTEGER}, {"not": NUMBER}, "BACKWARD", ["NOT_TYPE_EXTENDED"]),
    ("const changed", {"const": 1}, {"const": 2}, "BACKWARD", ["ENUM_ARRAY_CHANGED"]),
    ("anything to the empty schema", obj({"a": STRING}), {}, "BACKWARD", []),
    ("the empty schema to a type", {}, STRING, "BACKWARD", ["TYPE_CHANGED"]),
    (
        "dependency array extended",
        {"type": "object", "dependencies": {"a": ["b"]}},
        {"type": "object", "dependencies": {"a": ["b", "c"]}},
        "BACKWARD",
        ["DEPENDENCY_ARRAY_EXTENDED"],
    ),
    (
        "change inside a local definition",
        {"definitions": {"id": STRING}, "type": "object", "properties": {"id": {"$ref": "#/definitions/id"}}},
        {"definitions": {"id": INTEGER}, "type": "object", "properties": {"id": {"$ref": "#/definitions/id"}}},
        "BACKWARD",
        ["TYPE_CHANGED"],
    ),
    (
        "2020-12 $defs and prefixItems",
        {"$schema": "https://json-schema.org/draft/2020-12/schema", "$defs": {"s": STRING}, "type": "array", "prefixItems": [{"$ref": "#/$defs/s"}]},
        {"$schema": "https://json-schema.org/draft/2020-12/schema", "$defs": {"s": INTEGER}, "type": "array", "prefixItems": [{"$ref": "#/$defs/s"}]},
        "BACKWARD",
        ["TYPE_CHANGED"],
    ),
]


@pytest.mark.parametrize(("old", "new", "direction", "expected"), [row[1:] for row in COMPATIBILITY], ids=[row[0] for row in COMPATIBILITY])
def test_compatibility_follows_confluents_rules(old: Any, new: Any, direction: str, expected: list[str]) -> None:
    assert codes(old, new, direction) == expected


def test_reason_names_the_json_pointer_and_the_rule() -> None:
    old, new = json_schema.parse(json.dumps(obj({"a": STRING})), {}), json_schema.parse(json.dumps(obj({"a": STRING}, ("a",))), {})
    assert json_schema.incompatibilities(new, old) == ["REQUIRED_ATTRIBUTE_ADDED at #/required/a: property 'a' is now required and has no default"]
    assert json_schema.incompatibilities(old, new) == []


def test_recursive_schema_is_compared_without_end() -> None:
    tree = {"type": "object", "properties": {"value": INTEGER, "children": {"type": "array", "items": {"$ref": "#"}}}}
    changed = {"type": "object", "properties": {"value": STRING, "children": {"type": "array", "items": {"$ref": "#"}}}}
    assert codes(tree, tree) == []
    assert codes(tree, changed) == ["TYPE_CHANGED"]


def test_change_in_a_referenced_schema_is_found_through_the_ref() -> None:
    main = obj({"address": {"$ref": "address.json"}})
    old_address = json.dumps(obj({"zip": STRING}))
    new_address = json.dumps(obj({"zip": INTEGER}))
    before = json_schema.parse(json.dumps(main), {"address.json": old_address})
    after = json_schema.parse(json.dumps(main), {"address.json": new_address})
    assert [str(difference) for difference in json_schema.differences(after, before)] == ["TYPE_CHANGED at address.json#/properties/zip: string -> integer"]


def test_reference_resolves_by_name_relative_to_the_root_id_and_by_pointer_into_it() -> None:
    address = json.dumps({"$id": "https://acme.example/address.json", "definitions": {"zip": STRING}})
    main = {"$id": "https://acme.example/person.json", "properties": {"zip": {"$ref": "address.json#/definitions/zip"}}}
    assert json_schema.parse(json.dumps(main), {"address.json": address}).draft == "http://json-schema.org/draft-07/schema"


def test_canonical_sorts_keys_and_drops_whitespace() -> None:
    spaced = '{\n  "type": "object",\n  "properties": { "b": {"type": "string"}, "a": {"type": "integer"} }\n}'
    compact = '{"properties":{"a":{"type":"integer"},"b":{"type":"string"}},"type":"object"}'
    assert json_schema.parse(spaced, {}).canonical == compact
    assert json_schema.parse(compact, {}).canonical == compact


@pytest.mark.parametrize(
    "draft",
    [
        "http://json-schema.org/draft-04/schema#",
        "http://json-schema.org/draft-06/schema#",
        "http://json-schema.org/draft-07/schema#",
        "https://json-schema.org/draft/2019-09/schema",
        "https://json-schema.org/draft/2020-12/schema",
    ],
)
def test_every_supported_draft_parses_and_checks_its_metaschema(draft: str) -> None:
    assert json_schema.parse(json.dumps({"$schema": draft, "type": "string"}), {}).draft == draft.rstrip("#")
    with pytest.raises(InvalidSchema, match="minLength"):
        json_schema.parse(json.dumps({"$schema": draft, "type": "string", "minLength": -1}), {})


BAD = [
    ("not JSON", "{", {}, "is not JSON"),
    ("not an object", "[1, 2]", {}, "must be a JSON object or a boolean"),
    ("fails the metaschema", '{"type": 5}', {}, "not a valid draft-07 schema at #/type"),
    ("unknown draft", '{"$schema": "http://example.com/my-draft"}', {}, "not a draft this registry knows"),
    ("unresolved reference", '{"$ref": "missing.json"}', {}, "$ref 'missing.json' at # in the schema does not resolve"),
    ("unresolved definition", '{"properties": {"a": {"$ref": "#/definitions/nope"}}}', {}, "at #/properties/a in the schema does not resolve"),
    ("reference cycle", '{"$ref": "a.json"}', {"a.json": '{"$ref": "b.json"}', "b.json": '{"$ref": "a.json"}'}, "reference cycle"),
    ("self reference", '{"definitions": {"x": {"$ref": "#/definitions/x"}}, "$ref": "#/definitions/x"}', {}, "reference cycle"),
    ("bad reference text", '{"$ref": "a.json"}', {"a.json": "nope"}, "reference 'a.json' is not JSON"),
    ("too deep", '{"not":' * (MAX_DEPTH + 1) + "{}" + "}" * (MAX_DEPTH + 1), {}, f"nests deeper than {MAX_DEPTH} levels"),
    ("far too deep for the JSON parser", "[" * 100_000 + "]" * 100_000, {}, f"nests deeper than {MAX_DEPTH} levels"),
    ("too large", '{"description": "' + "x" * 1_000_001 + '"}', {}, "more than the"),
]


@pytest.mark.parametrize(("text", "references", "reason"), [row[1:] for row in BAD], ids=[row[0] for row in BAD])
def test_bad_input_is_an_invalid_schema_with_one_line_reason(text: str, references: dict[str, str], reason: str) -> None:
    with pytest.raises(InvalidSchema) as raised:
        json_schema.parse(text, references)
    assert reason in str(raised.value)
    assert "\n" not in str(raised.value)


def test_shared_definitions_are_compared_once_per_pair() -> None:
    # 20 levels, each holding the next twice: 2**20 paths, but 20 pairs of definitions to compare.
    definitions = {
        f"l{i}": {"type": "object", "properties": {"a": {"$ref": f"#/definitions/l{i + 1}"}, "b": {"$ref": f"#/definitions/l{i + 1}"}}} for i in range(20)
    }
    old = {"definitions": {**definitions, "l20": STRING}, "$ref": "#/definitions/l0"}
    new = {"definitions": {**definitions, "l20": INTEGER}, "$ref": "#/definitions/l0"}
    assert codes(old, new) == ["TYPE_CHANGED"]


def test_a_comparison_past_its_bound_is_reported_incompatible(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(json_schema_compat, "MAX_COMPARISONS", 20)
    many = {"anyOf": [obj({f"p{i}": STRING}, (f"p{i}",)) for i in range(6)]}
    assert codes(many, many)[-1:] == ["COMPARISON_LIMIT_EXCEEDED"]

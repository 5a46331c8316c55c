"""Avro's schema-resolution rules as the registry applies them: a table of (reader, writer) pairs,
each with the reasons expected (empty: the reader reads the writer's data), and the parse errors."""

from __future__ import annotations

import json

import pytest

from webapp.schemas.formats import avro
from webapp.schemas.formats.errors import InvalidSchema


def rec(*fields: dict[str, object], name: str = "R", **extra: object) -> dict[str, object]:
    return {"type": "record", "name": name, "namespace": "acme", "fields": list(fields), **extra}


def field(name: str, type_: object, **extra: object) -> dict[str, object]:
    return {"name": name, "type": type_, **extra}


ENUM_AB = {"type": "enum", "name": "E", "symbols": ["A", "B"]}
ENUM_A = {"type": "enum", "name": "E", "symbols": ["A"]}
ENUM_A_DEFAULT = {"type": "enum", "name": "E", "symbols": ["A"], "default": "A"}

# (case, reader, writer, fragments each expected reason contains, in order; [] = compatible)
CASES = [
    ("same primitive", "int", "int", []),
    ("int promoted to long", "long", "int", []),
    ("int promoted to double", "double", "int", []),
    ("long promoted to float", "float", "long", []),
    ("float promoted to double", "double", "float", []),
    ("string read as bytes", "bytes", "string", []),
    ("bytes read as string", "string", "bytes", []),
    ("long not narrowed to int", "int", "long", ["no type promotion from long to int"]),
    ("double not narrowed to float", "float", "double", ["no type promotion from double to float"]),
    ("string is not int", "int", "string", ["no type promotion from string to int"]),
    ("field added with default", rec(field("a", "int"), field("b", "int", default=0)), rec(field("a", "int")), []),
    ("field added without default", rec(field("a", "int"), field("b", "int")), rec(field("a", "int")), ["acme.R.b: the reader's field 'b' has no default"]),
    ("field removed is skipped", rec(field("a", "int")), rec(field("a", "int"), field("b", "int")), []),
    ("field renamed with alias", rec(field("c", "int", aliases=["a"])), rec(field("a", "int")), []),
    ("field type promoted", rec(field("a", "long")), rec(field("a", "int")), []),
    ("field type narrowed", rec(field("a", "int")), rec(field("a", "long")), ["acme.R.a: the writer's long cannot be read as int"]),
    ("record renamed", rec(field("a", "int"), name="S"), rec(field("a", "int")), ["name changed from the writer's acme.R to the reader's acme.S"]),
    ("record renamed with alias", rec(field("a", "int"), name="S", aliases=["R"]), rec(field("a", "int")), []),
    (
        "nested record field added without default",
        rec(field("inner", rec(field("x", "int"), field("y", "int"), name="Inner"))),
        rec(field("inner", rec(field("x", "int"), name="Inner"))),
        ["acme.R.inner.y: the reader's field 'y' has no default"],
    ),
    ("writer union into reader union superset", ["null", "int", "string"], ["null", "int"], []),
    ("writer union branch missing from reader", ["null", "int"], ["null", "int", "string"], ["branch 2 (string) matches no branch of the reader's union"]),
    ("non-union writer into reader union", ["null", "long"], "int", []),
    ("non-union writer matches no reader branch", ["null", "string"], "int", ["the writer's int matches no branch"]),
    ("writer union into non-union reader", "long", ["int", "long"], []),
    ("writer union with a branch the reader lacks", "int", ["null", "int"], ["(root)<null>: the writer's null cannot be read as int"]),
    ("enum symbol added on the writer", ENUM_A, ENUM_AB, ["lacks the writer's symbols ['B'] and has no default"]),
    ("enum symbol added with reader default", ENUM_A_DEFAULT, ENUM_AB, []),
    ("enum symbol removed on the writer", ENUM_AB, ENUM_A, []),
    ("fixed same size", {"type": "fixed", "name": "F", "size": 16}, {"type": "fixed", "name": "F", "size": 16}, []),
    (
        "fixed size changed",
        {"type": "fixed", "name": "F", "size": 16},
        {"type": "fixed", "name": "F", "size": 8},
        ["fixed size changed from the writer's 8 to the reader's 16"],
    ),
    ("array items promoted", {"type": "array", "items": "long"}, {"type": "array", "items": "int"}, []),
    ("array items narrowed", {"type": "array", "items": "int"}, {"type": "array", "items": "long"}, ["(root)[]: the writer's long cannot be read as int"]),
    ("map values changed", {"type": "map", "values": "int"}, {"type": "map", "values": "string"}, ["(root){}: the writer's string cannot be read as int"]),
    ("array is not map", {"type": "array", "items": "int"}, {"type": "map", "values": "int"}, ["type changed from the writer's map to the reader's array"]),
    ("recursive record", rec(field("next", ["null", "R"])), rec(field("next", ["null", "R"])), []),
]


@pytest.mark.parametrize(("reader", "writer", "expected"), [case[1:] for case in CASES], ids=[case[0] for case in CASES])
def test_resolution_rules(reader: object, writer: object, expected: list[str]) -> None:
    reasons = avro.incompatibilities(avro.parse(json.dumps(reader), {}), avro.parse(json.dumps(writer), {}))
    assert len(reasons) == len(expected), reasons
    for reason, fragment in zip(reasons, expected, strict=True):
        assert fragment in reason


def test_every_reason_is_reported_not_only_the_first() -> None:
    reader = rec(field("a", "int"), field("b", "string"), field("c", "int"))
    writer = rec(field("a", "long"), field("b", "int"))
    reasons = avro.incompatibilities(avro.parse(json.dumps(reader), {}), avro.parse(json.dumps(writer), {}))
    assert [reason.split(":")[0] for reason in reasons] == ["acme.R.a", "acme.R.b", "acme.R.c"]


def test_named_types_from_references_resolve_by_full_name() -> None:
    address = json.dumps(rec(field("city", "string"), name="Address"))
    wider = json.dumps(rec(field("city", "string"), field("zip", "string"), name="Address"))
    order = json.dumps(rec(field("ship_to", "acme.Address"), name="Order"))
    old = avro.parse(order, {"acme.Address": address})
    new = avro.parse(order, {"acme.Address": wider})
    assert "acme.Order.ship_to.zip" in avro.incompatibilities(new, old)[0]
    assert avro.incompatibilities(old, new) == []


def test_equal_schemas_share_a_canonical_text_whatever_the_spacing_or_key_order() -> None:
    text = json.dumps(rec(field("a", "int")))
    reordered = json.dumps(dict(reversed(list(rec(field("a", "int")).items()))), indent=2)
    assert avro.parse(text, {}).canonical == avro.parse(reordered, {}).canonical
    assert avro.parse(text, {}).canonical != avro.parse(json.dumps(rec(field("a", "int", default=1))), {}).canonical


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("not json", "not JSON"),
        ("3", "must be a JSON string, object or array"),
        ('{"type": "record"}', '"name" is a required field'),
        ('{"type": "nope"}', "UnknownType"),
        (json.dumps(rec(field("a", "int", default="x"))), "Default value <x> must match schema type: int"),
        (json.dumps(rec(field("a", "acme.Missing"))), "acme.Missing"),
    ],
)
def test_invalid_schemas_name_what_is_wrong(text: str, fragment: str) -> None:
    with pytest.raises(InvalidSchema) as raised:
        avro.parse(text, {})
    assert fragment in str(raised.value)


def test_an_invalid_reference_is_named() -> None:
    with pytest.raises(InvalidSchema, match="the reference 'acme.Address'"):
        avro.parse('"string"', {"acme.Address": "{"})

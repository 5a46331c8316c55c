"""Protobuf schemas: parsing (.proto text, base64 descriptors, imports) and Confluent's compatibility rules.

Each compatibility row is (old, new, direction, expected codes): BACKWARD reads old data with the new
schema (reader=new, writer=old), FORWARD the other way round. Several rows mirror cases of Confluent's
own protobuf diff examples (diff-schema-examples.json): field added/removed, scalar kind changes within
and across wire groups, oneof moves, and package changes."""

from __future__ import annotations

import base64

import pytest

from webapp.schemas.formats import protobuf, protobuf_compat
from webapp.schemas.formats.errors import InvalidSchema
from webapp.schemas.formats.protobuf_parse import MAIN_FILE, MAX_SCHEMA_CHARS


def schema(body: str, package: str = "acme", syntax: str = "proto3") -> str:
    return f'syntax = "{syntax}";\npackage {package};\n{body}'


def codes(old: str, new: str, direction: str, references: dict[str, str] | None = None) -> list[str]:
    before, after = protobuf.parse(old, references or {}), protobuf.parse(new, references or {})
    reader, writer = (after, before) if direction == "BACKWARD" else (before, after)
    return [difference.code for difference in protobuf.differences(reader, writer)]


PERSON = "message Person { string name = 1; int32 age = 2; }"

COMPATIBILITY = [
    ("identical", PERSON, PERSON, "BACKWARD", []),
    ("field added", PERSON, "message Person { string name = 1; int32 age = 2; string email = 3; }", "BACKWARD", []),
    ("field removed", PERSON, "message Person { string name = 1; }", "BACKWARD", []),
    ("field renamed", PERSON, "message Person { string name = 1; int32 years = 2; }", "FORWARD", []),
    ("int32 -> int64 same varint group", PERSON, "message Person { string name = 1; int64 age = 2; }", "BACKWARD", []),
    ("int32 -> bool same varint group", PERSON, "message Person { string name = 1; bool age = 2; }", "BACKWARD", []),
    ("int32 -> sint32 zigzag", PERSON, "message Person { string name = 1; sint32 age = 2; }", "BACKWARD", ["FIELD_SCALAR_KIND_CHANGED"]),
    ("int32 -> string", PERSON, "message Person { string name = 1; string age = 2; }", "BACKWARD", ["FIELD_SCALAR_KIND_CHANGED"]),
    ("string -> bytes", PERSON, "message Person { bytes name = 1; int32 age = 2; }", "BACKWARD", []),
    ("fixed32 <-> sfixed32", "message M { fixed32 a = 1; }", "message M { sfixed32 a = 1; }", "FORWARD", []),
    ("fixed64 -> fixed32", "message M { fixed64 a = 1; }", "message M { fixed32 a = 1; }", "BACKWARD", ["FIELD_SCALAR_KIND_CHANGED"]),
    ("float -> double", "message M { float a = 1; }", "message M { double a = 1; }", "BACKWARD", ["FIELD_SCALAR_KIND_CHANGED"]),
    ("enum <-> int32", "enum E { A = 0; } message M { E a = 1; }", "enum E { A = 0; } message M { int32 a = 1; }", "BACKWARD", []),
    ("scalar -> message", "message M { string a = 1; }", "message N {} message M { N a = 1; }", "BACKWARD", ["FIELD_KIND_CHANGED"]),
    ("message removed", "message A {} message B {}", "message A {}", "BACKWARD", ["MESSAGE_REMOVED"]),
    ("message added", "message A {}", "message A {} message B {}", "BACKWARD", []),
    ("messages reordered", "message A {} message B {}", "message B {} message A {}", "BACKWARD", []),
    ("string singular -> repeated", "message M { string a = 1; }", "message M { repeated string a = 1; }", "BACKWARD", []),
    ("optional int32 -> repeated", "message M { optional int32 a = 1; }", "message M { repeated int32 a = 1; }", "BACKWARD", ["FIELD_NUMERIC_LABEL_CHANGED"]),
    (
        "unlabelled proto3 int32 -> repeated (Confluent compares written labels)",
        "message M { int32 a = 1; }",
        "message M { repeated int32 a = 1; }",
        "BACKWARD",
        [],
    ),
    ("one field into a new oneof", "message M { int32 a = 1; string b = 2; }", "message M { oneof o { int32 a = 1; } string b = 2; }", "BACKWARD", []),
    (
        "two fields into a new oneof",
        "message M { int32 a = 1; string b = 2; }",
        "message M { oneof o { int32 a = 1; string b = 2; } }",
        "BACKWARD",
        ["MULTIPLE_FIELDS_MOVED_TO_ONEOF"],
    ),
    (
        "field into an existing oneof",
        "message M { int32 a = 1; oneof o { string b = 2; } }",
        "message M { oneof o { int32 a = 1; string b = 2; } }",
        "BACKWARD",
        ["FIELD_MOVED_TO_EXISTING_ONEOF"],
    ),
    ("field out of a oneof", "message M { oneof o { int32 a = 1; string b = 2; } }", "message M { int32 a = 1; oneof o { string b = 2; } }", "BACKWARD", []),
    (
        "oneof field removed",
        "message M { oneof o { int32 a = 1; string b = 2; } }",
        "message M { oneof o { string b = 2; } }",
        "BACKWARD",
        ["ONEOF_FIELD_REMOVED"],
    ),
    ("oneof field added", "message M { oneof o { string b = 2; } }", "message M { oneof o { int32 a = 1; string b = 2; } }", "BACKWARD", []),
    (
        "field moved to another oneof that had fields",
        "message M { oneof a { int32 x = 1; } oneof b { string y = 2; } }",
        "message M { oneof b { int32 x = 1; string y = 2; } }",
        "BACKWARD",
        ["FIELD_MOVED_TO_EXISTING_ONEOF"],
    ),
    ("whole oneof deleted", "message M { string k = 3; oneof a { int32 x = 1; string y = 2; } }", "message M { string k = 3; }", "BACKWARD", []),
    ("proto3 optional is not a oneof", "message M { int32 a = 1; }", "message M { optional int32 a = 1; }", "BACKWARD", []),
    ("enum value added and removed", "enum E { A = 0; B = 1; }", "enum E { A = 0; C = 2; }", "BACKWARD", []),
    ("enum removed", "enum E { A = 0; } message M {}", "message M {}", "BACKWARD", []),
    (
        "nested message field type changed",
        "message M { message N { int32 a = 1; } N n = 1; }",
        "message M { message N { string a = 1; } N n = 1; }",
        "BACKWARD",
        [
            "FIELD_SCALAR_KIND_CHANGED",
            "FIELD_NAMED_TYPE_CHANGED",
        ],
    ),
    (
        "field now names another message",
        "message A { int32 x = 1; } message B { int32 x = 1; } message M { A f = 1; }",
        "message A { int32 x = 1; } message B { int32 x = 1; } message M { B f = 1; }",
        "BACKWARD",
        ["FIELD_NAMED_TYPE_CHANGED"],
    ),
    (
        "map value type changed",
        "message M { map<string, int32> m = 1; }",
        "message M { map<string, string> m = 1; }",
        "BACKWARD",
        ["FIELD_SCALAR_KIND_CHANGED"],
    ),
    ("map -> message", "message M { map<string, int32> m = 1; }", "message E { string key = 1; } message M { E m = 1; }", "BACKWARD", ["FIELD_KIND_CHANGED"]),
    (
        "recursive message compares once",
        "message T { int32 v = 1; repeated T children = 2; }",
        "message T { int64 v = 1; repeated T children = 2; }",
        "BACKWARD",
        [],
    ),
]


@pytest.mark.parametrize(("old", "new", "direction", "expected"), [row[1:] for row in COMPATIBILITY], ids=[row[0] for row in COMPATIBILITY])
def test_compatibility_follows_confluents_rules(old: str, new: str, direction: str, expected: list[str]) -> None:
    assert codes(schema(old), schema(new), direction) == expected


def test_package_change_is_incompatible_both_ways() -> None:
    old, new = schema(PERSON, package="acme"), schema(PERSON, package="other")
    assert codes(old, new, "BACKWARD") == ["PACKAGE_CHANGED"]
    assert codes(old, new, "FORWARD") == ["PACKAGE_CHANGED"]


def test_required_field_added_and_removed_in_proto2() -> None:
    old = schema("message M { optional string a = 1; }", syntax="proto2")
    new = schema("message M { optional string a = 1; required int32 b = 2; }", syntax="proto2")
    assert codes(old, new, "BACKWARD") == ["REQUIRED_FIELD_ADDED"]
    assert codes(old, new, "FORWARD") == ["REQUIRED_FIELD_REMOVED"]


def test_syntax_change_alone_is_not_a_difference_as_in_confluent() -> None:
    proto2 = schema("message Person { optional string name = 1; optional int32 age = 2; }", syntax="proto2")
    assert codes(proto2, schema(PERSON), "BACKWARD") == []


def test_reason_names_the_message_field_and_the_rule() -> None:
    old, new = protobuf.parse(schema(PERSON), {}), protobuf.parse(schema("message Person { string name = 1; string age = 2; }"), {})
    assert protobuf.incompatibilities(new, old) == ["FIELD_SCALAR_KIND_CHANGED at Person.age (field 2): type int32 -> string, not wire-compatible"]


def test_imported_message_is_compared_through_the_field_that_uses_it() -> None:
    main = schema('import "common/money.proto";\nmessage Order { common.Money total = 1; }')
    old_money = schema("message Money { int64 cents = 1; }", package="common")
    new_money = schema("message Money { string cents = 1; }", package="common")
    before = protobuf.parse(main, {"common/money.proto": old_money})
    after = protobuf.parse(main, {"common/money.proto": new_money})
    assert [difference.code for difference in protobuf.differences(after, before)] == ["FIELD_SCALAR_KIND_CHANGED", "FIELD_NAMED_TYPE_CHANGED"]


def test_canonical_ignores_comments_and_whitespace() -> None:
    spaced = schema("// people\nmessage   Person {\n  string name = 1;  // the name\n  int32 age = 2;\n}\n")
    assert protobuf.parse(spaced, {}).canonical == protobuf.parse(schema(PERSON), {}).canonical
    assert protobuf.parse(schema(PERSON), {}).canonical != protobuf.parse(schema(PERSON, package="other"), {}).canonical


def test_base64_descriptor_as_confluent_kafka_registers_it_parses_to_the_same_schema() -> None:
    text = schema('import "google/protobuf/timestamp.proto";\nmessage Event { google.protobuf.Timestamp at = 1; }')
    parsed = protobuf.parse(text, {})
    from_descriptor = protobuf.parse(parsed.serialized(), {})
    assert from_descriptor.canonical == parsed.canonical
    assert base64.b64decode(parsed.serialized()) == parsed.main.SerializeToString()


def test_well_known_and_google_type_imports_need_no_reference() -> None:
    text = schema(
        'import "google/type/date.proto";\nimport "google/protobuf/timestamp.proto";\nmessage E { google.type.Date d = 1; google.protobuf.Timestamp t = 2; }'
    )
    parsed = protobuf.parse(text, {})
    assert sorted(parsed.files) == [MAIN_FILE, "google/protobuf/timestamp.proto", "google/type/date.proto"]
    assert protobuf.parse(parsed.serialized(), {}).canonical == parsed.canonical


def test_base64_descriptor_imports_a_reference_given_as_text() -> None:
    other = schema("message Money { int64 cents = 1; }", package="common")
    parsed = protobuf.parse(schema('import "money.proto";\nmessage Order { common.Money total = 1; }'), {"money.proto": other})
    assert protobuf.parse(parsed.serialized(), {"money.proto": other}).canonical == parsed.canonical


BAD = [
    ("unparsable", "this is not protobuf", {}, "Expected top-level statement"),
    ("unknown type", schema("message M { strin a = 1; }"), {}, '"strin" is not defined'),
    ("duplicate field number", schema("message M { int32 a = 1; int32 b = 1; }"), {}, "has already been used"),
    ("unresolved import", schema('import "missing.proto";\nmessage M {}'), {}, "'missing.proto' is not among the schema's references"),
    (
        "import cycle",
        schema('import "a.proto";\nmessage M {}'),
        {"a.proto": schema('import "b.proto";'), "b.proto": schema('import "a.proto";')},
        "recursively imports itself",
    ),
    ("reference escaping the directory", schema("message M {}"), {"../etc/passwd": "x"}, "not a relative import path"),
    ("corrupt base64 descriptor", "QUJDRA==", {}, "neither .proto text nor a base64 FileDescriptorProto"),
]


@pytest.mark.parametrize(("text", "references", "reason"), [row[1:] for row in BAD], ids=[row[0] for row in BAD])
def test_bad_input_is_an_invalid_schema_with_one_line_reason(text: str, references: dict[str, str], reason: str) -> None:
    with pytest.raises(InvalidSchema) as raised:
        protobuf.parse(text, references)
    assert reason in str(raised.value)
    assert "\n" not in str(raised.value)


def test_descriptor_whose_import_is_not_given_is_invalid() -> None:
    parsed = protobuf.parse(
        schema('import "money.proto";\nmessage Order { common.Money total = 1; }'), {"money.proto": schema("message Money {}", package="common")}
    )
    with pytest.raises(InvalidSchema, match="'money.proto' is not among the schema's references"):
        protobuf.parse(parsed.serialized(), {})


def test_oversized_schema_is_refused_before_compiling() -> None:
    with pytest.raises(InvalidSchema, match="more than"):
        protobuf.parse("x" * (MAX_SCHEMA_CHARS + 1), {})


def test_a_comparison_past_its_bound_is_reported_incompatible(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(protobuf_compat, "MAX_COMPARISONS", 3)
    body = " ".join(f"message M{i} {{ M{i + 1} next = 1; }}" for i in range(6)) + " message M6 {}"
    assert codes(schema(body), schema(body), "BACKWARD") == ["COMPARISON_LIMIT_EXCEEDED"]

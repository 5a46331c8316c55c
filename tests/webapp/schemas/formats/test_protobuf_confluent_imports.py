"""Protobuf schemas import Confluent's own files (confluent/meta.proto, confluent/type/decimal.proto)
without a reference, as Confluent's Schema Registry has them built in: confluent-kafka's examples'
user.proto imports confluent/meta.proto and its serializer never registers it."""

from __future__ import annotations

from webapp.schemas.formats import protobuf
from webapp.schemas.formats.protobuf_parse import MAIN_FILE

USER = """syntax = "proto3";
package example;
import "confluent/meta.proto";
import "confluent/type/decimal.proto";
message User {
  string name = 1 [(confluent.field_meta).doc = "the user's name", (confluent.field_meta).rules = {name: "not-empty", expr: "size(name) > 0"}];
  confluent.type.Decimal balance = 2;
}
"""


def test_confluent_meta_and_decimal_imports_need_no_reference_as_text_and_as_a_descriptor() -> None:
    parsed = protobuf.parse(USER, {})
    assert {MAIN_FILE, "confluent/meta.proto", "confluent/type/decimal.proto"} <= set(parsed.files)
    assert protobuf.parse(parsed.serialized(), {}).canonical == parsed.canonical  # as confluent-kafka's serializer registers it

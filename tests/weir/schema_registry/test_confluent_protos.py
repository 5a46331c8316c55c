"""weir.schema_registry.confluent: Confluent's meta.proto and decimal.proto under their confluent/...
names (confluent-kafka's modules when importable, else Weir's generated ones, in sync with the
.proto files), so that an application's .proto importing "confluent/meta.proto" (confluent-kafka's
examples' user.proto) serializes as with confluent-kafka: the import is well-known, never
registered as a reference."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from grpc_protos.generate import SDK_PROTO_ROOT, generate_sdk_protos, sdk_proto_files
from weir.schema_registry.confluent import meta_pb2
from weir.schema_registry.confluent.type import decimal_pb2
from weir.schema_registry.confluent.types import decimal_pb2 as former_decimal_pb2
from weir.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
from weir.schema_registry.schema import RegisteredSchema, Schema
from weir.serialization import MessageField, SerializationContext


def test_the_generated_modules_match_the_proto_files_and_confluent_kafkas_descriptors(tmp_path: Path) -> None:
    generate_sdk_protos(tmp_path)
    for proto in sdk_proto_files():
        for suffix in ("_pb2.py", "_pb2.pyi"):
            relative = proto.relative_to(SDK_PROTO_ROOT).with_name(proto.stem + suffix)
            assert (tmp_path / relative).read_bytes() == (SDK_PROTO_ROOT / relative).read_bytes(), f"{relative} is stale: run `make protos`"
    # Byte for byte confluent-kafka's (the one installed here), so either package's registration serves both.
    from confluent_kafka.schema_registry.confluent import meta_pb2 as confluent_meta
    from confluent_kafka.schema_registry.confluent.type import decimal_pb2 as confluent_decimal

    from weir.schema_registry.protos.confluent import meta_pb2 as weir_meta
    from weir.schema_registry.protos.confluent.type import decimal_pb2 as weir_decimal

    assert weir_meta.DESCRIPTOR.serialized_pb == confluent_meta.DESCRIPTOR.serialized_pb
    assert weir_decimal.DESCRIPTOR.serialized_pb == confluent_decimal.DESCRIPTOR.serialized_pb


def test_confluent_kafkas_modules_are_used_when_importable_and_weirs_own_otherwise() -> None:
    from confluent_kafka.schema_registry.confluent import meta_pb2 as confluent_kafkas

    assert meta_pb2.DESCRIPTOR is confluent_kafkas.DESCRIPTOR, "one confluent/meta.proto per process"
    assert decimal_pb2.Decimal.DESCRIPTOR.full_name == former_decimal_pb2.Decimal.DESCRIPTOR.full_name == "confluent.type.Decimal"
    without_confluent_kafka = (
        "import sys; sys.modules['confluent_kafka'] = None\n"
        "from weir.schema_registry.confluent import meta_pb2\n"
        "from weir.schema_registry.confluent.types import decimal_pb2\n"
        "print('weir.schema_registry.protos.confluent.meta_pb2' in sys.modules, meta_pb2.DESCRIPTOR.name, meta_pb2.field_meta.number, decimal_pb2.Decimal.DESCRIPTOR.file.name)"
    )
    printed = subprocess.run([sys.executable, "-c", without_confluent_kafka], capture_output=True, text=True, timeout=60, check=True).stdout.split()
    assert printed == ["True", "confluent/meta.proto", "1088", "confluent/type/decimal.proto"]


class FakeRegistry:
    """Registers every schema with id 5 and records under which subjects."""

    def __init__(self) -> None:
        self.registered: list[tuple[str, Schema]] = []

    def register_schema_full_response(self, subject: str, schema: Schema, normalize_schemas: bool = False) -> RegisteredSchema:
        self.registered.append((subject, schema))
        return RegisteredSchema(subject, 1, 5, None, schema)

    def register_schema(self, subject: str, schema: Schema, normalize_schemas: bool = False) -> int:
        return 5

    def lookup_schema(self, subject: str, schema: Schema, normalize_schemas: bool = False, deleted: bool = False) -> RegisteredSchema:
        return RegisteredSchema(subject, 1, 5, None, schema)


def user_with_field_meta() -> Any:
    """A message whose file imports confluent/meta.proto and uses its field option, as the examples' user.proto."""
    file = descriptor_pb2.FileDescriptorProto(name="weir_tests/user_meta.proto", package="weir_tests", syntax="proto3", dependency=["confluent/meta.proto"])
    message = file.message_type.add(name="User")
    field = message.field.add(
        name="name", number=1, type=descriptor_pb2.FieldDescriptorProto.TYPE_STRING, label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL
    )
    extensions: Any = field.options.Extensions  # typed by the extension's generated stub, which may be either package's
    extensions[meta_pb2.field_meta].doc = "the user's name"
    pool = descriptor_pool.Default()  # where generated modules live: meta_pb2 registered confluent/meta.proto there
    try:
        pool.FindFileByName(file.name)
    except KeyError:
        pool.Add(file)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("weir_tests.User"))


def test_a_message_importing_confluent_meta_serializes_without_registering_it() -> None:
    user_class = user_with_field_meta()
    registry: Any = FakeRegistry()
    serializer = ProtobufSerializer(user_class, registry, {"use.deprecated.format": False})
    payload = serializer(user_class(name="alice"), SerializationContext("users", MessageField.VALUE))
    assert [(subject, schema.references) for subject, schema in registry.registered] == [("users-value", [])]
    assert ProtobufDeserializer(user_class, {"use.deprecated.format": False})(payload).name == "alice"

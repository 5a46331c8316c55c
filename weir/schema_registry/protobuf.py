"""confluent-kafka's ``schema_registry.protobuf``: ``ProtobufSerializer`` and ``ProtobufDeserializer``.

The serializer registers the message's .proto file (its serialized ``FileDescriptorProto`` in
base64, as confluent-kafka sends it) under the subject its strategy names, after registering
each file it imports under that file's name (``reference.subject.name.strategy``), except the
well-known ones (google/protobuf/, google/type/, confluent/) unless ``skip.known.types`` is False.
A record is the framing, the message indexes of the message within its file, and the message's
binary encoding (:mod:`.wire`). The record name the strategies see is the message's full name.
"""

from __future__ import annotations

import base64
from typing import Any

from google.protobuf.descriptor import Descriptor, FileDescriptor
from google.protobuf.message import DecodeError, Message

from weir.schema_registry.client import SchemaRegistryClient
from weir.schema_registry.schema import Schema, SchemaReference
from weir.schema_registry.serde import DESERIALIZER_DEFAULTS, SchemaDeserializer, SchemaSerializer, take_conf
from weir.schema_registry.strategies import reference_subject_name_strategy
from weir.schema_registry.wire import decode_message_indexes, frame, unframe
from weir.serialization import SerializationContext, SerializationError

__all__ = ["ProtobufDeserializer", "ProtobufSerializer", "message_indexes"]

BUILTIN_PREFIXES = ("confluent/", "google/protobuf/", "google/type/")
SERIALIZER_EXTRA = {"use.deprecated.format": False, "skip.known.types": True, "reference.subject.name.strategy": reference_subject_name_strategy}


def _refuse_deprecated_format(conf: dict[str, Any]) -> None:
    if conf["use.deprecated.format"]:
        raise ValueError("use.deprecated.format is no longer supported (confluent-kafka dropped it too): message indexes are always zigzag varints")


def message_indexes(descriptor: Descriptor) -> list[int]:
    """Where ``descriptor`` is in its file: the index of each message along the nesting path."""
    path: list[int] = []
    current = descriptor
    while current.containing_type is not None:
        parent = current.containing_type
        path.append(next(index for index, nested in enumerate(parent.nested_types) if nested is current or nested.full_name == current.full_name))
        current = parent
    top = [message.full_name for message in current.file.message_types_by_name.values()]
    path.append(top.index(current.full_name))
    return path[::-1]


def schema_text(file: FileDescriptor) -> str:
    return base64.standard_b64encode(file.serialized_pb).decode("ascii")


class ProtobufSerializer(SchemaSerializer):
    """``ProtobufSerializer(msg_type, schema_registry_client, conf=None)``."""

    def __init__(self, msg_type: type[Message], schema_registry_client: SchemaRegistryClient, conf: dict[str, Any] | None = None) -> None:
        merged = self._configure(schema_registry_client, conf, SERIALIZER_EXTRA)
        _refuse_deprecated_format(merged)
        self._skip_known_types: bool = merged["skip.known.types"]
        self._reference_subject = merged["reference.subject.name.strategy"]
        descriptor = getattr(msg_type, "DESCRIPTOR", None)
        if not isinstance(descriptor, Descriptor):
            raise ValueError(f"msg_type must be a generated Protobuf message class, not {msg_type!r}")
        self._msg_class = msg_type
        self._indexes = message_indexes(descriptor)
        self._schema = Schema(schema_text(descriptor.file), "PROTOBUF")
        self._references: list[SchemaReference] | None = None

    def _resolve_dependencies(self, ctx: SerializationContext | None, file: Any) -> list[SchemaReference]:
        """Each imported file registered (auto.register.schemas) or looked up under its subject, depth first."""
        references = []
        for dependency in file.dependencies:
            if self._skip_known_types and dependency.name.startswith(BUILTIN_PREFIXES):
                continue
            schema = Schema(schema_text(dependency), "PROTOBUF", self._resolve_dependencies(ctx, dependency))
            subject = self._reference_subject(ctx, SchemaReference(dependency.name, None, None))
            if self._auto_register:
                self._registry.register_schema(subject, schema, normalize_schemas=self._normalize)
            version = self._registry.lookup_schema(subject, schema, normalize_schemas=self._normalize).version
            references.append(SchemaReference(dependency.name, subject, version))
        return references

    def _registrable_schema(self, ctx: SerializationContext | None) -> Schema:
        """The message's file with its imports as references (registered first, once)."""
        if self._references is None:
            self._references = self._resolve_dependencies(ctx, self._msg_class.DESCRIPTOR.file)
            self._schema = Schema(self._schema.schema_str, "PROTOBUF", self._references)
        return self._schema

    def __call__(self, message: Any, ctx: SerializationContext | None = None) -> bytes | None:
        if message is None:
            return None
        if not isinstance(message, self._msg_class):
            raise ValueError(f"message must be of type {self._msg_class} not {type(message)}")
        schema_id, _ = self._writer(ctx, message.DESCRIPTOR.full_name, None, lambda schema: None, {})
        try:
            payload = message.SerializeToString()
        except Exception as error:  # EncodeError: required fields of proto2 left unset
            raise SerializationError(f"the {message.DESCRIPTOR.full_name} message cannot be encoded: {error}") from error
        return frame(schema_id, payload, self._indexes)


class ProtobufDeserializer(SchemaDeserializer):
    """``ProtobufDeserializer(message_type, conf=None, schema_registry_client=None)``: the record is read
    as ``message_type``; given a client, the record's schema id is checked to be a Protobuf schema
    of this registry first. ``use.latest.version`` is accepted as confluent-kafka accepts it, and
    changes nothing here either: ``message_type`` is what the record is read as."""

    def __init__(self, message_type: type[Message], conf: dict[str, Any] | None = None, schema_registry_client: SchemaRegistryClient | None = None) -> None:
        _refuse_deprecated_format(take_conf(conf, {**DESERIALIZER_DEFAULTS, "use.deprecated.format": False}))
        if not isinstance(getattr(message_type, "DESCRIPTOR", None), Descriptor):
            raise ValueError(f"message_type must be a generated Protobuf message class, not {message_type!r}")
        self._msg_class = message_type
        self._registry = schema_registry_client
        self._checked_ids: set[int] = set()

    def __call__(self, value: bytes | None, ctx: SerializationContext | None = None) -> Any:
        if value is None:
            return None
        schema_id, rest = unframe(value)
        _indexes, payload = decode_message_indexes(rest)
        if self._registry is not None and schema_id not in self._checked_ids:
            schema = self._writer_schema(schema_id, ctx)
            if schema.schema_type != "PROTOBUF":
                raise SerializationError(f"schema id {schema_id} is a {schema.schema_type} schema, not a Protobuf one")
            self._checked_ids.add(schema_id)
        try:
            return self._msg_class.FromString(bytes(payload))
        except DecodeError as error:
            raise SerializationError(f"the record with schema id {schema_id} is not a {self._msg_class.DESCRIPTOR.full_name} message: {error}") from error

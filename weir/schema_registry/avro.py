"""confluent-kafka's ``schema_registry.avro``: ``AvroSerializer`` and ``AvroDeserializer``.

Records are Avro's binary encoding (fastavro, the ``weir[avro]`` extra) in Confluent's framing
(:mod:`.wire`). The serializer registers (or looks up) its schema under the subject its strategy
names; the record name the strategies see is the schema's full name (``namespace.Name``).
The deserializer reads with the writer's schema fetched by id and, when given its own
``schema_str``, resolves the record to that reader schema by Avro's rules. Schemas with
references are resolved through the registry. ``to_dict(obj, ctx)`` and ``from_dict(dict, ctx)``
convert between application objects and the dicts fastavro reads and writes.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from typing import Any

from weir.schema_registry.client import SchemaRegistryClient
from weir.schema_registry.optional import require
from weir.schema_registry.schema import Schema
from weir.schema_registry.serde import DESERIALIZER_DEFAULTS, SchemaDeserializer, SchemaSerializer, take_conf
from weir.schema_registry.wire import frame, unframe
from weir.serialization import SerializationContext, SerializationError

__all__ = ["AvroDeserializer", "AvroSerializer"]

ToDict = Callable[[Any, SerializationContext], Any]
FromDict = Callable[[Any, SerializationContext], Any]


def _loads(text: str | None, what: str) -> Any:
    try:
        return json.loads(text or "")
    except ValueError as error:
        # A bare name such as "string" is a valid Avro schema that is not JSON.
        if text and text.strip().isidentifier():
            return text.strip()
        raise ValueError(f"{what} is not a JSON Avro schema: {error}") from error


def parse_avro(registry: SchemaRegistryClient | None, schema: Schema) -> Any:
    """The fastavro-parsed ``schema``, its references' named types resolved through ``registry``."""
    fastavro = require("fastavro")
    named: dict[str, Any] = {}
    _add_references(fastavro, registry, schema, named, set())
    try:
        return fastavro.parse_schema(_loads(schema.schema_str, "the schema"), named_schemas=named)
    except Exception as error:  # fastavro raises SchemaParseException, UnknownType, KeyError...
        raise SerializationError(f"the Avro schema cannot be parsed: {error}") from error


def _add_references(fastavro: Any, registry: SchemaRegistryClient | None, schema: Schema, named: dict[str, Any], seen: set[tuple[str, int]]) -> None:
    for reference in schema.references or []:
        if registry is None:
            raise ValueError("a schema_registry_client is needed to resolve the schema's references")
        if reference.subject is None or reference.version is None:
            raise ValueError(f"reference {reference.name!r} names no subject and version")
        key = (reference.subject, reference.version)
        if key in seen:
            continue
        seen.add(key)
        referenced = registry.get_version(reference.subject, reference.version).schema
        _add_references(fastavro, registry, referenced, named, seen)
        fastavro.parse_schema(_loads(referenced.schema_str, f"reference {reference.name!r}"), named_schemas=named)


def _record_name(parsed: Any) -> str | None:
    if isinstance(parsed, dict):
        name = parsed.get("name", parsed.get("type"))
        return str(name) if name is not None else None
    return str(parsed) if isinstance(parsed, str) else None


class AvroSerializer(SchemaSerializer):
    """``AvroSerializer(schema_registry_client, schema_str, to_dict=None, conf=None)``."""

    def __init__(
        self, schema_registry_client: SchemaRegistryClient, schema_str: str | Schema, to_dict: ToDict | None = None, conf: dict[str, Any] | None = None
    ) -> None:
        self._configure(schema_registry_client, conf)
        if to_dict is not None and not callable(to_dict):
            raise ValueError("to_dict must be callable with the signature to_dict(object, SerializationContext)->dict")
        self._to_dict = to_dict
        if isinstance(schema_str, Schema):
            self._schema = schema_str
        elif isinstance(schema_str, str):
            self._schema = Schema(schema_str, "AVRO")
        else:
            raise TypeError(f"schema_str must be a str or a Schema, not {type(schema_str).__name__}")
        self._parsed = parse_avro(schema_registry_client, self._schema)
        self._schema_name = _record_name(self._parsed)
        self._parsed_by_id: dict[int, Any] = {}

    def __call__(self, obj: Any, ctx: SerializationContext | None = None) -> bytes | None:
        if obj is None:
            return None
        schema_id, parsed = self._writer(ctx, self._schema_name, self._parsed, lambda schema: parse_avro(self._registry, schema), self._parsed_by_id)
        if self._to_dict is not None and ctx is None:
            raise TypeError("SerializationContext cannot be None")
        value = self._to_dict(obj, ctx) if self._to_dict is not None and ctx is not None else obj
        out = io.BytesIO()
        try:
            require("fastavro").schemaless_writer(out, parsed, value)
        except Exception as error:  # fastavro raises ValueError, TypeError, AttributeError, ValidationError
            raise SerializationError(f"the value does not match Avro schema {self._schema_name}: {error}") from error
        return frame(schema_id, out.getvalue())


class AvroDeserializer(SchemaDeserializer):
    """``AvroDeserializer(schema_registry_client, schema_str=None, from_dict=None, return_record_name=False, conf=None)``."""

    def __init__(
        self,
        schema_registry_client: SchemaRegistryClient,
        schema_str: str | Schema | None = None,
        from_dict: FromDict | None = None,
        return_record_name: bool = False,
        conf: dict[str, Any] | None = None,
    ) -> None:
        self._registry = schema_registry_client
        self._configure_reading(take_conf(conf, DESERIALIZER_DEFAULTS))
        if from_dict is not None and not callable(from_dict):
            raise ValueError("from_dict must be callable with the signature from_dict(SerializationContext, dict) -> object")
        if not isinstance(return_record_name, bool):
            raise ValueError("return_record_name must be a boolean value")
        self._from_dict = from_dict
        self._return_record_name = return_record_name
        reader = Schema(schema_str, "AVRO") if isinstance(schema_str, str) else schema_str
        self._reader = parse_avro(schema_registry_client, reader) if reader is not None else None
        self._writers: dict[int, Any] = {}
        self._latest_readers: dict[int, Any] = {}

    def __call__(self, value: bytes | None, ctx: SerializationContext | None = None) -> Any:
        if value is None:
            return None
        schema_id, payload = unframe(value)
        writer = self._writers.get(schema_id)
        if writer is None:
            schema = self._writer_schema(schema_id, ctx)
            if schema.schema_type not in (None, "AVRO"):
                raise SerializationError(f"schema id {schema_id} is a {schema.schema_type} schema, not an Avro one")
            writer = self._writers.setdefault(schema_id, parse_avro(self._registry, schema))
        reader = self._latest_reader(ctx, lambda schema: parse_avro(self._registry, schema), self._latest_readers) or self._reader
        try:
            record = require("fastavro").schemaless_reader(io.BytesIO(payload), writer, reader, return_record_name=self._return_record_name)
        except Exception as error:  # fastavro raises EOFError, SchemaResolutionError, ValueError...
            raise SerializationError(f"the record cannot be read as Avro with schema id {schema_id}: {error!r}") from error
        if self._from_dict is not None:
            if ctx is None:
                raise TypeError("SerializationContext cannot be None")
            return self._from_dict(record, ctx)
        return record

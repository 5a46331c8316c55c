"""confluent-kafka's ``schema_registry.json_schema``: ``JSONSerializer`` and ``JSONDeserializer``.

Records are compact UTF-8 JSON (``separators=(",", ":")``, not ASCII-escaped, as confluent-kafka
writes them) in Confluent's framing (:mod:`.wire`), validated against the schema with jsonschema
(the ``weir[json]`` extra; Draft 7 unless the schema's ``$schema`` says otherwise) unless
``validate`` is False. The record name the subject strategies see is the schema's ``title``.
Referenced schemas are fetched from the registry and found by their reference name (``$ref``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from weir.schema_registry.client import SchemaRegistryClient
from weir.schema_registry.optional import require
from weir.schema_registry.schema import Schema
from weir.schema_registry.serde import DESERIALIZER_DEFAULTS, SchemaDeserializer, SchemaSerializer, take_conf
from weir.schema_registry.wire import frame, unframe
from weir.serialization import SerializationContext, SerializationError

__all__ = ["JSONDeserializer", "JSONSerializer"]

VALIDATE_DEFAULT = {"validate": True}


def _dumps(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def _as_schema(schema_str: str | Schema | None) -> Schema | None:
    if schema_str is None or isinstance(schema_str, Schema):
        return schema_str
    if isinstance(schema_str, str):
        return Schema(schema_str, "JSON")
    raise TypeError(f"schema_str must be a str or a Schema, not {type(schema_str).__name__}")


def _parse(text: str | None, what: str) -> Any:
    try:
        return json.loads(text or "")
    except ValueError as error:
        raise ValueError(f"{what} is not JSON: {error}") from error


def build_validator(registry: SchemaRegistryClient | None, schema: Schema) -> tuple[Any, Any]:
    """The parsed schema and a jsonschema validator for it, its references resolvable."""
    jsonschema = require("jsonschema")
    referencing = require("referencing")
    drafts = require("referencing.jsonschema")
    document = _parse(schema.schema_str, "the JSON schema")
    resources: list[tuple[str, Any]] = []
    _collect_references(registry, schema, resources, set())
    store = referencing.Registry().with_resources(
        (name, referencing.Resource.from_contents(contents, default_specification=drafts.DRAFT7)) for name, contents in resources
    )
    validator_class = jsonschema.validators.validator_for(document, default=jsonschema.Draft7Validator)
    try:
        validator_class.check_schema(document)
    except jsonschema.SchemaError as error:
        raise ValueError(f"the JSON schema is not valid: {error.message}") from error
    return document, validator_class(document, registry=store)


def _collect_references(registry: SchemaRegistryClient | None, schema: Schema, resources: list[tuple[str, Any]], seen: set[tuple[str, int]]) -> None:
    for reference in schema.references or []:
        if registry is None:
            raise ValueError("a schema_registry_client is needed to resolve the schema's references")
        if reference.subject is None or reference.version is None or reference.name is None:
            raise ValueError(f"reference {reference.name!r} names no subject and version")
        if (reference.subject, reference.version) in seen:
            continue
        seen.add((reference.subject, reference.version))
        referenced = registry.get_version(reference.subject, reference.version).schema
        resources.append((reference.name, _parse(referenced.schema_str, f"reference {reference.name!r}")))
        _collect_references(registry, referenced, resources, seen)


def _validate(validator: Any, value: Any, schema_id: int | None) -> None:
    error = require("jsonschema").exceptions.best_match(validator.iter_errors(value))
    if error is not None:
        where = "/".join(str(part) for part in error.absolute_path) or "the root"
        raise SerializationError(f"the value does not match JSON schema{'' if schema_id is None else f' {schema_id}'} at {where}: {error.message}")


class JSONSerializer(SchemaSerializer):
    """``JSONSerializer(schema_str, schema_registry_client, to_dict=None, conf=None)``."""

    def __init__(
        self,
        schema_str: str | Schema,
        schema_registry_client: SchemaRegistryClient,
        to_dict: Callable[[Any, SerializationContext], Any] | None = None,
        conf: dict[str, Any] | None = None,
    ) -> None:
        merged = self._configure(schema_registry_client, conf, VALIDATE_DEFAULT)
        self._validate_values: bool = merged["validate"]
        if to_dict is not None and not callable(to_dict):
            raise ValueError("to_dict must be callable with the signature to_dict(object, SerializationContext)->dict")
        self._to_dict = to_dict
        schema = _as_schema(schema_str)
        if schema is None:
            raise TypeError("schema_str is required")
        self._schema = schema
        document, self._validator = build_validator(schema_registry_client, schema)
        title = document.get("title") if isinstance(document, dict) else None
        self._schema_name = str(title) if title is not None else None
        self._validators: dict[int, Any] = {}

    def __call__(self, obj: Any, ctx: SerializationContext | None = None) -> bytes | None:
        if obj is None:
            return None
        schema_id, validator = self._writer(
            ctx, self._schema_name, self._validator, lambda schema: build_validator(self._registry, schema)[1], self._validators
        )
        if self._to_dict is not None:
            if ctx is None:
                raise TypeError("SerializationContext cannot be None")
            value = self._to_dict(obj, ctx)
        else:
            value = obj
        if self._validate_values:
            _validate(validator, value, schema_id)
        try:
            return frame(schema_id, _dumps(value))
        except (TypeError, ValueError) as error:
            raise SerializationError(f"the value cannot be written as JSON: {error}") from error


class JSONDeserializer(SchemaDeserializer):
    """``JSONDeserializer(schema_str, from_dict=None, schema_registry_client=None, conf=None)``: with
    no ``schema_str``, the writer's schema (fetched by id) validates the record."""

    def __init__(
        self,
        schema_str: str | Schema | None,
        from_dict: Callable[[Any, SerializationContext], Any] | None = None,
        schema_registry_client: SchemaRegistryClient | None = None,
        conf: dict[str, Any] | None = None,
    ) -> None:
        merged = take_conf(conf, {**DESERIALIZER_DEFAULTS, **VALIDATE_DEFAULT})
        self._validate_values = merged["validate"]
        schema = _as_schema(schema_str)
        if schema is None and schema_registry_client is None:
            raise ValueError('schema_registry_client must be provided if "schema_str" is not provided')
        if from_dict is not None and not callable(from_dict):
            raise ValueError("from_dict must be callable with the signature from_dict(dict, SerializationContext) -> object")
        self._from_dict = from_dict
        self._registry = schema_registry_client
        self._configure_reading(merged)
        self._latest_readers: dict[int, Any] = {}
        self._reader = build_validator(schema_registry_client, schema)[1] if schema is not None else None
        self._writers: dict[int, Any] = {}

    def __call__(self, value: bytes | None, ctx: SerializationContext | None = None) -> Any:
        if value is None:
            return None
        schema_id, payload = unframe(value)
        validator = self._latest_reader(ctx, lambda schema: build_validator(self._registry, schema)[1], self._latest_readers) or self._reader
        if self._registry is not None:
            writer = self._writers.get(schema_id)
            if writer is None:
                schema = self._writer_schema(schema_id, ctx)
                if schema.schema_type != "JSON":
                    raise SerializationError(f"schema id {schema_id} is a {schema.schema_type} schema, not a JSON one")
                writer = self._writers.setdefault(schema_id, build_validator(self._registry, schema)[1])
            validator = validator or writer
        try:
            document = json.loads(bytes(payload))
        except ValueError as error:
            raise SerializationError(f"the record with schema id {schema_id} is not JSON: {error}") from error
        if self._validate_values and validator is not None:
            _validate(validator, document, schema_id)
        if self._from_dict is not None:
            if ctx is None:
                raise TypeError("SerializationContext cannot be None")
            return self._from_dict(document, ctx)
        return document

"""What the Avro, JSON Schema and Protobuf serializers share: their configuration, which subject
and schema id a record is written with, and how a reader finds the writer's schema.

Serializer configuration (confluent-kafka's keys and defaults):

- ``auto.register.schemas`` (True): register the serializer's schema under the subject the
  first time; otherwise look it up there (40401/40403 if it is not registered).
- ``normalize.schemas`` (False): ask the registry to normalize the schema when registering or
  looking it up.
- ``use.latest.version`` (False): write with the subject's latest schema, not the serializer's
  own (cannot be combined with ``auto.register.schemas``); ``use.schema.id``: with this id.
- ``subject.name.strategy`` (``topic_subject_name_strategy``): see :mod:`.strategies`.

Deserializers take ``use.latest.version`` (read Avro records as, and validate JSON ones against,
the latest schema of the strategy's subject) and ``subject.name.strategy``.

A subject's id is found once and kept (``known subjects``); a latest version is kept as long as
the client's cache keeps it. Registry errors while serializing propagate as
:class:`SchemaRegistryError` (as in confluent-kafka); while deserializing, an id that this
registry does not have (unknown, deleted, or another tenant's) is a :class:`SerializationError`
naming the id.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar

from weir.schema_registry.client import SchemaRegistryClient
from weir.schema_registry.error import SchemaRegistryError
from weir.schema_registry.schema import RegisteredSchema, Schema
from weir.schema_registry.strategies import topic_subject_name_strategy
from weir.serialization import Deserializer, SerializationContext, SerializationError, Serializer

SERIALIZER_DEFAULTS: dict[str, Any] = {
    "auto.register.schemas": True,
    "normalize.schemas": False,
    "use.latest.version": False,
    "use.schema.id": None,
    "subject.name.strategy": topic_subject_name_strategy,
}
DESERIALIZER_DEFAULTS: dict[str, Any] = {
    "use.latest.version": False,
    "subject.name.strategy": topic_subject_name_strategy,
}
SCHEMA_NOT_FOUND = 40403
Parsed = TypeVar("Parsed")


def take_conf(conf: dict[str, Any] | None, defaults: dict[str, Any]) -> dict[str, Any]:
    """``defaults`` overridden by ``conf``; ValueError naming keys that are not among them, or a
    value of the wrong kind."""
    if conf is not None and not isinstance(conf, dict):
        raise TypeError(f"conf must be a dict, not {type(conf).__name__}")
    merged = dict(defaults)
    merged.update(conf or {})
    unknown = sorted(set(merged) - set(defaults))
    if unknown:
        raise ValueError(f"Unrecognized properties: {', '.join(unknown)}")
    for key, default in defaults.items():
        value = merged[key]
        if isinstance(default, bool) and not isinstance(value, bool):
            raise ValueError(f"{key} must be a boolean value")
        if key.endswith("strategy") and not callable(value):
            raise ValueError(f"{key} must be callable")
    if merged.get("use.schema.id") is not None and (isinstance(merged["use.schema.id"], bool) or not isinstance(merged["use.schema.id"], int)):
        raise ValueError("use.schema.id must be an int value")
    if merged.get("use.latest.version") and merged.get("auto.register.schemas"):
        raise ValueError("cannot enable both use.latest.version and auto.register.schemas")
    return merged


class SchemaSerializer(Serializer):
    """Base of the three serializers: finds the schema id to write a record with.

    ``_schema_id`` is the id the last record was written with (None before the first), the
    attribute confluent-kafka's serializers keep and its own tests read.
    """

    _schema: Schema
    _schema_id: int | None = None

    def _configure(self, registry: SchemaRegistryClient, conf: dict[str, Any] | None, extra: dict[str, Any] | None = None) -> dict[str, Any]:
        if not isinstance(registry, SchemaRegistryClient) and not hasattr(registry, "register_schema"):
            raise TypeError(f"schema_registry_client must be a SchemaRegistryClient, not {type(registry).__name__}")
        merged = take_conf(conf, {**SERIALIZER_DEFAULTS, **(extra or {})})
        self._registry = registry
        self._auto_register: bool = merged["auto.register.schemas"]
        self._normalize: bool = merged["normalize.schemas"]
        self._use_latest: bool = merged["use.latest.version"]
        self._use_schema_id: int | None = merged["use.schema.id"]
        self._subject_name_func = merged["subject.name.strategy"]
        self._known_ids: dict[str, int] = {}
        self._lock = threading.Lock()
        return merged

    def _subject(self, ctx: SerializationContext | None, record_name: str | None) -> str | None:
        return self._subject_name_func(ctx, record_name)  # type: ignore[no-any-return]

    def _latest(self, subject: str | None) -> RegisteredSchema | None:
        """The registered schema to write with when ``use.schema.id`` or ``use.latest.version`` says so."""
        if subject is None:
            return None
        if self._use_schema_id is not None:
            schema = self._registry.get_schema(self._use_schema_id)
            return self._registry.lookup_schema(subject, schema, normalize_schemas=False, deleted=True)
        if self._use_latest:
            return self._registry.get_latest_version(subject)
        return None

    def _registrable_schema(self, ctx: SerializationContext | None) -> Schema:
        """The schema registered (or looked up) for a subject: the serializer's own."""
        return self._schema

    def _writer(
        self, ctx: SerializationContext | None, record_name: str | None, own: Parsed, parse: Callable[[Schema], Parsed], by_id: dict[int, Parsed]
    ) -> tuple[int, Parsed]:
        """The schema id to write a record with and the parsed schema to write it by: the
        subject's latest (``use.latest.version``, ``use.schema.id``; parsed once per id) or the
        serializer's own (``own``), registered or looked up under the subject."""
        subject = self._subject(ctx, record_name)
        latest = self._latest(subject)
        if latest is not None and latest.schema_id is not None:
            parsed = by_id.get(latest.schema_id)
            if parsed is None:
                parsed = by_id.setdefault(latest.schema_id, parse(latest.schema))
            self._schema_id = latest.schema_id
            return latest.schema_id, parsed
        if subject is None:
            raise SerializationError("the subject name strategy named no subject for this record")
        self._schema_id = self._subject_schema_id(subject, self._registrable_schema(ctx))
        return self._schema_id, own

    def _subject_schema_id(self, subject: str, schema: Schema) -> int:
        """The id of ``schema`` under ``subject``: registered (auto.register.schemas) or looked up, once."""
        known = self._known_ids.get(subject)
        if known is not None:
            return known
        with self._lock:
            if subject not in self._known_ids:
                if self._auto_register:
                    found = self._registry.register_schema_full_response(subject, schema, normalize_schemas=self._normalize).schema_id
                else:
                    found = self._registry.lookup_schema(subject, schema, normalize_schemas=self._normalize).schema_id
                assert found is not None
                self._known_ids[subject] = found
            return self._known_ids[subject]


class SchemaDeserializer(Deserializer):
    """Base of the three deserializers: fetches the writer's schema by the record's id."""

    _registry: SchemaRegistryClient | None
    _use_latest = False

    def _configure_reading(self, merged: dict[str, Any]) -> None:
        """``use.latest.version``: read records as the subject's latest schema (the strategy's subject)."""
        self._use_latest = merged["use.latest.version"]
        self._subject_name_func = merged["subject.name.strategy"]
        if self._use_latest and self._registry is None:
            raise ValueError("use.latest.version needs a schema_registry_client")

    def _latest_reader(self, ctx: SerializationContext | None, parse: Callable[[Schema], Parsed], by_id: dict[int, Parsed]) -> Parsed | None:
        """With ``use.latest.version``, the subject's latest schema parsed (once per id); else None."""
        if not self._use_latest or self._registry is None:
            return None
        subject = self._subject_name_func(ctx, None)
        if subject is None:
            return None
        latest = self._registry.get_latest_version(subject)
        if latest.schema_id is None:
            return parse(latest.schema)
        parsed = by_id.get(latest.schema_id)
        return parsed if parsed is not None else by_id.setdefault(latest.schema_id, parse(latest.schema))

    def _writer_schema(self, schema_id: int, ctx: SerializationContext | None) -> Schema:
        if self._registry is None:
            raise ValueError("a schema_registry_client is needed to find the writer's schema")
        try:
            return self._registry.get_schema(schema_id)
        except SchemaRegistryError as error:
            if error.error_code == SCHEMA_NOT_FOUND:
                where = f" (topic {ctx.topic}, {ctx.field})" if ctx is not None else ""
                raise SerializationError(
                    f"the record's schema id {schema_id} is not in this Schema Registry{where}: it is unknown, deleted or another tenant's ({error})"
                ) from error
            raise

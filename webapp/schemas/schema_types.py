"""The schema types the registry knows and the format module that parses and compares each.

A format module offers ``parse`` and ``incompatibilities`` (``webapp.schemas.formats``). Types whose
module is not installed yet answer a clear 42201 naming the type instead of failing.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any, Protocol, cast

from webapp.schemas.errors import InvalidSchemaError
from webapp.schemas.formats.errors import InvalidSchema

AVRO = "AVRO"
# The types of Confluent's registry, by the name its API uses, and the module of each.
FORMAT_MODULES: Mapping[str, str] = {
    AVRO: "webapp.schemas.formats.avro",
    "JSON": "webapp.schemas.formats.json_schema",
    "PROTOBUF": "webapp.schemas.formats.protobuf",
}


class SchemaFormat(Protocol):
    def parse(self, schema: str, references: Mapping[str, str]) -> Any: ...

    def incompatibilities(self, reader: Any, writer: Any) -> list[str]: ...


def available_types() -> list[str]:
    """The types ``GET /schemas/types`` lists: those whose format module is installed."""
    return [name for name in FORMAT_MODULES if _module(name) is not None]


def format_for(schema_type: str) -> SchemaFormat:
    """The format of ``schema_type``; InvalidSchemaError (42201) for an unknown or unavailable type."""
    if schema_type not in FORMAT_MODULES:
        raise InvalidSchemaError(f"Unknown schema type '{schema_type}'; the registry knows {', '.join(FORMAT_MODULES)}.")
    module = _module(schema_type)
    if module is None:
        raise InvalidSchemaError(f"Schema type {schema_type} is not supported by this registry yet.")
    return module


def parse(schema_type: str, text: str, references: Mapping[str, str]) -> Any:
    """The parsed schema; InvalidSchemaError (42201) naming what is wrong."""
    schema_format = format_for(schema_type)
    try:
        return schema_format.parse(text, references)
    except InvalidSchema as error:
        raise InvalidSchemaError(f"Invalid schema: {error}") from None


def _module(schema_type: str) -> SchemaFormat | None:
    try:
        return cast(SchemaFormat, importlib.import_module(FORMAT_MODULES[schema_type]))
    except ModuleNotFoundError as error:
        if error.name != FORMAT_MODULES[schema_type]:
            raise
        return None

"""Avro schema -> Spark SQL type, as Spark's own ``from_avro`` maps them (``SchemaConverters``).

record -> struct (fields nullable only when their type is a union with null), string and enum ->
string, bytes and fixed -> binary, int -> int, long -> long, float, double, boolean, array ->
array, map -> map<string, T>, a union of null and one type -> that type (nullable); logical types
date -> date, timestamp-millis / timestamp-micros -> timestamp, local-timestamp-* ->
timestamp_ntz, decimal -> decimal(p, s). Unions of int and long (or float and double) widen;
other unions of several non-null types (Spark's ``member0``, ``member1`` structs) are refused
for now. Named types are resolved by name (a record used twice).
"""

from __future__ import annotations

from typing import Any

from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
)

_PRIMITIVES: dict[str, DataType] = {
    "string": StringType(),
    "bytes": BinaryType(),
    "int": IntegerType(),
    "long": LongType(),
    "float": FloatType(),
    "double": DoubleType(),
    "boolean": BooleanType(),
}
_LOGICAL: dict[str, DataType] = {
    "date": DateType(),
    "timestamp-millis": TimestampType(),
    "timestamp-micros": TimestampType(),
    "local-timestamp-millis": TimestampNTZType(),
    "local-timestamp-micros": TimestampNTZType(),
}


class UnsupportedAvroTypeError(ValueError):
    """An Avro type Spark has no column type for (``null`` alone, an unknown name)."""


def spark_type(schema: Any) -> tuple[DataType, bool]:
    """(Spark type, nullable) of a parsed Avro schema (JSON as loaded: str, list or dict)."""
    return _convert(schema, {}, "")


def _convert(schema: Any, named: dict[str, Any], namespace: str) -> tuple[DataType, bool]:
    if isinstance(schema, list):
        return _union(schema, named, namespace)
    if isinstance(schema, str):
        if schema in _PRIMITIVES:
            return _PRIMITIVES[schema], False
        full = schema if "." in schema or not namespace else f"{namespace}.{schema}"
        for name in (full, schema):
            if name in named:
                return _convert(named[name], named, namespace)
        raise UnsupportedAvroTypeError(f"Avro type {schema!r} has no Spark column type")
    kind = schema.get("type")
    logical = schema.get("logicalType")
    if logical == "decimal":
        return DecimalType(int(schema["precision"]), int(schema.get("scale", 0))), False
    if logical in _LOGICAL:
        return _LOGICAL[logical], False
    if kind in ("record", "error", "enum", "fixed"):
        own_namespace = schema.get("namespace", namespace)
        name = schema["name"] if "." in schema["name"] or not own_namespace else f"{own_namespace}.{schema['name']}"
        named[name] = schema
        if kind == "enum":
            return StringType(), False
        if kind == "fixed":
            return BinaryType(), False
        fields = []
        for field in schema["fields"]:
            field_type, nullable = _convert(field["type"], named, own_namespace)
            fields.append(StructField(field["name"], field_type, nullable))
        return StructType(fields), False
    if kind == "array":
        element, nullable = _convert(schema["items"], named, namespace)
        return ArrayType(element, nullable), False
    if kind == "map":
        value, nullable = _convert(schema["values"], named, namespace)
        return MapType(StringType(), value, nullable), False
    return _convert(kind, named, namespace)


def _union(members: list[Any], named: dict[str, Any], namespace: str) -> tuple[DataType, bool]:
    others = [member for member in members if member != "null"]
    nullable = len(others) < len(members)
    if not others:
        raise UnsupportedAvroTypeError("an Avro union of only null has no Spark column type")
    if len(others) == 1:
        return _convert(others[0], named, namespace)[0], nullable
    converted = [_convert(member, named, namespace)[0] for member in others]
    if all(isinstance(member, (IntegerType, LongType)) for member in converted):
        return LongType(), nullable
    if all(isinstance(member, (FloatType, DoubleType)) for member in converted):
        return DoubleType(), nullable
    raise UnsupportedAvroTypeError(f"an Avro union of several types ({', '.join(str(member) for member in others)}) is not decoded to columns yet")

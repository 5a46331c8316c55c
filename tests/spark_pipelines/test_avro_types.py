"""Avro schemas -> Spark column types as Spark's from_avro maps them (pure: no Spark session)."""

from __future__ import annotations

import pytest
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    DateType,
    DecimalType,
    DoubleType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from spark_pipelines.avro_types import UnsupportedAvroTypeError, spark_type


def test_records_fields_and_nullable_unions() -> None:
    money = {"type": "record", "name": "Money", "fields": [{"name": "cents", "type": "long"}]}
    schema = {
        "type": "record",
        "name": "Order",
        "namespace": "acme",
        "fields": [
            {"name": "id", "type": "long"},
            {"name": "note", "type": ["null", "string"]},
            {"name": "price", "type": money},
            {"name": "refund", "type": ["null", "acme.Money"]},
            {"name": "tags", "type": {"type": "array", "items": "string"}},
            {"name": "attributes", "type": {"type": "map", "values": ["null", "bytes"]}},
            {"name": "state", "type": {"type": "enum", "name": "State", "symbols": ["NEW", "PAID"]}},
            {"name": "digest", "type": {"type": "fixed", "name": "Digest", "size": 16}},
            {"name": "ratio", "type": ["float", "double"]},
        ],
    }
    money_type = StructType([StructField("cents", LongType(), False)])
    assert spark_type(schema) == (
        StructType(
            [
                StructField("id", LongType(), False),
                StructField("note", StringType(), True),
                StructField("price", money_type, False),
                StructField("refund", money_type, True),
                StructField("tags", ArrayType(StringType(), False), False),
                StructField("attributes", MapType(StringType(), BinaryType(), True), False),
                StructField("state", StringType(), False),
                StructField("digest", BinaryType(), False),
                StructField("ratio", DoubleType(), False),
            ]
        ),
        False,
    )


def test_logical_types() -> None:
    assert spark_type({"type": "int", "logicalType": "date"})[0] == DateType()
    assert spark_type({"type": "long", "logicalType": "timestamp-millis"})[0] == TimestampType()
    assert spark_type({"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2})[0] == DecimalType(10, 2)
    assert spark_type("string") == (StringType(), False)


def test_types_without_a_column_type_are_refused_by_name() -> None:
    with pytest.raises(UnsupportedAvroTypeError, match="'acme.Nowhere'"):
        spark_type({"type": "record", "name": "R", "fields": [{"name": "x", "type": "acme.Nowhere"}]})
    with pytest.raises(UnsupportedAvroTypeError, match="several types"):
        spark_type(["int", "string"])

"""weir_from_avro: typed columns from Schema Registry records, in the run's one Spark session,
against one live control-plane registry (a thread of this process) for the module.

Records are built inline with the Kafka source's columns (topic, partition, offset, value) and
written by weir.schema_registry's AvroSerializer: the decoding is what is tested, not the
brokers (the Weir source's own tests read them).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from pyspark.sql import SparkSession
from pyspark.sql.types import BinaryType, IntegerType, LongType, StringType, StructField, StructType

from spark_pipelines.registry_values import weir_from_avro
from spark_pipelines.source_errors import InvalidOptionError
from tests.support.live_server import running_live_server
from tests.webapp.api.conftest import _make_tenant, fast_password_hashing  # noqa: F401
from webapp.accounts.models import Role
from weir.schema_registry import SchemaRegistryClient
from weir.schema_registry.avro import AvroSerializer
from weir.schema_registry.wire import frame
from weir.serialization import MessageField, SerializationContext

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("fast_password_hashing")]

ORDER_V1 = {"type": "record", "name": "Order", "namespace": "acme", "fields": [{"name": "id", "type": "long"}, {"name": "item", "type": "string"}]}
ORDER_V2 = {**ORDER_V1, "fields": [*ORDER_V1["fields"], {"name": "quantity", "type": ["null", "int"], "default": None}]}
ORDERS = SerializationContext("orders", MessageField.VALUE)
KAFKA_COLUMNS = StructType(
    [StructField("topic", StringType()), StructField("partition", IntegerType()), StructField("offset", LongType()), StructField("value", BinaryType())]
)


@pytest.fixture(scope="module")
def registry_url(django_db_setup: None, django_db_blocker: Any) -> Iterator[str]:
    with django_db_blocker.unblock(), running_live_server() as server:
        yield f"{server.url}/schema-registry"  # type: ignore[attr-defined]


def test_values_decode_to_typed_columns_and_bad_records_fail_naming_them(spark: SparkSession, registry_url: str) -> None:
    acme = _make_tenant("acme")
    key_id, secret = acme.secrets[Role.OWNER]
    auth = f"{key_id}:{secret}"
    client = SchemaRegistryClient({"url": registry_url, "basic.auth.user.info": auth})
    old = AvroSerializer(client, json.dumps(ORDER_V1))({"id": 1, "item": "tea"}, ORDERS)
    new = AvroSerializer(client, json.dumps(ORDER_V2))({"id": 2, "item": "cake", "quantity": 3}, ORDERS)
    assert client.get_latest_version("orders-value").version == 2
    good = [("orders", 0, 0, old), ("orders", 0, 1, new), ("orders", 0, 2, None)]
    bad = [("orders", 1, 7, b'{"id": 3}'), ("orders", 1, 8, frame(987_654, b"\x02"))]
    frame_of = spark.createDataFrame(good + bad, KAFKA_COLUMNS)

    # The subject's latest version is the reader schema: v1 records read with quantity's default.
    typed = weir_from_avro(frame_of.where("partition = 0"), registry_url, subject="orders-value", basic_auth_user_info=auth)
    assert typed.schema["value"].dataType == StructType(
        [StructField("id", LongType(), False), StructField("item", StringType(), False), StructField("quantity", IntegerType(), True)]
    )
    assert sorted((row.asDict(recursive=True) for row in typed.collect()), key=lambda row: row["offset"]) == [
        {"topic": "orders", "partition": 0, "offset": 0, "value": {"id": 1, "item": "tea", "quantity": None}},
        {"topic": "orders", "partition": 0, "offset": 1, "value": {"id": 2, "item": "cake", "quantity": 3}},
        {"topic": "orders", "partition": 0, "offset": 2, "value": None},
    ]

    # PERMISSIVE: a wrong magic byte and an unknown id read as null; FAILFAST names the record.
    permissive = weir_from_avro(frame_of, registry_url, json_format_schema=json.dumps(ORDER_V1), basic_auth_user_info=auth, mode="permissive")
    assert sorted((row.offset, row.value) for row in permissive.where("partition = 1").collect()) == [(7, None), (8, None)]
    with pytest.raises(Exception, match=r"cannot decode the value of orders/1@7: Unexpected magic byte 123"):
        weir_from_avro(frame_of.where("offset = 7"), registry_url, subject="orders-value", basic_auth_user_info=auth).collect()

    with pytest.raises(InvalidOptionError, match="exactly one of subject and json_format_schema"):
        weir_from_avro(frame_of, registry_url)
    with pytest.raises(InvalidOptionError, match="'payments-value'"):
        weir_from_avro(frame_of, registry_url, subject="payments-value", basic_auth_user_info=auth)

"""Broker-side schema validation on one real cluster (controller + one broker + database).

The broker asks the controller which subjects a record's schema id is registered under
(SchemaSubjects), so this needs the controller and the registry's database, which only a real
cluster has. One cluster, one test: librdkafka over the Kafka listener and the SDK over gRPC
each produce a registered record (stored) and unregistered ones (INVALID_RECORD naming the
record, nothing stored).
"""

from __future__ import annotations

import json

import pytest
from confluent_kafka import KafkaError as LibrdkafkaError
from confluent_kafka import Producer as LibrdkafkaProducer

from tests.support.real_cluster import RealCluster
from webapp.accounts.identity import Actor
from webapp.accounts.models import Membership, Role, Tenant
from webapp.schemas.actions.register import register
from weir import KafkaError, Producer

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow, pytest.mark.timeout(180)]

WAIT = 30.0
SCHEMA = {"type": "record", "name": "Order", "fields": [{"name": "id", "type": "long"}]}


def framed(schema_id: int) -> bytes:
    return b"\x00" + schema_id.to_bytes(4, "big") + b"\x02"  # Avro long 1


def deliveries(producer: object, records: list[bytes | None]) -> list[tuple[int, str]]:
    """Produce each value (key None) and flush; (error code or 0, error text) per record, in order."""
    outcomes: list[tuple[int, str]] = [(-1, "")] * len(records)

    def report(index: int):  # type: ignore[no-untyped-def]
        def on_delivery(error, _message) -> None:  # type: ignore[no-untyped-def]
            outcomes[index] = (error.code(), error.str()) if error is not None else (0, "")

        return on_delivery

    for index, value in enumerate(records):
        producer.produce("orders", value=value, on_delivery=report(index))  # type: ignore[attr-defined]
        producer.flush(WAIT)  # type: ignore[attr-defined]
    return outcomes


def test_brokers_accept_registered_schema_ids_and_refuse_others_with_invalid_record(start_cluster) -> None:  # type: ignore[no-untyped-def]
    cluster: RealCluster = start_cluster(broker_count=1)
    access = cluster.create_tenant("Schemas")
    tenant = Tenant.objects.get(public_id=access.tenant_id)
    membership = Membership.objects.get(tenant=tenant)
    owner = Actor(tenant=tenant, role=membership.role, membership=membership)
    assert owner.role in (Role.OWNER, Role.ADMIN)
    registered = register(owner, "orders-value", {"schema": json.dumps(SCHEMA)}).schema_id
    elsewhere = register(owner, "payments-value", {"schema": json.dumps({**SCHEMA, "name": "Payment"})}).schema_id
    cluster.create_topic("orders", 1, 1, configs={"confluent.value.schema.validation": "true"})

    librdkafka = LibrdkafkaProducer(cluster.kafka_client_config(**{"acks": "all", "enable.idempotence": False, "retries": 0}))
    kafka_outcomes = deliveries(librdkafka, [framed(registered), b"not framed", framed(elsewhere), framed(999_999), None])
    assert kafka_outcomes[0] == (0, "") and kafka_outcomes[4] == (0, "")  # registered, and a tombstone
    assert [code for code, _ in kafka_outcomes[1:4]] == [LibrdkafkaError.INVALID_RECORD] * 3
    del librdkafka  # librdkafka reports the code only; the per-record messages are checked over the SDK below

    sdk = Producer(cluster.client_config(**{"acks": "all", "retries": 0}))
    sdk_outcomes = deliveries(sdk, [framed(registered), b"{}", framed(elsewhere), framed(999_999)])
    assert sdk_outcomes[0] == (0, "")
    assert [code for code, _ in sdk_outcomes[1:]] == [KafkaError.INVALID_RECORD] * 3, sdk_outcomes
    assert "record 0: starts with byte 0x7b, not the schema registry's magic byte 0" in sdk_outcomes[1][1], sdk_outcomes
    assert f"schema id {elsewhere} is not registered under subject 'orders-value' (only under payments-value)" in sdk_outcomes[2][1], sdk_outcomes
    assert "schema id 999999 is not registered" in sdk_outcomes[3][1], sdk_outcomes

    # Only the accepted records are stored: two registered values and the tombstone.
    logs = cluster.replica_logs("orders", 0)
    assert sorted(logs[0].values.values(), key=lambda value: value or b"") == sorted([framed(registered), framed(registered), None], key=lambda v: v or b"")

"""A managed, secured broker's Kafka listener: SASL PLAIN with a tenant's API key, tenants apart,
usage metered as for gRPC clients.

Alice (tenant A, all rights on its topics) and Bob (tenant B, all rights on "payments") use
librdkafka over SASL_PLAINTEXT. Bob never sees Alice's topic, not even listed; naming it, he
reaches only his own tenant's names, where his ACLs refuse it (TOPIC_AUTHORIZATION_FAILED on
metadata, produce and fetch) and nothing lands in Alice's log; a wrong password is refused at authentication. Alice's
Kafka traffic reaches ``__usage`` under her tenant like gRPC traffic does.
"""

from __future__ import annotations

import datetime
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from kio.schema.errors import ErrorCode
from kio.schema.fetch.v12.request import FetchPartition, FetchRequest, FetchTopic
from kio.schema.sasl_authenticate.v2.request import SaslAuthenticateRequest
from kio.schema.sasl_handshake.v1.request import SaslHandshakeRequest

from grpc_protos.weir.v1 import admin_pb2, admin_pb2_grpc
from tests.broker_nodes.metering.test_broker_metering import INTERNAL_TOKEN, READ_SECONDS, reader_for
from tests.broker_nodes.security.managed_cluster import INTERNAL, allow, brokers, credential, topic
from tests.kafka_protocol.wire import call, connect
from tests.support.in_process_broker import InProcessBroker

pytestmark = pytest.mark.timeout(120)

TENANT_A = "tn-aaaaaaaaaa"
TENANT_B = "tn-bbbbbbbbbb"
CLIENT_SECONDS = 15.0
GROUP = admin_pb2.ACL_RESOURCE_TYPE_GROUP
INTERVAL_MS = 200


@pytest.fixture
def node(tmp_path: Path) -> Iterator[InProcessBroker]:
    server = InProcessBroker(
        tmp_path / "node-1",
        {"offsets.topic.num.partitions": "1", "security.required": "true", "metering.interval.ms": str(INTERVAL_MS), "kafka.listen": "127.0.0.1:0"},
        environment={"WEIR_INTERNAL_TOKEN": INTERNAL_TOKEN},
        sleep=lambda seconds: None,
    ).start()
    admin = admin_pb2_grpc.AdminStub(server.channel)
    admin.ApplyPartitions(
        admin_pb2.ApplyPartitionsRequest(
            version=1,
            cluster_id="weir-test",
            brokers=brokers((1, server.port)),
            topics=[
                topic(TENANT_A, "orders", partitions=2),
                topic(TENANT_B, "payments"),
                topic("", "__consumer_offsets"),
                topic("", "__usage"),
            ],
        ),
        metadata=INTERNAL,
    )
    admin.ApplySecurity(
        admin_pb2.ApplySecurityRequest(
            version=1,
            credentials=[credential("KEYALICE", "alice-secret", TENANT_A, "User:sa-alice"), credential("KEYBOB", "bob-secret", TENANT_B, "User:sa-bob")],
            acls=[
                allow(TENANT_A, "User:sa-alice", admin_pb2.ACL_OPERATION_ALL),
                allow(TENANT_B, "User:sa-bob", admin_pb2.ACL_OPERATION_ALL, "payments"),
                # librdkafka looks up the coordinator of a consumer's group.id even when it only assigns.
                *(
                    allow(tenant, principal, admin_pb2.ACL_OPERATION_ALL, "*", GROUP)
                    for tenant, principal in ((TENANT_A, "User:sa-alice"), (TENANT_B, "User:sa-bob"))
                ),
            ],
        ),
        metadata=INTERNAL,
    )
    yield server
    server.stop()


def sasl(node: InProcessBroker, key: str, secret: str) -> dict[str, object]:
    assert node.running is not None
    return {
        "bootstrap.servers": f"127.0.0.1:{node.running.kafka_port}",
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.username": key,
        "sasl.password": secret,
        "message.timeout.ms": int(CLIENT_SECONDS * 1000),
    }


ALICE = ("KEYALICE", "alice-secret")
BOB = ("KEYBOB", "bob-secret")


def produce(node: InProcessBroker, who: tuple[str, str], name: str, values: list[bytes]) -> list[KafkaError | None]:
    errors: list[KafkaError | None] = []
    producer = Producer({**sasl(node, *who), "acks": "all", "enable.idempotence": True})
    for value in values:
        producer.produce(name, value=value, partition=0, on_delivery=lambda error, message: errors.append(error))
    producer.flush(CLIENT_SECONDS)
    return errors


def raw_fetch_error(node: InProcessBroker, who: tuple[str, str], name: str) -> int:
    """The error code of partition 0 of ``name`` in a Fetch v12 sent after SASL PLAIN as ``who``.

    librdkafka never fetches a partition whose metadata it was refused, so the Fetch is sent raw.
    """
    assert node.running is not None
    key, secret = who
    with connect(node.running.kafka_port) as connection:
        assert call(connection, SaslHandshakeRequest(mechanism="PLAIN"), correlation_id=1).error_code == ErrorCode.none
        authenticated = call(connection, SaslAuthenticateRequest(auth_bytes=f"\0{key}\0{secret}".encode()), correlation_id=2)
        assert authenticated.error_code == ErrorCode.none
        request = FetchRequest(
            max_wait=datetime.timedelta(0),
            min_bytes=1,
            topics=(FetchTopic(topic=name, partitions=(FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=1 << 20),)),),
            forgotten_topics_data=(),
        )
        return int(call(connection, request, correlation_id=3).responses[0].partitions[0].error_code)


def test_tenants_see_only_their_own_topics_and_are_refused_others(node: InProcessBroker) -> None:
    bob = Producer(sasl(node, *BOB))
    listed = bob.list_topics(timeout=CLIENT_SECONDS)
    assert set(listed.topics) == {"payments"}
    named = bob.list_topics("orders", timeout=CLIENT_SECONDS).topics["orders"]
    assert named.error is not None and named.error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert [error.code() if error else None for error in produce(node, BOB, "orders", [b"intrusion"])] == [KafkaError.TOPIC_AUTHORIZATION_FAILED]
    assert produce(node, ALICE, "orders", [b"mine"]) == [None]
    assert raw_fetch_error(node, BOB, "orders") == KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert raw_fetch_error(node, ALICE, "orders") == 0
    assert node.broker.replica_manager.partition_log(f"{TENANT_A}~orders", 0).log_end_offset == 1  # Bob's record never landed


def test_a_wrong_password_is_refused_at_authentication(node: InProcessBroker) -> None:
    failures: list[KafkaError] = []
    producer = Producer({**sasl(node, "KEYALICE", "wrong"), "error_cb": failures.append})
    deadline = time.monotonic() + CLIENT_SECONDS
    while not failures and time.monotonic() < deadline:
        producer.poll(0.2)
    assert failures and failures[0].code() in (KafkaError._AUTHENTICATION, KafkaError.SASL_AUTHENTICATION_FAILED)


def test_kafka_traffic_is_metered_like_grpc_traffic(node: InProcessBroker) -> None:
    assert produce(node, ALICE, "orders", [b"a" * 50, b"b" * 50, b"c" * 50]) == [None, None, None]
    consumer = Consumer({**sasl(node, *ALICE), "group.id": "assign-only", "enable.auto.commit": False})
    consumer.assign([TopicPartition("orders", 0, 0)])
    read = 0
    deadline = time.monotonic() + CLIENT_SECONDS
    while read < 3 and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            read += 1
    consumer.close()
    assert read == 3
    assert node.broker.replica_manager.partition_log(f"{TENANT_A}~orders", 0).log_end_offset == 3
    reader = reader_for(node)
    try:
        reader.read_until(
            lambda r: r.traffic()[(TENANT_A, "orders", 0)]["records_in"] == 3 and r.traffic()[(TENANT_A, "orders", 0)]["records_out"] >= 3,
            READ_SECONDS,
            "Alice's Kafka traffic in __usage",
        )
        traffic: Counter[str] = reader.traffic()[(TENANT_A, "orders", 0)]
        assert traffic["bytes_in"] > 150 and traffic["produce_requests"] >= 1 and traffic["fetch_requests"] >= 1
        assert (TENANT_B, "payments", 0) not in reader.traffic()
    finally:
        reader.close()

"""Two tenants' stock clients use one group name over SASL on a managed, secured broker: two groups that never meet.

Alice (tenant A, topic "orders" of 2 partitions) and Bob (tenant B, his own "orders" of 3) run a
librdkafka consumer each in group "shared": each gets all of his own tenant's partitions (the
groups are not merged), each admin client lists and describes only its own tenant's group, and
committed offsets stay apart.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient

from grpc_protos.weir.v1 import admin_pb2, admin_pb2_grpc
from tests.broker_nodes.metering.test_broker_metering import INTERNAL_TOKEN
from tests.broker_nodes.security.managed_cluster import INTERNAL, allow, brokers, credential, topic
from tests.support.in_process_broker import InProcessBroker
from tests.support.waiting import wait_until

pytestmark = pytest.mark.timeout(120)

TENANT_A = "tn-aaaaaaaaaa"
TENANT_B = "tn-bbbbbbbbbb"
ALICE = ("KEYALICE", "alice-secret")
BOB = ("KEYBOB", "bob-secret")
CLIENT_SECONDS = 20.0
GROUP = admin_pb2.ACL_RESOURCE_TYPE_GROUP


@pytest.fixture
def node(tmp_path: Path) -> Iterator[InProcessBroker]:
    server = InProcessBroker(
        tmp_path / "node-1",
        {"offsets.topic.num.partitions": "1", "security.required": "true", "kafka.listen": "127.0.0.1:0"},
        environment={"WEIR_INTERNAL_TOKEN": INTERNAL_TOKEN},
        sleep=lambda seconds: None,
    ).start()
    admin = admin_pb2_grpc.AdminStub(server.channel)
    admin.ApplyPartitions(
        admin_pb2.ApplyPartitionsRequest(
            version=1,
            cluster_id="weir-test",
            brokers=brokers((1, server.port)),
            topics=[topic(TENANT_A, "orders", partitions=2), topic(TENANT_B, "orders", partitions=3), topic("", "__consumer_offsets")],
        ),
        metadata=INTERNAL,
    )
    admin.ApplySecurity(
        admin_pb2.ApplySecurityRequest(
            version=1,
            credentials=[credential("KEYALICE", "alice-secret", TENANT_A, "User:sa-alice"), credential("KEYBOB", "bob-secret", TENANT_B, "User:sa-bob")],
            acls=[
                *(
                    allow(tenant, principal, admin_pb2.ACL_OPERATION_ALL, "orders")
                    for tenant, principal in ((TENANT_A, "User:sa-alice"), (TENANT_B, "User:sa-bob"))
                ),
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


def sasl(node: InProcessBroker, who: tuple[str, str]) -> dict[str, object]:
    assert node.running is not None
    key, secret = who
    return {
        "bootstrap.servers": f"127.0.0.1:{node.running.kafka_port}",
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.username": key,
        "sasl.password": secret,
    }


def test_one_group_name_in_two_tenants_is_two_groups(node: InProcessBroker) -> None:
    alice = Consumer({**sasl(node, ALICE), "group.id": "shared", "session.timeout.ms": 6000, "enable.auto.commit": False})
    bob = Consumer({**sasl(node, BOB), "group.id": "shared", "session.timeout.ms": 6000, "enable.auto.commit": False})
    try:
        for consumer in (alice, bob):
            consumer.subscribe(["orders"])

        def assigned() -> tuple[list[int], list[int]]:
            for consumer in (alice, bob):
                consumer.poll(0.1)
            return sorted(item.partition for item in alice.assignment()), sorted(item.partition for item in bob.assignment())

        wait_until(lambda: assigned() == ([0, 1], [0, 1, 2]), "each member to get all of its own tenant's partitions", timeout=CLIENT_SECONDS)
        alice.commit(offsets=[TopicPartition("orders", 0, 11)], asynchronous=False)
        bob.commit(offsets=[TopicPartition("orders", 0, 22)], asynchronous=False)
        assert [item.offset for item in alice.committed([TopicPartition("orders", 0)], timeout=CLIENT_SECONDS)] == [11]
        assert [item.offset for item in bob.committed([TopicPartition("orders", 0)], timeout=CLIENT_SECONDS)] == [22]

        for who, partitions in ((ALICE, 2), (BOB, 3)):
            admin = AdminClient(sasl(node, who))
            listed = admin.list_consumer_groups(request_timeout=CLIENT_SECONDS).result(timeout=CLIENT_SECONDS)
            assert [group.group_id for group in listed.valid] == ["shared"]
            described = admin.describe_consumer_groups(["shared"], request_timeout=CLIENT_SECONDS)["shared"].result(timeout=CLIENT_SECONDS)
            assert len(described.members) == 1
            assert len(described.members[0].assignment.topic_partitions) == partitions
    finally:
        alice.close()
        bob.close()
    stored = sorted(group.group_id for group in node.broker.group_coordinator.list_groups())
    assert stored == [f"{TENANT_A}~shared", f"{TENANT_B}~shared"]

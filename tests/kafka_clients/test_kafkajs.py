"""KafkaJS (the stock Node.js client, from the npm registry) against Weir's Kafka listeners.

One run of tests/kafka_clients/node/flow.js creates a topic, produces with an idempotent
producer (acks=all), consumes the records back in a consumer group, commits, and reads the
committed offsets with its admin client, all over SASL PLAIN with the tenant's cluster key.
The records it wrote are then read through the weir SDK (one log, two doors), and a second
tenant's KafkaJS admin client does not see the topic.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support.real_cluster import RealCluster, TenantAccess
from weir import Consumer, TopicPartition

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow, pytest.mark.timeout(240)]

NODE_DIR = Path(__file__).resolve().parent / "node"
RECORDS = 60
FLOW_TIMEOUT_SECONDS = 150


def _node() -> str:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    if not (NODE_DIR / "node_modules" / "kafkajs" / "package.json").exists():
        pytest.skip("KafkaJS is not installed: sh .ci/install-kafka-tools (npm ci in tests/kafka_clients/node)")
    return node


def _run_flow(cluster: RealCluster, access: TenantAccess, topic: str, group: str) -> dict:  # type: ignore[type-arg]
    environment = {
        **os.environ,
        "WEIR_KAFKA_BROKERS": cluster.kafka_bootstrap_servers(),
        "WEIR_KAFKA_USERNAME": access.api_key,
        "WEIR_KAFKA_PASSWORD": access.api_secret,
        "WEIR_KAFKA_TOPIC": topic,
        "WEIR_KAFKA_GROUP": group,
        "WEIR_KAFKA_RECORDS": str(RECORDS),
        "WEIR_KAFKA_DEADLINE_MS": str(FLOW_TIMEOUT_SECONDS * 1000 // 2),
    }
    completed = subprocess.run(
        [_node(), str(NODE_DIR / "flow.js")], cwd=NODE_DIR, env=environment, capture_output=True, text=True, timeout=FLOW_TIMEOUT_SECONDS
    )
    assert completed.returncode == 0, f"KafkaJS flow failed ({completed.returncode}):\n{completed.stderr[-4000:]}\n{completed.stdout[-2000:]}"
    return json.loads(completed.stdout.strip().splitlines()[-1])


def test_kafkajs_creates_produces_consumes_in_a_group_and_commits(cluster: RealCluster) -> None:
    access = cluster.create_tenant("Nodes")
    result = _run_flow(cluster, access, "kafkajs-orders", "kafkajs-group")

    assert result["created"] is True
    assert "kafkajs-orders" in result["topics"]
    assert all("~" not in name for name in result["topics"]), "a tenant sees its plain topic names only"
    assert result["produced"] == RECORDS
    consumed = result["consumed"]
    assert sorted(int(record["index"]) for record in consumed) == list(range(RECORDS))
    assert all(record["key"] == f"key-{record['index']}" and record["value"] == f"value-{record['index']}" for record in consumed)
    # Committed offsets: each partition's committed offset is one past the last record read there.
    last_by_partition: dict[int, int] = {}
    for record in consumed:
        last_by_partition[record["partition"]] = max(last_by_partition.get(record["partition"], -1), int(record["offset"]))
    [committed_topic] = result["committed"]
    committed = {int(entry["partition"]): int(entry["offset"]) for entry in committed_topic["partitions"]}
    for partition, last in last_by_partition.items():
        assert committed[partition] == last + 1

    # The same records, read through the gRPC door with the weir SDK.
    consumer = Consumer({**cluster.client_config(), "group.id": "sdk-reader", "enable.auto.commit": False})
    try:
        consumer.assign([TopicPartition("kafkajs-orders", partition, 0) for partition in range(3)])
        seen: dict[bytes, bytes] = {}
        for _ in range(200):
            if len(seen) >= RECORDS:
                break
            for message in consumer.consume(num_messages=100, timeout=0.5):
                assert message.error() is None, message.error()
                seen[message.key()] = message.value()
                assert dict(message.headers())["index"] == message.key().removeprefix(b"key-")
    finally:
        consumer.close()
    assert seen == {f"key-{i}".encode(): f"value-{i}".encode() for i in range(RECORDS)}

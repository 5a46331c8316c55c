"""kcat (Debian's package of the stock librdkafka command-line client) against Weir's Kafka listeners.

kcat lists the tenant's topics (plain names, nothing of another tenant), produces keyed records
with headers, and consumes them back as JSON; records the weir SDK produced through the gRPC door
come out of kcat byte for byte, and the reverse.
"""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from tests.support.real_cluster import RealCluster, TenantAccess
from weir import Consumer, Producer, TopicPartition

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow, pytest.mark.timeout(180)]

KCAT_TIMEOUT_SECONDS = 60
RECORDS = 20


def _kcat(cluster: RealCluster, access: TenantAccess, *arguments: str, stdin: str | None = None) -> str:
    kcat = shutil.which("kcat")
    if kcat is None:
        pytest.skip("kcat is not installed: sh .ci/install-kafka-tools (apt-get install kcat)")
    command = [
        kcat,
        "-b",
        cluster.kafka_bootstrap_servers(),
        "-X",
        "security.protocol=SASL_PLAINTEXT",
        "-X",
        "sasl.mechanisms=PLAIN",
        "-X",
        f"sasl.username={access.api_key}",
        "-X",
        f"sasl.password={access.api_secret}",
        "-m",
        "30",  # metadata / consume timeout, seconds
        *arguments,
    ]
    completed = subprocess.run(command, input=stdin, capture_output=True, text=True, timeout=KCAT_TIMEOUT_SECONDS)
    assert completed.returncode == 0, f"kcat {' '.join(arguments)} failed ({completed.returncode}):\n{completed.stderr[-3000:]}"
    return completed.stdout


def test_kcat_lists_produces_and_consumes_a_tenants_topic_across_both_doors(cluster: RealCluster) -> None:
    other = cluster.create_tenant("Strangers")
    cluster.create_topic("hidden", partitions=1, replication_factor=1)  # the last tenant created owns it
    access = cluster.create_tenant("Tools")
    cluster.create_topic("kcat-events", partitions=2, replication_factor=2)

    listing = json.loads(_kcat(cluster, access, "-L", "-J"))
    names = {topic["topic"] for topic in listing["topics"]}
    assert "kcat-events" in names and "hidden" not in names
    assert all("~" not in name for name in names)
    assert {broker["id"] for broker in listing["brokers"]} == set(cluster.brokers)
    assert "kcat-events" not in {topic["topic"] for topic in json.loads(_kcat(cluster, other, "-L", "-J"))["topics"]}

    # kcat produces keyed records with a header to partition 0 ...
    lines = "".join(f"key-{i}:value-{i}\n" for i in range(RECORDS))
    _kcat(cluster, access, "-P", "-t", "kcat-events", "-p", "0", "-K", ":", "-H", "source=kcat", stdin=lines)
    # ... and the weir SDK produces to partition 1 through the gRPC door.
    producer = Producer({**cluster.client_config(), "acks": "all"})
    for i in range(RECORDS):
        producer.produce("kcat-events", key=f"sdk-{i}".encode(), value=bytes([i]) * 3, partition=1, headers=[("source", b"sdk")])
    assert producer.flush(30) == 0

    consumed = [json.loads(line) for line in _kcat(cluster, access, "-C", "-t", "kcat-events", "-o", "beginning", "-e", "-J").splitlines() if line]
    by_partition: dict[int, list[dict]] = {0: [], 1: []}  # type: ignore[type-arg]
    for record in consumed:
        by_partition[record["partition"]].append(record)
    assert [(record["key"], record["payload"]) for record in by_partition[0]] == [(f"key-{i}", f"value-{i}") for i in range(RECORDS)]
    assert all(record["headers"] == ["source", "kcat"] for record in by_partition[0])
    assert [record["key"] for record in by_partition[1]] == [f"sdk-{i}" for i in range(RECORDS)]
    assert [record["offset"] for record in by_partition[1]] == list(range(RECORDS))

    # What kcat wrote, read through the SDK byte for byte.
    consumer = Consumer({**cluster.client_config(), "group.id": "sdk-reader", "enable.auto.commit": False})
    try:
        consumer.assign([TopicPartition("kcat-events", 0, 0)])
        seen: list[tuple[bytes, bytes, list]] = []  # type: ignore[type-arg]
        for _ in range(100):
            if len(seen) >= RECORDS:
                break
            for message in consumer.consume(num_messages=100, timeout=0.5):
                assert message.error() is None, message.error()
                seen.append((message.key(), message.value(), message.headers()))
    finally:
        consumer.close()
    assert [(key, value) for key, value, _ in seen] == [(f"key-{i}".encode(), f"value-{i}".encode()) for i in range(RECORDS)]
    assert all(list(headers) == [("source", b"kcat")] for _, _, headers in seen)

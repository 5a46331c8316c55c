"""A managed (security-on) broker with two tenants, an internal topic and known records, for the DataSource tests.

The broker runs in the test process (``SecuredBroker``: internal token, ``security.required``)
and gets its topics and credentials the way the control plane pushes them (ApplyPartitions,
ApplySecurity). Spark's Python workers reach it over loopback like any client.

Records of ``orders`` (tenant A, 3 partitions): record ``i`` (0..29) is in partition
``i % 3`` at offset ``i // 3``, key ``k<i>`` (none for record 0), value ``v<i>``, create
time ``BASE_TIMESTAMP_MS + i``, and a header ``("h", b"x<i>")`` when ``i`` is odd.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from grpc_protos.weir.v1 import admin_pb2
from tests.broker_nodes.security.managed_cluster import INTERNAL, INTERNAL_TOKEN, SecuredBroker, allow, brokers, credential, tenant_token, topic
from weir import Producer

TENANT_A = "tn-aaaaaaaaaa"
TENANT_B = "tn-bbbbbbbbbb"
KEY_A, SECRET_A = "KEYTENANTA", "secret-of-tenant-a"
KEY_B, SECRET_B = "KEYTENANTB", "secret-of-tenant-b"
KEY_NO_ACL, SECRET_NO_ACL = "KEYNOACL", "secret-without-acls"  # tenant A's service account that was granted nothing
BASE_TIMESTAMP_MS = 1_700_000_000_000
ORDERS_RECORDS = 30
ORDERS_PARTITIONS = 3
USAGE_RECORDS = 3


@dataclass(frozen=True)
class OrderRecord:
    key: bytes | None
    value: bytes
    partition: int
    offset: int
    timestamp_ms: int
    headers: list[tuple[str, bytes]] | None


def order_record(index: int) -> OrderRecord:
    return OrderRecord(
        key=None if index == 0 else f"k{index}".encode(),
        value=f"v{index}".encode(),
        partition=index % ORDERS_PARTITIONS,
        offset=index // ORDERS_PARTITIONS,
        timestamp_ms=BASE_TIMESTAMP_MS + index,
        headers=[("h", f"x{index}".encode())] if index % 2 else None,
    )


class SourceCluster:
    """The running broker and clients to fill it."""

    def __init__(self, data_dir: Path) -> None:
        self.broker = SecuredBroker(data_dir).start()
        self.bootstrap = f"127.0.0.1:{self.broker.port}"
        self.broker.admin.ApplyPartitions(
            admin_pb2.ApplyPartitionsRequest(
                version=1,
                cluster_id="weir-source-test",
                brokers=brokers((1, self.broker.port)),
                topics=[
                    topic(TENANT_A, "orders", partitions=ORDERS_PARTITIONS),
                    topic(TENANT_A, "stream", partitions=2),
                    topic(TENANT_A, "empty"),
                    topic(TENANT_A, "sink", partitions=2),  # written by test_sink's round trip
                    topic(TENANT_B, "private"),
                    topic("", "__usage"),
                ],
            ),
            metadata=INTERNAL,
        )
        self.broker.admin.ApplySecurity(
            admin_pb2.ApplySecurityRequest(
                version=1,
                credentials=[
                    credential(KEY_A, SECRET_A, TENANT_A, "User:sa-a"),
                    credential(KEY_B, SECRET_B, TENANT_B, "User:sa-b"),
                    credential(KEY_NO_ACL, SECRET_NO_ACL, TENANT_A, "User:sa-none"),
                ],
                acls=[
                    allow(TENANT_A, "User:sa-a", admin_pb2.ACL_OPERATION_READ, "*"),
                    allow(TENANT_A, "User:sa-a", admin_pb2.ACL_OPERATION_WRITE, "sink"),
                    allow(TENANT_B, "User:sa-b", admin_pb2.ACL_OPERATION_READ, "*"),
                ],
            ),
            metadata=INTERNAL,
        )

    def tenant_options(self, key: str = KEY_A, secret: str = SECRET_A, **options: str) -> dict[str, str]:
        """Source options authenticated with an API key (tenant A's by default)."""
        return {"bootstrap.servers": self.bootstrap, "sasl.username": key, "sasl.password": secret, **options}

    def internal_options(self, **options: str) -> dict[str, str]:
        return {"bootstrap.servers": self.bootstrap, "weir.internal.token": INTERNAL_TOKEN, **options}

    def produce(
        self, topic_name: str, records: list[tuple[int, bytes | None, bytes, int, list[tuple[str, bytes]] | None]], *, tenant: str | None = TENANT_A
    ) -> None:
        """Produce ``(partition, key, value, timestamp_ms, headers)`` records as ``tenant`` (None: internal)."""
        credential = {"weir.tenant.token": tenant_token(tenant)} if tenant is not None else {"weir.internal.token": INTERNAL_TOKEN}
        config = {"bootstrap.servers": self.bootstrap, "linger.ms": 0, **credential}
        producer = Producer(config)
        failures: list[object] = []
        for partition, key, value, timestamp_ms, headers in records:
            producer.produce(
                topic_name,
                value=value,
                key=key,
                partition=partition,
                timestamp=timestamp_ms,
                headers=headers,
                on_delivery=lambda error, _message: failures.append(error) if error else None,
            )
        remaining = producer.flush(15)
        assert remaining == 0 and not failures, f"produce to {topic_name} failed: {failures} ({remaining} undelivered)"

    def fill(self) -> None:
        records = [order_record(index) for index in range(ORDERS_RECORDS)]
        self.produce("orders", [(record.partition, record.key, record.value, record.timestamp_ms, record.headers) for record in records])
        self.produce("__usage", [(0, None, f"usage-{index}".encode(), BASE_TIMESTAMP_MS, None) for index in range(USAGE_RECORDS)], tenant=None)
        self.produce("private", [(0, None, b"secret", BASE_TIMESTAMP_MS, None)], tenant=TENANT_B)

    def stop(self) -> None:
        self.broker.stop()


@contextmanager
def running_source_cluster(data_dir: Path) -> Iterator[SourceCluster]:
    """A filled :class:`SourceCluster`, stopped when the block ends (also after a failure)."""
    running = SourceCluster(data_dir)
    try:
        running.fill()
        yield running
    finally:
        running.stop()

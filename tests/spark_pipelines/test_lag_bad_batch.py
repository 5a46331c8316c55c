"""The lag job's reader of first records survives a stored batch that cannot be decoded.

A real managed broker (internal token, tenant topics pushed with ApplyPartitions) is stopped, a
batch with a correct CRC but an undecodable payload is written into tenant A's partition, and
the broker is started again. ``next_record_timestamps`` then leaves the offsets that batch
covers out (their time lag is unknown) with a warning naming tenant, topic, partition and
offsets, answers the offsets after it, and still answers the other partition and tenant B well
within its deadline, instead of waiting on the bad batch until the deadline passes.
"""

from __future__ import annotations

import logging
import time

import grpc

from grpc_protos.weir.v1 import admin_pb2, admin_pb2_grpc
from spark_pipelines.lag_brokers import RecordTimestamp, next_record_timestamps
from tests.broker_nodes.security.managed_cluster import INTERNAL, INTERNAL_TOKEN, brokers, tenant_token, topic
from tests.support.bad_batches import append_to_stopped_log, batch_at, undecodable_batch_at
from tests.support.processes import BrokerProcess
from weir import Producer

TENANT_A = "tn-aaaaaaaaaa"
TENANT_B = "tn-bbbbbbbbbb"
BASE_MS = int(time.time() * 1000) - 60_000
DEADLINE_SECONDS = 30.0


def apply_topics(broker: BrokerProcess, request: admin_pb2.ApplyPartitionsRequest) -> None:
    with grpc.insecure_channel(broker.address) as channel:
        admin_pb2_grpc.AdminStub(channel).ApplyPartitions(request, metadata=INTERNAL, timeout=15)


def produce(broker: BrokerProcess, tenant: str, topic_name: str, partition: int, timestamps: list[int]) -> None:
    producer = Producer({"bootstrap.servers": broker.address, "linger.ms": 0, "weir.tenant.token": tenant_token(tenant)})
    failures: list[object] = []
    for timestamp in timestamps:
        producer.produce(
            topic_name, value=b"v", partition=partition, timestamp=timestamp, on_delivery=lambda error, _: failures.append(error) if error else None
        )
    assert producer.flush(15) == 0 and not failures, failures


def test_a_bad_batch_leaves_its_offsets_out_and_every_other_partition_and_tenant_is_answered(tmp_path, caplog):
    broker = BrokerProcess(tmp_path / "data", configs={"security.required": "true"}, env={"WEIR_INTERNAL_TOKEN": INTERNAL_TOKEN}).start()
    try:
        request = admin_pb2.ApplyPartitionsRequest(
            version=1,
            cluster_id="weir-lag-bad-batch",
            brokers=brokers((1, broker.port)),
            topics=[topic(TENANT_A, "events", partitions=2), topic(TENANT_B, "other")],
        )
        apply_topics(broker, request)
        produce(broker, TENANT_A, "events", 0, [BASE_MS, BASE_MS + 1])  # offsets 0, 1
        produce(broker, TENANT_A, "events", 1, [BASE_MS + 10])
        produce(broker, TENANT_B, "other", 0, [BASE_MS + 20])
        broker.stop()
        # events [0]: offsets 2..4 undecodable, 5 good.
        append_to_stopped_log(broker, "events", 0, undecodable_batch_at(2, 3) + batch_at(5, [b"after"], timestamp=BASE_MS + 5))
        broker.start()
        request.version = 2
        apply_topics(broker, request)

        config = {"bootstrap.servers": broker.address, "weir.internal.token": INTERNAL_TOKEN}
        wanted = [(TENANT_A, "events", 0, 1), (TENANT_A, "events", 0, 3), (TENANT_A, "events", 0, 5), (TENANT_A, "events", 1, 0), (TENANT_B, "other", 0, 0)]
        started = time.monotonic()
        with caplog.at_level(logging.WARNING, logger="spark_pipelines.lag_brokers"):
            found = next_record_timestamps(config, wanted, timeout_seconds=DEADLINE_SECONDS)
        elapsed = time.monotonic() - started
        assert sorted(found, key=lambda item: (item.tenant_id, item.topic, item.partition, item.offset)) == [
            RecordTimestamp(TENANT_A, "events", 0, 1, BASE_MS + 1),
            RecordTimestamp(TENANT_A, "events", 0, 5, BASE_MS + 5),
            RecordTimestamp(TENANT_A, "events", 1, 0, BASE_MS + 10),
            RecordTimestamp(TENANT_B, "other", 0, 0, BASE_MS + 20),
        ]
        assert elapsed < DEADLINE_SECONDS / 2, f"the reader waited {elapsed:.1f} s"
        warnings = [record.getMessage() for record in caplog.records if record.levelno == logging.WARNING]
        assert any(
            f"tenant {TENANT_A}, events [0]: offsets 2..4 are in a stored batch that cannot be decoded; the time lag at offset(s) 3 is unknown" in message
            for message in warnings
        ), warnings
    finally:
        broker.stop()

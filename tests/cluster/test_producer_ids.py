"""Idempotent producers that get their producer ids from different brokers of one cluster.

Producer ids must be unique in the cluster, not only per broker: a partition's leader keeps
one sequence per producer id, so two producers sharing an id look to it like one producer
whose batches are duplicates (answered with another record's offset: an acknowledged record
that was never stored) or out of order. A client asks any broker for its id, so two clients
get theirs from different brokers as soon as one broker is down or slow.
"""

from __future__ import annotations

import pytest

from broker_nodes.producer_ids import PRODUCER_ID_FILE_NAME
from grpc_protos.weir.v1 import broker_pb2
from tests.cluster.workload import ProducerWorkload, check_acknowledged_records_read_back, check_no_duplicates, read_everything
from tests.support.real_cluster import ClusterTimings

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow, pytest.mark.timeout(120)]

TOPIC = "ids"
TIMINGS = ClusterTimings(session_timeout_ms=2000)


def test_brokers_of_one_cluster_never_hand_out_the_same_producer_id(start_cluster) -> None:
    cluster = start_cluster(timings=TIMINGS)
    cluster.create_tenant()
    ids = {
        node_id: cluster.call_broker(node_id, "InitProducerId", broker_pb2.InitProducerIdRequest(producer_id=-1, producer_epoch=-1)).producer_id  # type: ignore[attr-defined]
        for node_id in sorted(cluster.brokers)
    }
    assert len(set(ids.values())) == len(ids), f"producer ids by broker: {ids}"


def test_producer_initialised_while_the_first_ones_broker_is_down_loses_no_acknowledged_record(start_cluster) -> None:
    cluster = start_cluster(timings=TIMINGS)
    cluster.create_tenant()
    cluster.create_topic(TOPIC, 1, 3, {"min.insync.replicas": "2"})
    with ProducerWorkload(cluster.client_config(), TOPIC, 1, "first").start() as first:
        cluster.wait_until(lambda: first.acknowledged_count() >= 20, "the first producer under way", 30)
        # The broker that gave the first producer its id has reserved a block of ids on disk.
        [allocating] = [node_id for node_id, broker in cluster.brokers.items() if (broker.data_dir / PRODUCER_ID_FILE_NAME).exists()]
        cluster.kill(allocating)
        cluster.wait_until(lambda: cluster.leader_of(TOPIC, 0) not in (allocating, -1), f"{TOPIC} led by a live broker after killing broker {allocating}", 20)
        with ProducerWorkload(cluster.client_config(), TOPIC, 1, "second").start() as second:
            cluster.wait_until(lambda: second.acknowledged_count() >= 20, "the second producer under way, beside the first", 30)
            ledgers = [first.stop(), second.stop()]
    summary = "\n".join(ledger.summary() for ledger in ledgers)
    cluster.start_broker(allocating)
    cluster.wait_for_full_isr(TOPIC)
    consumed = read_everything(cluster.client_config(), TOPIC, cluster.wait_for_replicas_in_sync(TOPIC))

    problems = check_acknowledged_records_read_back(ledgers, consumed) + check_no_duplicates(consumed)
    assert not problems, f"{len(problems)} violations, first 10:\n" + "\n".join(problems[:10]) + f"\n{summary}"
    assert all(not ledger.failed for ledger in ledgers), f"deliveries failed:\n{summary}"

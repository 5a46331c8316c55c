"""The whole ISR down, unclean leader election off: the partition goes offline rather than be
led by a replica that misses acknowledged records, and comes back with an ISR member.

A follower is frozen until the leader drops it from the ISR; records acknowledged with
acks=all after that are on the two ISR members only. Both are killed and the frozen follower
runs again: the controller must leave the partition without a leader (leader -1) however long
the out-of-sync replica stays registered, and that replica must not serve the partition. The
controller keeps the last ISR member in the ISR (as Kafka does); when it restarts it leads
again with every acknowledged record, and the other replicas catch up from it.
"""

from __future__ import annotations

import time

import pytest

from grpc_protos.weir.v1 import broker_pb2
from tests.cluster.workload import check_replicas_agree, deliver, read_everything
from tests.support.real_cluster import ClusterTimings, RealCluster
from weir import KafkaError, Producer, records

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow, pytest.mark.timeout(180)]

TOPIC = "offline"
TIMINGS = ClusterTimings(session_timeout_ms=3000, replica_lag_time_max_ms=1500)
FAILOVER_SECONDS = TIMINGS.session_timeout_ms / 1000 + 15
STAYS_OFFLINE_SECONDS = 2 * TIMINGS.session_timeout_ms / 1000  # watched after the stale replica registered again
ACKS_ALL = {"acks": "all", "enable.idempotence": True, "linger.ms": 0}


def served_by(cluster: RealCluster, node_id: int) -> dict[str, int]:
    """What broker ``node_id`` answers for partition 0 of the topic: Metadata's leader, and
    the error codes of a Fetch and an acks=1 Produce sent to it directly."""
    metadata = cluster.call_broker(node_id, "Metadata", broker_pb2.MetadataRequest(topics=[TOPIC]))
    [topic] = [topic for topic in metadata.topics if topic.name == TOPIC]  # type: ignore[attr-defined]
    fetch = cluster.call_broker(
        node_id,
        "Fetch",
        broker_pb2.FetchRequest(
            max_wait_ms=0,
            min_bytes=1,
            replica_id=-1,
            topics=[broker_pb2.FetchTopic(topic=TOPIC, partitions=[broker_pb2.FetchPartition(partition=0, fetch_offset=0, current_leader_epoch=-1)])],
        ),
    )
    batch = records.build_batch([(int(time.time() * 1000), None, b"to-a-replica-that-does-not-lead", None)])
    produce = cluster.call_broker(
        node_id,
        "Produce",
        broker_pb2.ProduceRequest(
            acks=1, timeout_ms=2000, topics=[broker_pb2.ProduceTopicData(topic=TOPIC, partitions=[broker_pb2.ProducePartitionData(partition=0, records=batch)])]
        ),
    )
    return {
        "metadata_leader": topic.partitions[0].leader_id,
        "fetch_error": fetch.topics[0].partitions[0].error_code,  # type: ignore[attr-defined]
        "produce_error": produce.topics[0].partitions[0].error_code,  # type: ignore[attr-defined]
    }


def test_partition_without_a_live_isr_member_stays_offline_and_returns_with_an_isr_member(start_cluster) -> None:
    cluster = start_cluster(timings=TIMINGS)
    cluster.create_tenant()
    cluster.create_topic(TOPIC, 1, 3, {"min.insync.replicas": "2"})
    config = cluster.client_config()
    row = cluster.partition_row(TOPIC, 0)
    leader, in_sync, stale = row.leader, *[node_id for node_id in row.replicas if node_id != row.leader]
    producer = Producer({**config, **ACKS_ALL})
    try:
        acknowledged = deliver(producer, TOPIC, 0, [b"on-all-three"])
        cluster.sigstop(stale)
        cluster.wait_until(lambda: sorted(cluster.partition_row(TOPIC, 0).isr) == sorted([leader, in_sync]), f"broker {stale} out of the ISR", FAILOVER_SECONDS)
        acknowledged += deliver(producer, TOPIC, 0, [f"on-the-isr-only-{index}".encode() for index in range(5)])
        assert all(error is None for error, _ in acknowledged), acknowledged
    finally:
        producer.close(5)

    cluster.kill(leader)
    cluster.kill(in_sync)
    cluster.sigcont(stale)
    cluster.wait_until(
        lambda: cluster.leader_of(TOPIC, 0) == -1 and cluster.online_nodes() == {stale},
        f"the partition offline with only out-of-sync broker {stale} alive and registered",
        FAILOVER_SECONDS,
    )
    deadline = time.monotonic() + STAYS_OFFLINE_SECONDS
    while time.monotonic() < deadline:
        row = cluster.partition_row(TOPIC, 0)
        assert row.leader == -1, f"out-of-sync broker {stale} was elected ({row.leader=}, {row.isr=}) with unclean election off\n{cluster.log_tails()}"
        assert not cluster.hosted(stale, TOPIC)[0].is_leader, f"broker {stale} leads the offline partition\n{cluster.log_tails()}"
        time.sleep(0.2)
    answers = served_by(cluster, stale)
    assert answers["metadata_leader"] == -1, answers
    assert answers["fetch_error"] in (KafkaError.NOT_LEADER_OR_FOLLOWER, KafkaError.LEADER_NOT_AVAILABLE), answers
    assert answers["produce_error"] in (KafkaError.NOT_LEADER_OR_FOLLOWER, KafkaError.LEADER_NOT_AVAILABLE), answers

    # The controller keeps the last ISR member in the ISR (the other was dropped when fenced).
    [last_in_sync] = cluster.partition_row(TOPIC, 0).isr
    assert last_in_sync in (leader, in_sync)
    cluster.start_broker(last_in_sync)
    cluster.wait_until(lambda: cluster.leader_of(TOPIC, 0) == last_in_sync, f"ISR member {last_in_sync} leading again after its restart", FAILOVER_SECONDS)
    cluster.start_broker(({leader, in_sync} - {last_in_sync}).pop())
    cluster.wait_for_full_isr(TOPIC, timeout=30)
    end_offsets = cluster.wait_for_replicas_in_sync(TOPIC)
    consumed = read_everything(config, TOPIC, end_offsets)
    assert consumed.records[0] == [
        (offset, value) for (_, offset), value in zip(acknowledged, [b"on-all-three", *[f"on-the-isr-only-{index}".encode() for index in range(5)]])
    ]
    problems = check_replicas_agree(0, cluster.replica_logs(TOPIC, 0))
    assert not problems, problems

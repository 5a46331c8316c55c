"""Real processes, Kafka's protocol: Fetch v12's diverging epoch after a failover, and DeleteRecords that waits for the ISR.

Three brokers and the controller run as processes. In the first test a leader takes records its
followers never get (acks=1 while they are frozen) and is killed -9; the new leader never had
that tail, so a Fetch v12 that names the old epoch at an offset past where it ended on the new
leader gets ``diverging_epoch`` (KIP-320) — not records of the new epoch that would silently
stand in for the lost ones — and the old leader, restarted, truncates the tail. (A frozen
follower may still hold the answer to the one fetch it had parked at the leader, so it may get
the tail's first batch; the tail is several batches, each acknowledged before the next, and the
test reads where the old epoch ended on the new leader from its files.) In the second,
librdkafka's AdminClient deletes records of an RF=3 partition: when the answer arrives every
replica's log start offset is already there.
"""

from __future__ import annotations

import datetime
import socket
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from kio.schema.errors import ErrorCode
from kio.schema.fetch.v12 import request as fetch_v12
from kio.schema.sasl_authenticate.v2.request import SaslAuthenticateRequest
from kio.schema.sasl_handshake.v1.request import SaslHandshakeRequest

from tests.kafka_protocol.wire import call, connect
from tests.support.real_cluster import ClusterTimings, RealCluster
from weir.records import iter_records

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow, pytest.mark.timeout(240)]

TOPIC = "events"
TIMINGS = ClusterTimings(session_timeout_ms=2000, replica_lag_time_max_ms=5000)
CLIENT_TIMEOUT_SECONDS = 30.0
COMMITTED = 10  # records every replica has (acks=all)
TAIL = 5  # batches of one record that the old leader takes with acks=1 while its followers are frozen
AFTER = 5  # records the new leader takes in its epoch


def open_kafka_session(cluster: RealCluster, node_id: int) -> socket.socket:
    """A connection to broker ``node_id``'s Kafka listener, authenticated with the tenant's cluster key (SASL PLAIN)."""
    assert cluster.access is not None
    connection = connect(cluster.brokers[node_id].kafka_port)
    assert call(connection, SaslHandshakeRequest(mechanism="PLAIN"), correlation_id=1).error_code == ErrorCode.none
    secret = b"\x00" + cluster.access.api_key.encode() + b"\x00" + cluster.access.api_secret.encode()
    assert call(connection, SaslAuthenticateRequest(auth_bytes=secret), correlation_id=2).error_code == ErrorCode.none
    return connection


def fetch_v12_partition(connection: socket.socket, offset: int, *, leader_epoch: int, last_fetched_epoch: int) -> Any:
    partition = fetch_v12.FetchPartition(
        partition=0,
        current_leader_epoch=leader_epoch,
        fetch_offset=offset,
        last_fetched_epoch=last_fetched_epoch,
        log_start_offset=-1,
        partition_max_bytes=1 << 20,
    )
    request = fetch_v12.FetchRequest(
        replica_id=-1,
        max_wait=datetime.timedelta(milliseconds=0),
        min_bytes=1,
        max_bytes=1 << 20,
        isolation_level=0,
        session_id=0,
        session_epoch=-1,
        topics=(fetch_v12.FetchTopic(topic=TOPIC, partitions=(partition,)),),
        forgotten_topics_data=(),
        rack_id="",
    )
    return call(connection, request, correlation_id=3).responses[0].partitions[0]


def produce(cluster: RealCluster, values: list[bytes], acks: str) -> None:
    producer = Producer(cluster.kafka_client_config(acks=acks, **{"linger.ms": 0}))
    for value in values:
        producer.produce(TOPIC, value=value, partition=0)
    assert producer.flush(CLIENT_TIMEOUT_SECONDS) == 0


def test_a_fetch_with_the_old_epoch_past_its_end_on_the_new_leader_gets_the_diverging_epoch(start_cluster: Callable[..., RealCluster]) -> None:
    cluster = start_cluster(broker_count=3, timings=TIMINGS)
    cluster.create_tenant("Diverge")
    cluster.create_topic(TOPIC, 1, 3, {"min.insync.replicas": "2"})
    cluster.wait_for_full_isr(TOPIC)
    produce(cluster, [b"committed-%d" % index for index in range(COMMITTED)], "all")
    old_leader = cluster.leader_of(TOPIC, 0)
    old_epoch = cluster.partition_row(TOPIC, 0).leader_epoch
    followers = [node for node in cluster.brokers if node != old_leader]

    # The tail: the old leader appends records no follower fetches, then dies with them.
    tail_producer = Producer(cluster.kafka_client_config(acks="1", **{"linger.ms": 0}))
    tail_producer.list_topics(TOPIC, timeout=CLIENT_TIMEOUT_SECONDS)  # metadata first, while everyone answers
    for node in followers:
        cluster.sigstop(node)
    for index in range(TAIL):
        tail_producer.produce(TOPIC, value=b"tail-%d" % index, partition=0)
        assert tail_producer.flush(CLIENT_TIMEOUT_SECONDS) == 0  # one batch each: a parked follower fetch takes at most the first
    cluster.kill(old_leader)
    for node in followers:
        cluster.sigcont(node)

    new_leader = cluster.wait_until(lambda: (leader := cluster.leader_of(TOPIC, 0)) in followers and leader, "a follower elected leader")
    new_epoch = cluster.wait_until(
        lambda: (entry := cluster.hosted(new_leader, TOPIC).get(0)) is not None and entry.is_leader and entry.leader_epoch > old_epoch and entry.leader_epoch,
        "the new leader serving its epoch",
    )
    produce(cluster, [b"after-%d" % index for index in range(AFTER)], "all")
    (new_log,) = cluster.replica_logs(TOPIC, 0, [new_leader])
    old_epoch_end = next(offset for offset, value in new_log.values.items() if value == b"after-0")
    assert COMMITTED <= old_epoch_end < COMMITTED + TAIL, "the new leader must lack part of the old leader's tail"

    with open_kafka_session(cluster, new_leader) as connection:
        # What a fetcher that read the old leader's whole tail asks next: its epoch ended earlier here.
        diverged = fetch_v12_partition(connection, COMMITTED + TAIL, leader_epoch=new_epoch, last_fetched_epoch=old_epoch)
        assert diverged.error_code == ErrorCode.none
        assert (diverged.diverging_epoch.epoch, diverged.diverging_epoch.end_offset) == (old_epoch, old_epoch_end)
        assert not diverged.records
        # Truncated to the diverging end offset, the fetcher reads the new epoch's records from there.
        resumed = fetch_v12_partition(connection, old_epoch_end, leader_epoch=new_epoch, last_fetched_epoch=old_epoch)
        assert resumed.error_code == ErrorCode.none and resumed.diverging_epoch.epoch == -1
        values = [record.value for record in iter_records(resumed.records) if record.offset >= old_epoch_end]
        assert values == [b"after-%d" % index for index in range(AFTER)]

    # The old leader comes back as a follower, drops the tail the others never had and agrees with them.
    cluster.start_broker(old_leader)
    cluster.wait_until(
        lambda: len({tuple(sorted(replica.values.items())) for replica in cluster.replica_logs(TOPIC, 0)}) == 1,
        "every replica holding the same records",
    )
    (restarted,) = cluster.replica_logs(TOPIC, 0, [old_leader])
    assert restarted.values[old_epoch_end] == b"after-0"


def test_delete_records_answers_once_every_replica_moved_its_log_start(start_cluster: Callable[..., RealCluster]) -> None:
    cluster = start_cluster(broker_count=3, timings=TIMINGS)
    cluster.create_tenant("Deletes")
    cluster.create_topic(TOPIC, 1, 3, {"min.insync.replicas": "2"})
    cluster.wait_for_full_isr(TOPIC)
    produce(cluster, [b"record-%d" % index for index in range(20)], "all")
    cluster.wait_for_replicas_in_sync(TOPIC)
    admin = AdminClient(cluster.kafka_client_config())

    for offset in (7, 15):
        wanted = TopicPartition(TOPIC, 0, offset)
        deleted = admin.delete_records([wanted], request_timeout=CLIENT_TIMEOUT_SECONDS)[wanted].result(CLIENT_TIMEOUT_SECONDS)
        assert deleted.low_watermark == offset
        # Read at once, without waiting: the answer came only after every replica got there.
        log_starts = {node: cluster.hosted(node, TOPIC)[0].log_start_offset for node in cluster.brokers}
        assert all(start >= offset for start in log_starts.values()), log_starts

"""Requests that must wait park on the Kafka listener's event loop and hold no thread (issue 14, "many connections").

With four waiting threads, hundreds of long-poll Fetches, JoinGroups waiting for their rebalance
and acks=all Produces waiting for followers all park at once, the thread count does not grow
with them, and other connections' Produce, Metadata and Heartbeat are still answered. Each
parked request is answered when what it waits for happens (data, the rebalance, the followers)
or at its deadline; a client that disconnects while parked releases its waiter; a stopping
listener answers parked long polls at once.
"""

from __future__ import annotations

import datetime
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kio.index import load_response_schema

from broker_nodes.kafka_protocol.framing import decode_response, encode_request
from broker_nodes.kafka_protocol.handlers.admin_common import build
from tests.broker_nodes.replication.cluster import QUALIFIED, ReplicatedCluster
from tests.broker_nodes.server.helpers import batch
from tests.kafka_protocol.admin_calls import request_module
from tests.kafka_protocol.wire import call, connect, read_frame
from tests.support.in_process_broker import InProcessBroker
from weir.errors import ErrorCode
from weir.records import iter_records

PRODUCE, FETCH, METADATA, JOIN_GROUP, HEARTBEAT = 0, 1, 3, 11, 12
POOL_THREADS = 4  # both Kafka handler pools: far fewer than the requests parked at once
PARKED_FETCHES = 200
LONG_WAIT_MS = 60_000  # longer than any test: only data (or a disconnect, or the shutdown) ends these long polls
GROUP = "parked-group"
POLL_SECONDS = 30.0  # bound on every wait for a condition (a loaded 2-core machine)


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[InProcessBroker]:
    running = InProcessBroker(
        tmp_path / "data",
        {
            "offsets.topic.num.partitions": "1",
            "kafka.listen": "127.0.0.1:0",
            "kafka.handler.threads": str(POOL_THREADS),
            "kafka.waiting.handler.threads": str(POOL_THREADS),
            "group.initial.rebalance.delay.ms": "2000",  # joined members wait at least this long: long enough to count them parked
        },
    ).start()
    admin = running.broker.topic_admin
    admin.create_topic("idle", 1, 1, {})
    admin.create_topic("busy", 1, 1, {})
    yield running
    running.stop()


def kafka_port(broker: InProcessBroker) -> int:
    assert broker.running is not None
    return broker.running.kafka_port


def poll_until(condition: Callable[[], bool], what: str, timeout_seconds: float = POLL_SECONDS) -> None:
    """Check ``condition`` every 10 ms until it holds; AssertionError after ``timeout_seconds``."""
    deadline = time.monotonic() + timeout_seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_seconds} s waiting for {what}")
        time.sleep(0.01)


def fetch_request(topic: str, *, offset: int = 0, max_wait_ms: int = LONG_WAIT_MS) -> Any:
    schema = request_module(FETCH, 12)
    return schema.FetchRequest(
        max_wait=datetime.timedelta(milliseconds=max_wait_ms),
        min_bytes=1,
        max_bytes=1 << 20,
        isolation_level=0,
        session_id=0,
        topics=(
            build(
                schema.FetchTopic,
                topic=topic,
                partitions=(schema.FetchPartition(partition=0, fetch_offset=offset, partition_max_bytes=1 << 20, current_leader_epoch=-1),),
            ),
        ),
        forgotten_topics_data=(),
    )


def produce_request(topic: str, values: list[bytes], *, acks: int = 1, timeout_ms: int = 5000) -> Any:
    schema = request_module(PRODUCE, 9)
    return schema.ProduceRequest(
        acks=acks,
        timeout=datetime.timedelta(milliseconds=timeout_ms),
        topic_data=(schema.TopicProduceData(name=topic, partition_data=(schema.PartitionProduceData(index=0, records=batch(values)),)),),
    )


def metadata_request() -> Any:
    schema = request_module(METADATA, 12)
    return schema.MetadataRequest(topics=None, allow_auto_topic_creation=False, include_topic_authorized_operations=False)


def heartbeat_request(group: str) -> Any:
    schema = request_module(HEARTBEAT, 4)
    return schema.HeartbeatRequest(group_id=group, generation_id=1, member_id="nobody", group_instance_id=None)


def join_request(group: str, member_id: str = "") -> Any:
    schema = request_module(JOIN_GROUP, 5)
    return schema.JoinGroupRequest(
        group_id=group,
        session_timeout=datetime.timedelta(seconds=30),
        rebalance_timeout=datetime.timedelta(seconds=30),
        member_id=member_id,
        group_instance_id=None,
        protocol_type="consumer",
        protocols=(schema.JoinGroupRequestProtocol(name="range", metadata=b"\x00\x01"),),
    )


def read_response(connection: socket.socket, api_key: int, version: int) -> tuple[int, Any]:
    return decode_response(read_frame(connection), load_response_schema(api_key, version))


def assert_others_are_served(port: int) -> None:
    """Produce, Metadata and Heartbeat from a fresh connection are answered (each within the socket's timeout)."""
    with connect(port) as other:
        produced = call(other, produce_request("busy", [b"bystander"]), correlation_id=1)
        assert produced.responses[0].partition_responses[0].error_code == ErrorCode.NO_ERROR
        assert {topic.name for topic in call(other, metadata_request(), correlation_id=2).topics} >= {"idle", "busy"}
        # An unknown member's heartbeat is answered at once (with its error): what matters is the answer.
        assert call(other, heartbeat_request("nobody-group"), correlation_id=3).error_code != ErrorCode.NO_ERROR


def test_hundreds_of_long_polls_park_without_threads_and_are_answered_when_data_arrives(broker: InProcessBroker) -> None:
    port = kafka_port(broker)
    purgatory = broker.broker.purgatory
    # Warm both pools up to their size first, so that the count below is about parked requests only.
    for _ in range(3):
        assert_others_are_served(port)
    threads_before = threading.active_count()
    clients = [connect(port) for _ in range(PARKED_FETCHES)]
    try:
        for index, client in enumerate(clients):
            client.sendall(encode_request(index, fetch_request("idle")))
        poll_until(lambda: purgatory.parked == PARKED_FETCHES, f"{PARKED_FETCHES} parked long polls")
        assert threading.active_count() <= threads_before + 2 * POOL_THREADS
        assert_others_are_served(port)
        assert purgatory.parked == PARKED_FETCHES  # the bystander's produce went to another partition

        with connect(port) as producer:
            produced = call(producer, produce_request("idle", [b"wake", b"up"]))
        assert produced.responses[0].partition_responses[0].error_code == ErrorCode.NO_ERROR
        for index, client in enumerate(clients):
            correlation_id, response = read_response(client, FETCH, 12)
            assert correlation_id == index
            partition = response.responses[0].partitions[0]
            assert partition.error_code == ErrorCode.NO_ERROR
            assert [record.value for record in iter_records(bytes(partition.records))] == [b"wake", b"up"]
        poll_until(lambda: purgatory.parked == 0, "every waiter released")
        assert threading.active_count() <= threads_before + 2 * POOL_THREADS
    finally:
        for client in clients:
            client.close()


def test_a_parked_long_poll_is_answered_empty_at_its_max_wait(broker: InProcessBroker) -> None:
    with connect(kafka_port(broker)) as client:
        started = time.monotonic()
        response = call(client, fetch_request("idle", max_wait_ms=300))
        waited = time.monotonic() - started
    partition = response.responses[0].partitions[0]
    assert partition.error_code == ErrorCode.NO_ERROR and not partition.records
    assert waited >= 0.25  # not answered before its max wait (an upper bound would only measure the machine)
    assert broker.broker.purgatory.parked == 0


def test_a_client_that_disconnects_while_parked_releases_its_waiter(broker: InProcessBroker) -> None:
    purgatory = broker.broker.purgatory
    clients = [connect(kafka_port(broker)) for _ in range(10)]
    for client in clients:
        client.sendall(encode_request(1, fetch_request("idle")))
    poll_until(lambda: purgatory.parked == 10, "ten parked long polls")
    for client in clients:
        client.close()
    # Released long before the 60 s max wait: the listener watches a parked request's socket.
    poll_until(lambda: purgatory.parked == 0, "the disconnected clients' waiters released", timeout_seconds=10.0)


def test_a_pipelined_request_behind_a_parked_long_poll_is_answered_after_it_in_order(broker: InProcessBroker) -> None:
    port = kafka_port(broker)
    with connect(port) as client:
        client.sendall(encode_request(1, fetch_request("idle", max_wait_ms=LONG_WAIT_MS)) + encode_request(2, metadata_request()))
        poll_until(lambda: broker.broker.purgatory.parked == 1, "the parked long poll")
        with connect(port) as producer:
            call(producer, produce_request("idle", [b"data"]))
        assert read_response(client, FETCH, 12)[0] == 1
        correlation_id, metadata = read_response(client, METADATA, 12)
        assert correlation_id == 2 and {topic.name for topic in metadata.topics} >= {"idle"}


def test_stopping_the_listener_answers_parked_long_polls_at_once(tmp_path: Path) -> None:
    running = InProcessBroker(tmp_path / "data", {"offsets.topic.num.partitions": "1", "kafka.listen": "127.0.0.1:0"}).start()
    stopped = False
    try:
        running.broker.topic_admin.create_topic("idle", 1, 1, {})
        clients = [connect(kafka_port(running)) for _ in range(20)]
        for client in clients:
            client.sendall(encode_request(7, fetch_request("idle")))
        poll_until(lambda: running.broker.purgatory.parked == 20, "twenty parked long polls")
        running.stop()
        stopped = True
        for client in clients:
            correlation_id, response = read_response(client, FETCH, 12)  # answered (empty), not dropped
            assert correlation_id == 7 and response.responses[0].partitions[0].error_code == ErrorCode.NO_ERROR
            client.close()
    finally:
        if not stopped:
            running.stop()


def test_join_groups_waiting_for_their_rebalance_park_without_threads(broker: InProcessBroker) -> None:
    port = kafka_port(broker)
    members = 12
    for _ in range(3):
        assert_others_are_served(port)
    threads_before = threading.active_count()
    clients = [connect(port) for _ in range(members)]
    try:
        # v5: a new member is first given its id (MEMBER_ID_REQUIRED), then joins with it and waits for the rebalance.
        member_ids = []
        for client in clients:
            first = call(client, join_request(GROUP))
            assert first.error_code == ErrorCode.MEMBER_ID_REQUIRED
            member_ids.append(first.member_id)
        for index, (client, member_id) in enumerate(zip(clients, member_ids)):
            client.sendall(encode_request(100 + index, join_request(GROUP, member_id)))
        # Each joined member waits for the group's initial rebalance delay, parked on the listener's loop.
        poll_until(lambda: len(described_members(broker)) == members, f"{members} joined members")
        assert threading.active_count() <= threads_before + 2 * POOL_THREADS
        assert_others_are_served(port)
        generations = set()
        for index, client in enumerate(clients):
            correlation_id, answer = read_response(client, JOIN_GROUP, 5)
            assert correlation_id == 100 + index and answer.error_code == ErrorCode.NO_ERROR
            generations.add(answer.generation_id)
        assert len(generations) == 1
        assert threading.active_count() <= threads_before + 2 * POOL_THREADS
    finally:
        for client in clients:
            client.close()


def described_members(broker: InProcessBroker) -> tuple[object, ...]:
    description = broker.broker.group_coordinator.classic.describe(GROUP)
    return description.members if description is not None else ()


def test_acks_all_produces_park_without_threads_until_the_followers_have_the_batch(tmp_path: Path) -> None:
    cluster = ReplicatedCluster(
        tmp_path,
        broker_configs={
            "kafka.listen": "127.0.0.1:0",
            "kafka.handler.threads": "1",
            "kafka.waiting.handler.threads": "1",
            "replica.lag.time.max.ms": "60000",  # the ISR keeps the silent followers: the produces wait for them
        },
    )
    clients: list[socket.socket] = []
    try:
        cluster.apply(leader=1, epoch=1, to=[1])  # the followers do not know yet: nothing replicates
        leader = cluster.nodes[1]
        acks = leader.broker.replication.acks
        port = kafka_port(leader)
        clients = [connect(port) for _ in range(8)]
        for index, client in enumerate(clients):
            client.sendall(encode_request(index, produce_request(QUALIFIED, [b"record %d" % index], acks=-1, timeout_ms=LONG_WAIT_MS)))
        poll_until(lambda: acks.parked == len(clients), "eight parked acks=all produces")
        with connect(port) as other:  # one thread per pool, all eight produces waiting: others are still answered
            assert call(other, produce_request(QUALIFIED, [b"acks=1"], acks=1)).responses[0].partition_responses[0].error_code == ErrorCode.NO_ERROR
            assert call(other, metadata_request(), correlation_id=2).throttle_time is not None
        cluster.apply(leader=1, epoch=1, to=[2, 3])  # the followers start fetching: the high watermark moves
        for index, client in enumerate(clients):
            correlation_id, response = read_response(client, PRODUCE, 9)
            assert correlation_id == index
            assert response.responses[0].partition_responses[0].error_code == ErrorCode.NO_ERROR
        poll_until(lambda: acks.parked == 0, "every acks=all waiter released")
        for index, client in enumerate(clients):  # each connection goes on after its parked request (its socket watch ended cleanly)
            assert call(client, metadata_request(), correlation_id=100 + index).throttle_time is not None
    finally:
        for client in clients:
            client.close()
        cluster.stop()

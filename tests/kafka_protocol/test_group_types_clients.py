"""A classic group of a stock Kafka client and a KIP-848 group of the weir SDK side by side on one broker, each reported with its type.

One real broker process serves both doors: librdkafka (confluent-kafka's Consumer, the classic
JoinGroup/SyncGroup protocol by default) joins ``librdkafka-app`` over the Kafka listener, the
weir SDK joins ``sdk-app`` over gRPC. The weir SDK's AdminClient, confluent-kafka's AdminClient
(over the Kafka listener) and ``weir groups`` all list both with the right type, filter by type,
and describe the classic group with its members and the partitions its leader assigned.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from confluent_kafka import Consumer as KafkaConsumer
from confluent_kafka import ConsumerGroupType as KafkaConsumerGroupType
from confluent_kafka.admin import AdminClient as KafkaAdminClient

from grpc_protos.weir.v1 import broker_pb2, broker_pb2_grpc
from tests.support.group_broker import join_and_commit, produce, start_group_broker
from tests.support.processes import BrokerProcess
from tests.support.waiting import wait_until
from weir import ConsumerGroupState, ConsumerGroupType
from weir.admin import AdminClient
from weir.cli import main

pytestmark = pytest.mark.timeout(180)

TOPIC = "orders"
CLIENT_SECONDS = 30.0  # joins, the classic group's initial rebalance delay (3 s) and client calls finish well within this


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerProcess]:
    process = start_group_broker(tmp_path / "broker", TOPIC, 2, CLIENT_SECONDS)
    yield process
    process.stop()


@pytest.fixture
def classic_member(broker: BrokerProcess) -> Iterator[KafkaConsumer]:
    """librdkafka in group librdkafka-app (classic protocol), owning both partitions of orders once the group is Stable."""
    consumer = KafkaConsumer(
        {
            "bootstrap.servers": broker.kafka_address,
            "group.id": "librdkafka-app",
            "client.id": "rdkafka-client",
            "auto.offset.reset": "earliest",
            "session.timeout.ms": 6000,
        }
    )
    consumer.subscribe([TOPIC])

    def owns_both() -> bool:
        consumer.poll(0.2)
        return len(consumer.assignment()) == 2

    wait_until(owns_both, "librdkafka to be assigned both partitions", timeout=CLIENT_SECONDS)
    yield consumer
    consumer.close()


def test_both_kinds_of_group_are_listed_and_described_with_their_type(broker: BrokerProcess, classic_member: KafkaConsumer) -> None:
    config = {"bootstrap.servers": broker.address}
    produce(config, TOPIC, {0: 2, 1: 1})
    sdk_member = join_and_commit(config, TOPIC, "sdk-app", records=3)
    try:
        _check_weir_admin(config)
        _check_kafka_admin(broker.kafka_address)
        _check_cli(broker.address)
        _check_grpc_types_filter(broker.address)
    finally:
        sdk_member.close()


def _check_weir_admin(config: dict[str, str]) -> None:
    admin = AdminClient(config)
    try:
        listed = admin.list_consumer_groups(request_timeout=CLIENT_SECONDS).result(timeout=CLIENT_SECONDS)
        assert listed.errors == []
        assert {(listing.group_id, listing.type, listing.state, listing.is_simple_consumer_group) for listing in listed.valid} == {
            ("librdkafka-app", ConsumerGroupType.CLASSIC, ConsumerGroupState.STABLE, False),
            ("sdk-app", ConsumerGroupType.CONSUMER, ConsumerGroupState.STABLE, False),
        }
        classic_only = admin.list_consumer_groups(request_timeout=CLIENT_SECONDS, types=[ConsumerGroupType.CLASSIC]).result(timeout=CLIENT_SECONDS)
        assert [listing.group_id for listing in classic_only.valid] == ["librdkafka-app"]

        futures = admin.describe_consumer_groups(["librdkafka-app", "sdk-app"], request_timeout=CLIENT_SECONDS)
        classic, consumer = (futures[group].result(timeout=CLIENT_SECONDS) for group in ("librdkafka-app", "sdk-app"))
        assert (classic.type, classic.state, classic.partition_assignor, classic.is_simple_consumer_group) == (
            ConsumerGroupType.CLASSIC,
            ConsumerGroupState.STABLE,
            "range",
            False,
        )
        [member] = classic.members
        assert member.client_id == "rdkafka-client" and member.host
        assert [(tp.topic, tp.partition) for tp in member.assignment.topic_partitions] == [(TOPIC, 0), (TOPIC, 1)]
        assert member.subscribed_topics == [TOPIC]
        assert (consumer.type, consumer.state) == (ConsumerGroupType.CONSUMER, ConsumerGroupState.STABLE)
        assert [member.client_id for member in consumer.members] == ["sdk-app-client"]
        with pytest.raises(ValueError, match="UNKNOWN"):
            admin.list_consumer_groups(types=[ConsumerGroupType.UNKNOWN])
    finally:
        admin.close()


def _check_kafka_admin(kafka_address: str) -> None:
    admin = KafkaAdminClient({"bootstrap.servers": kafka_address})
    listed = admin.list_consumer_groups(request_timeout=CLIENT_SECONDS).result(timeout=CLIENT_SECONDS)
    assert {(listing.group_id, listing.type) for listing in listed.valid} == {
        ("librdkafka-app", KafkaConsumerGroupType.CLASSIC),
        ("sdk-app", KafkaConsumerGroupType.CONSUMER),
    }
    consumers_only = admin.list_consumer_groups(request_timeout=CLIENT_SECONDS, types={KafkaConsumerGroupType.CONSUMER}).result(timeout=CLIENT_SECONDS)
    assert [listing.group_id for listing in consumers_only.valid] == ["sdk-app"]
    described = admin.describe_consumer_groups(["librdkafka-app"], request_timeout=CLIENT_SECONDS)["librdkafka-app"].result(timeout=CLIENT_SECONDS)
    assert described.type == KafkaConsumerGroupType.CLASSIC
    assert sorted(tp.partition for member in described.members for tp in member.assignment.topic_partitions) == [0, 1]


def _check_cli(address: str) -> None:
    def run_ok(*argv: str) -> str:
        stdout, stderr = io.StringIO(), io.StringIO()
        code = main([*argv, "--bootstrap-server", address, "--request-timeout-ms", "10000"], stdout=stdout, stderr=stderr, environ={})
        assert code == 0, stderr.getvalue()
        return stdout.getvalue()

    listed = json.loads(run_ok("groups", "list", "--output", "json"))
    assert [(group["group_id"], group["type"]) for group in listed] == [("librdkafka-app", "CLASSIC"), ("sdk-app", "CONSUMER")]
    assert [group["group_id"] for group in json.loads(run_ok("groups", "list", "--type", "classic", "--output", "json"))] == ["librdkafka-app"]
    described = json.loads(run_ok("groups", "describe", "librdkafka-app", "--output", "json"))
    assert (described["type"], described["state"], described["partition_assignor"]) == ("CLASSIC", "STABLE", "range")
    assert [member["client_id"] for member in described["members"]] == ["rdkafka-client"]
    assert described["members"][0]["assignment"] == [{"topic": TOPIC, "partition": 0}, {"topic": TOPIC, "partition": 1}]


def _check_grpc_types_filter(address: str) -> None:
    """ListGroups' types filter takes Kafka's names in any case and refuses others by name."""
    with grpc.insecure_channel(address) as channel:
        stub = broker_pb2_grpc.BrokerStub(channel)
        listed = stub.ListGroups(broker_pb2.ListGroupsRequest(types_filter=["Classic"]), timeout=CLIENT_SECONDS)
        assert [(group.group_id, group.group_type, group.protocol_type) for group in listed.groups] == [("librdkafka-app", "classic", "consumer")]
        with pytest.raises(grpc.RpcError) as refused:
            stub.ListGroups(broker_pb2.ListGroupsRequest(types_filter=["share"]), timeout=CLIENT_SECONDS)
        assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "group type 'share' does not exist" in (refused.value.details() or "")

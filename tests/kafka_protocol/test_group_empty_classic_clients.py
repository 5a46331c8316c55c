"""A classic group whose stock consumer closed stays a classic ``consumer`` group, Empty, as on Kafka, not an offsets-only one.

One real broker process: librdkafka (confluent-kafka, classic protocol) joins ``rdkafka-app``,
commits and closes. confluent-kafka's AdminClient, the weir SDK's AdminClient and ``weir groups``
then show the group Empty, classic and not simple, with no members; the same after the broker
restarts (the coordinator loads the group's record without members); kafka-python's consumer
rejoins it in the next generation; once closed again, DeleteGroups removes it.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer as KafkaConsumer
from confluent_kafka import ConsumerGroupState as KafkaConsumerGroupState
from confluent_kafka import ConsumerGroupType as KafkaConsumerGroupType
from confluent_kafka import KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient as KafkaAdminClient
from kafka import KafkaConsumer as PythonKafkaConsumer

from tests.support.group_broker import join_and_commit, produce, start_group_broker
from tests.support.processes import BrokerProcess
from tests.support.waiting import wait_until
from weir import ConsumerGroupState, ConsumerGroupType
from weir.admin import AdminClient
from weir.cli import main

pytestmark = pytest.mark.timeout(240)

TOPIC = "orders"
GROUP = "rdkafka-app"
CLIENT_SECONDS = 30.0  # joins, the classic group's initial rebalance delay (3 s) and client calls finish well within this


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerProcess]:
    process = start_group_broker(tmp_path / "broker", TOPIC, 2, CLIENT_SECONDS)
    produce({"bootstrap.servers": process.address}, TOPIC, {0: 2, 1: 1})
    yield process
    process.stop()


def generation(address: str) -> tuple[ConsumerGroupState, int]:
    """The group's state and generation as the weir SDK describes it (its group epoch is a classic group's generation)."""
    admin = AdminClient({"bootstrap.servers": address})
    try:
        described = admin.describe_consumer_groups([GROUP], request_timeout=CLIENT_SECONDS)[GROUP].result(timeout=CLIENT_SECONDS)
        return described.state, described.group_epoch
    finally:
        admin.close()


def join_commit_and_close_with_librdkafka(broker: BrokerProcess) -> int:
    """librdkafka joins, commits orders-0 at 1 and closes (LeaveGroup); the generation it was in."""
    consumer = KafkaConsumer({"bootstrap.servers": broker.kafka_address, "group.id": GROUP, "enable.auto.commit": False, "session.timeout.ms": 6000})
    try:
        consumer.subscribe([TOPIC])

        def owns_both() -> bool:
            consumer.poll(0.2)
            return len(consumer.assignment()) == 2

        wait_until(owns_both, "librdkafka to be assigned both partitions", timeout=CLIENT_SECONDS)
        consumer.commit(offsets=[TopicPartition(TOPIC, 0, 1)], asynchronous=False)
        state, joined_in = generation(broker.address)
        assert state == ConsumerGroupState.STABLE
    finally:
        consumer.close()
    return joined_in


def shown_empty(broker: BrokerProcess, expected_generation: int) -> None:
    """Every client shows the group Empty, classic, not simple, without members, in ``expected_generation``."""
    kafka_admin = KafkaAdminClient({"bootstrap.servers": broker.kafka_address})
    listed = kafka_admin.list_consumer_groups(request_timeout=CLIENT_SECONDS).result(timeout=CLIENT_SECONDS)
    assert [(item.group_id, item.state, item.type, item.is_simple_consumer_group) for item in listed.valid] == [
        (GROUP, KafkaConsumerGroupState.EMPTY, KafkaConsumerGroupType.CLASSIC, False)
    ]
    described = kafka_admin.describe_consumer_groups([GROUP], request_timeout=CLIENT_SECONDS)[GROUP].result(timeout=CLIENT_SECONDS)
    assert (described.state, described.type, described.is_simple_consumer_group, described.members) == (
        KafkaConsumerGroupState.EMPTY,
        KafkaConsumerGroupType.CLASSIC,
        False,
        [],
    )
    assert generation(broker.address) == (ConsumerGroupState.EMPTY, expected_generation)

    admin = AdminClient({"bootstrap.servers": broker.address})
    try:
        [listing] = admin.list_consumer_groups(request_timeout=CLIENT_SECONDS).result(timeout=CLIENT_SECONDS).valid
        assert (listing.group_id, listing.type, listing.state, listing.is_simple_consumer_group) == (
            GROUP,
            ConsumerGroupType.CLASSIC,
            ConsumerGroupState.EMPTY,
            False,
        )
    finally:
        admin.close()
    cli = json.loads(run_cli(broker.address, "groups", "describe", GROUP, "--output", "json"))
    assert (cli["state"], cli["type"], cli["is_simple"], cli["members"]) == ("EMPTY", "CLASSIC", False, [])


def run_cli(address: str, *argv: str) -> str:
    stdout, stderr = io.StringIO(), io.StringIO()
    code = main([*argv, "--bootstrap-server", address, "--request-timeout-ms", "10000"], stdout=stdout, stderr=stderr, environ={})
    assert code == 0, stderr.getvalue()
    return stdout.getvalue()


def rejoin_with_kafka_python(broker: BrokerProcess) -> int:
    """kafka-python's consumer joins the Empty group, then closes (LeaveGroup); the generation it was in."""
    consumer = PythonKafkaConsumer(bootstrap_servers=broker.kafka_address, group_id=GROUP, enable_auto_commit=False, session_timeout_ms=6000)
    try:
        consumer.subscribe([TOPIC])

        def owns_both() -> bool:
            consumer.poll(timeout_ms=200)
            return len(consumer.assignment()) == 2

        wait_until(owns_both, "kafka-python to be assigned both partitions", timeout=CLIENT_SECONDS)
        state, joined_in = generation(broker.address)
        assert state == ConsumerGroupState.STABLE
    finally:
        consumer.close()
    return joined_in


def test_a_closed_classic_group_stays_empty_across_a_restart_rejoins_in_its_next_generation_and_is_deleted(broker: BrokerProcess) -> None:
    first = join_commit_and_close_with_librdkafka(broker)
    shown_empty(broker, first + 1)  # leaving ends a generation, as on Kafka

    broker.restart()

    def loaded_empty() -> bool:
        try:
            shown_empty(broker, first + 1)
        except (AssertionError, KafkaException):
            return False  # the coordinator may still be loading its offsets partition
        return True

    if not loaded_empty():
        try:
            wait_until(loaded_empty, "the restarted broker to show the Empty group", timeout=CLIENT_SECONDS)
        except TimeoutError:
            shown_empty(broker, first + 1)  # fails with what the clients show
            raise

    second = rejoin_with_kafka_python(broker)
    assert second == first + 2  # the Empty generation continues into the next rebalance
    shown_empty(broker, first + 3)

    kafka_admin = KafkaAdminClient({"bootstrap.servers": broker.kafka_address})
    kafka_admin.delete_consumer_groups([GROUP], request_timeout=CLIENT_SECONDS)[GROUP].result(timeout=CLIENT_SECONDS)
    assert kafka_admin.list_consumer_groups(request_timeout=CLIENT_SECONDS).result(timeout=CLIENT_SECONDS).valid == []
    assert json.loads(run_cli(broker.address, "groups", "list", "--output", "json")) == []


def test_a_weir_sdk_consumer_takes_over_the_empty_classic_group_with_its_offsets(broker: BrokerProcess) -> None:
    join_commit_and_close_with_librdkafka(broker)
    # KIP-848 over gRPC: the Empty classic group makes way; orders-0 resumes from librdkafka's commit (1 of 2 records left there).
    sdk_member = join_and_commit({"bootstrap.servers": broker.address}, TOPIC, GROUP, records=2)
    try:
        kafka_admin = KafkaAdminClient({"bootstrap.servers": broker.kafka_address})
        listed = kafka_admin.list_consumer_groups(request_timeout=CLIENT_SECONDS).result(timeout=CLIENT_SECONDS)
        assert [(item.group_id, item.type, item.is_simple_consumer_group) for item in listed.valid] == [(GROUP, KafkaConsumerGroupType.CONSUMER, False)]
    finally:
        sdk_member.close()

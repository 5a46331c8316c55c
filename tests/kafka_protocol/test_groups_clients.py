"""Stock Kafka clients run classic consumer groups through a broker's Kafka listener.

Members are child processes (``group_member``) so that one can be killed with -9. The rebalance test
runs against a real broker process (``python -m broker_nodes --kafka-listen``), the others against a
real in-process broker serving its Kafka listener on loopback (PLAINTEXT: a standalone broker has no
credentials; tenants and ACLs are covered by test_groups_handlers). A killed member's partitions go to the others once its session times out; a member
joining takes its share; commits are read back with ``committed()``.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer as KafkaConsumer
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.support.in_process_broker import InProcessBroker
from tests.support.processes import BrokerProcess
from tests.support.waiting import wait_until

pytestmark = pytest.mark.timeout(180)

REPOSITORY_ROOT = Path(__file__).resolve().parents[2]
PARTITIONS = 4
SESSION_MS = 6_000  # the broker's smallest allowed session timeout (group.min.session.timeout.ms)
CLIENT_SECONDS = 30.0  # joins, rebalances and client calls all finish well within this
TOPIC = "orders"


class Member:
    """A group member in a child process; ``assignment`` is the last one it reported."""

    def __init__(self, client: str, bootstrap: str, group: str, topic: str = TOPIC) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.kafka_protocol.group_member", client, bootstrap, group, topic, str(SESSION_MS)],
            cwd=REPOSITORY_ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        self.assignment: set[int] | None = None
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.assignment = set(json.loads(line))

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=10)
        if self.process.stdin is not None:
            self.process.stdin.close()

    def stop(self) -> None:
        if self.process.poll() is None:
            assert self.process.stdin is not None
            self.process.stdin.close()  # the member leaves the group and exits
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.kill()


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[InProcessBroker]:
    server = InProcessBroker(tmp_path / "data", {"offsets.topic.num.partitions": "1", "kafka.listen": "127.0.0.1:0"}).start()
    server.broker.topic_admin.create_topic(TOPIC, PARTITIONS, 1, {})
    yield server
    server.stop()


@pytest.fixture
def members() -> Iterator[list[Member]]:
    started: list[Member] = []
    yield started
    for member in started:
        member.stop()


def bootstrap(broker: InProcessBroker) -> str:
    assert broker.running is not None
    return f"127.0.0.1:{broker.running.kafka_port}"


def split_between(*group: Member) -> bool:
    """Every partition assigned exactly once, each member with at least one."""
    assignments = [member.assignment for member in group]
    if any(not assignment for assignment in assignments):
        return False
    owned = [partition for assignment in assignments for partition in assignment or ()]
    return sorted(owned) == list(range(PARTITIONS))


@pytest.fixture
def broker_process(tmp_path: Path) -> Iterator[BrokerProcess]:
    process = BrokerProcess(tmp_path / "process", configs={"offsets.topic.num.partitions": "1"}).start()
    admin = AdminClient({"bootstrap.servers": process.kafka_address})
    admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)], request_timeout=CLIENT_SECONDS)[TOPIC].result(timeout=CLIENT_SECONDS)
    yield process
    process.stop()


@pytest.mark.slow
@pytest.mark.parametrize("client", ["confluent", "kafka-python", "aiokafka"])
def test_group_rebalances_when_a_member_is_killed_and_when_one_joins(broker_process: BrokerProcess, members: list[Member], client: str) -> None:
    address = broker_process.kafka_address
    first, second = Member(client, address, "billing"), Member(client, address, "billing")
    members.extend([first, second])
    wait_until(lambda: split_between(first, second), "both members to share the partitions", timeout=CLIENT_SECONDS)

    first.kill()
    started = time.monotonic()
    wait_until(lambda: second.assignment == set(range(PARTITIONS)), "the survivor to take every partition", timeout=CLIENT_SECONDS)
    assert time.monotonic() - started < SESSION_MS / 1000 + 15, "taken over within the session timeout (and a rebalance)"

    third = Member(client, address, "billing")
    members.append(third)
    wait_until(lambda: split_between(second, third), "the partitions to rebalance onto the new member", timeout=CLIENT_SECONDS)

    admin = AdminClient({"bootstrap.servers": address})
    described = admin.describe_consumer_groups(["billing"], request_timeout=CLIENT_SECONDS)["billing"].result(timeout=CLIENT_SECONDS)
    assert (str(described.state), len(described.members)) == ("ConsumerGroupState.STABLE", 2)
    owned = sorted(item.partition for member in described.members for item in member.assignment.topic_partitions)
    assert owned == list(range(PARTITIONS))


def test_librdkafka_commits_are_read_back_with_committed(broker: InProcessBroker) -> None:
    consumer = KafkaConsumer(
        {
            "bootstrap.servers": bootstrap(broker),
            "group.id": "audit",
            "session.timeout.ms": SESSION_MS,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    try:
        consumer.subscribe([TOPIC])
        wait_until(lambda: (consumer.poll(0.2), len(consumer.assignment()) == PARTITIONS)[1], "the lone member to get every partition", timeout=CLIENT_SECONDS)
        wanted = [KafkaTopicPartition(TOPIC, partition, 10 + partition) for partition in range(PARTITIONS)]
        consumer.commit(offsets=wanted, asynchronous=False)
        committed = consumer.committed([KafkaTopicPartition(TOPIC, partition) for partition in range(PARTITIONS)], timeout=CLIENT_SECONDS)
        assert [(item.partition, item.offset, item.error) for item in committed] == [(partition, 10 + partition, None) for partition in range(PARTITIONS)]
    finally:
        consumer.close()
    stored = broker.broker.offset_store.fetch("audit", [(TOPIC, partition) for partition in range(PARTITIONS)])
    assert [value.offset for _, _, value in stored if value is not None] == [10, 11, 12, 13]


def test_admin_lists_and_describes_the_group_and_deletes_it_once_empty(broker: InProcessBroker) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap(broker)})
    consumer = KafkaConsumer({"bootstrap.servers": bootstrap(broker), "group.id": "reports", "session.timeout.ms": SESSION_MS, "enable.auto.commit": False})
    try:
        consumer.subscribe([TOPIC])
        wait_until(lambda: (consumer.poll(0.2), len(consumer.assignment()) == PARTITIONS)[1], "the member to get every partition", timeout=CLIENT_SECONDS)
        consumer.commit(offsets=[KafkaTopicPartition(TOPIC, 0, 5)], asynchronous=False)
        listed = admin.list_consumer_groups(request_timeout=CLIENT_SECONDS).result(timeout=CLIENT_SECONDS)
        assert [(group.group_id, str(group.state)) for group in listed.valid] == [("reports", "ConsumerGroupState.STABLE")]
        description = admin.describe_consumer_groups(["reports"], request_timeout=CLIENT_SECONDS)["reports"].result(timeout=CLIENT_SECONDS)
        assert description.partition_assignor == "range" or description.partition_assignor
        assert sorted(item.partition for item in description.members[0].assignment.topic_partitions) == list(range(PARTITIONS))
        refused = admin.delete_consumer_groups(["reports"], request_timeout=CLIENT_SECONDS)["reports"]
        with pytest.raises(Exception, match="NON_EMPTY_GROUP"):
            refused.result(timeout=CLIENT_SECONDS)
    finally:
        consumer.close()
    admin.delete_consumer_groups(["reports"], request_timeout=CLIENT_SECONDS)["reports"].result(timeout=CLIENT_SECONDS)
    assert broker.broker.offset_store.fetch("reports", None) == []


@pytest.mark.slow
def test_librdkafka_group_protocol_consumer_shares_partitions_commits_and_takes_over_when_a_member_leaves(broker: InProcessBroker) -> None:
    def consumer() -> KafkaConsumer:
        return KafkaConsumer({"bootstrap.servers": bootstrap(broker), "group.id": "kip848", "group.protocol": "consumer", "enable.auto.commit": False})

    first, second = consumer(), consumer()
    try:
        for member in (first, second):
            member.subscribe([TOPIC])

        def assignments() -> list[list[int]]:
            for member in (first, second):
                member.poll(0.1)
            return [sorted(item.partition for item in member.assignment()) for member in (first, second)]

        wait_until(
            lambda: all(assignments()) and sorted(sum(assignments(), [])) == list(range(PARTITIONS)),
            "both members to share the partitions",
            timeout=CLIENT_SECONDS,
        )
        owned = first.assignment()[0].partition
        first.commit(offsets=[KafkaTopicPartition(TOPIC, owned, 21)], asynchronous=False)
        assert [item.offset for item in first.committed([KafkaTopicPartition(TOPIC, owned)], timeout=CLIENT_SECONDS)] == [21]
        described = broker.broker.group_coordinator.describe("kip848")
        assert (described.group_type, described.state.value, len(described.members)) == ("consumer", "Stable", 2)
    finally:
        first.close()
    try:
        wait_until(
            lambda: (second.poll(0.1), len(second.assignment()) == PARTITIONS)[1], "the remaining member to take every partition", timeout=CLIENT_SECONDS
        )
    finally:
        second.close()

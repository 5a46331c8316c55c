"""Consumer groups against a real broker process: subscribe(), the group tooling, handovers without loss."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from tests.weir.sdk_support import create_topic
from weir import Consumer, ConsumerGroupState, ConsumerGroupTopicPartitions, KafkaException, Message, Producer, TopicPartition
from weir.admin import AdminClient
from weir.errors import ErrorCode
from weir.group_tools import apply_offset_reset, consumer_group_lag, plan_offset_reset

# Members heartbeat every 200 ms, so that assignments move within a fraction of a second.
GROUP_CONFIGS = {
    "group.consumer.heartbeat.interval.ms": "200",
    "group.consumer.min.session.timeout.ms": "1000",
    "group.consumer.session.timeout.ms": "6000",
}
WAIT = 30.0


@pytest.fixture
def address(broker_factory: Callable[..., Any]) -> str:
    return broker_factory(configs=GROUP_CONFIGS).address


def produce(address: str, topic: str, count: int, partitions: int, prefix: str = "") -> set[bytes]:
    producer = Producer({"bootstrap.servers": address, "linger.ms": 0})
    values = set()
    for index in range(count):
        value = f"{prefix}{topic}-{index}".encode()
        producer.produce(topic, value=value, partition=index % partitions)
        values.add(value)
    assert producer.close(WAIT) == 0
    return values


def member(address: str, group: str, **extra: object) -> Consumer:
    return Consumer(
        {
            "bootstrap.servers": address,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "session.timeout.ms": 6000,
            "auto.commit.interval.ms": 200,
            "retry.backoff.ms": 20,
            "retry.backoff.max.ms": 200,
            **extra,
        }
    )


def assignment(consumer: Consumer) -> set[tuple[str, int]]:
    return {(tp.topic, tp.partition) for tp in consumer.assignment()}


def poll_all(consumers: list[Consumer], received: list[bytes], until: Callable[[], bool], timeout: float = WAIT) -> None:
    """Poll every consumer in turn (bounded) until ``until()``; record values received."""
    deadline = time.monotonic() + timeout
    while not until() and time.monotonic() < deadline:
        for consumer in consumers:
            for message in consumer.consume(500, 0.05):
                if message.error() is None:
                    received.append(message.value())
    assert until(), "the group did not get there in time"


def test_two_members_split_the_partitions_and_one_takes_over_when_the_other_closes(address: str) -> None:
    create_topic(address, "orders", 4)
    produced = produce(address, "orders", 200, 4)
    first, second = member(address, "billing"), member(address, "billing")
    try:
        first.subscribe(["orders"])
        second.subscribe(["orders"])
        received: list[bytes] = []
        poll_all([first, second], received, lambda: len(assignment(first)) == 2 and len(assignment(second)) == 2)
        assert assignment(first) | assignment(second) == {("orders", partition) for partition in range(4)}
        assert not assignment(first) & assignment(second)
        poll_all([first, second], received, lambda: set(received) == produced)

        first.close()
        later = produce(address, "orders", 40, 4, prefix="later-")
        poll_all([second], received, lambda: len(assignment(second)) == 4 and later <= set(received))
        assert set(received) == produced | later
        # A clean handover commits before it gives partitions away: nothing was read twice.
        assert len(received) == len(set(received))
    finally:
        first.close()
        second.close()


def test_regex_subscription_follows_matching_topics(address: str) -> None:
    for topic in ("metrics-cpu", "metrics-disk", "audit"):
        create_topic(address, topic, 1)
    wanted = produce(address, "metrics-cpu", 5, 1) | produce(address, "metrics-disk", 5, 1)
    produce(address, "audit", 5, 1)
    consumer = member(address, "dashboards")
    try:
        consumer.subscribe(["^metrics-.*"])
        received: list[bytes] = []
        poll_all([consumer], received, lambda: set(received) >= wanted)
        assert set(received) == wanted
        assert assignment(consumer) == {("metrics-cpu", 0), ("metrics-disk", 0)}

        create_topic(address, "metrics-net", 1)  # a topic created later that matches joins the subscription
        later = produce(address, "metrics-net", 3, 1)
        poll_all([consumer], received, lambda: set(received) >= wanted | later)
        assert ("metrics-net", 0) in assignment(consumer)
    finally:
        consumer.close()


def test_group_tools_describe_lag_and_reset_only_when_empty(address: str) -> None:
    create_topic(address, "payments", 2)
    produce(address, "payments", 10, 2)
    admin = AdminClient({"bootstrap.servers": address})
    consumer = member(address, "ledger", **{"enable.auto.commit": False, "client.id": "ledger-app"})
    try:
        consumer.subscribe(["payments"])
        received: list[bytes] = []
        poll_all([consumer], received, lambda: len(received) == 10)
        consumer.commit(offsets=[TopicPartition("payments", 0, 3), TopicPartition("payments", 1, 5)], asynchronous=False)

        description = admin.describe_consumer_groups(["ledger"])["ledger"].result(timeout=WAIT)
        assert description.state == ConsumerGroupState.STABLE
        [described] = description.members
        assert (described.member_id, described.client_id) == (consumer.memberid(), "ledger-app")
        assert {(tp.topic, tp.partition) for tp in described.assignment.topic_partitions} == {("payments", 0), ("payments", 1)}
        listed = admin.list_consumer_groups().result(timeout=WAIT)
        assert [(listing.group_id, listing.state) for listing in listed.valid] == [("ledger", ConsumerGroupState.STABLE)]

        lags = consumer_group_lag(admin, "ledger", timeout=WAIT)
        assert [(lag.partition, lag.committed_offset, lag.end_offset, lag.lag) for lag in lags] == [(0, 3, 5, 2), (1, 5, 5, 0)]

        plan = plan_offset_reset(admin, "ledger", topics=["payments"], to="earliest", timeout=WAIT)
        assert [(change.partition, change.current_offset, change.new_offset) for change in plan] == [(0, 3, 0), (1, 5, 0)]
        with pytest.raises(KafkaException) as raised:
            apply_offset_reset(admin, "ledger", plan, timeout=WAIT)
        assert "1 active member" in raised.value.error.str()
        with pytest.raises(KafkaException) as refused:
            admin.delete_consumer_groups(["ledger"])["ledger"].result(timeout=WAIT)
        assert refused.value.error.code() == ErrorCode.NON_EMPTY_GROUP  # type: ignore[attr-defined]

        consumer.close()
        apply_offset_reset(admin, "ledger", plan, timeout=WAIT)
        offsets = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions("ledger")])["ledger"].result(timeout=WAIT)
        assert [(tp.partition, tp.offset) for tp in offsets.topic_partitions] == [(0, 0), (1, 0)]

        admin.delete_consumer_groups(["ledger"])["ledger"].result(timeout=WAIT)
        with pytest.raises(KafkaException) as gone:
            admin.describe_consumer_groups(["ledger"])["ledger"].result(timeout=WAIT)
        assert gone.value.error.code() == ErrorCode.GROUP_ID_NOT_FOUND  # type: ignore[attr-defined]
    finally:
        consumer.close()
        admin.close()


def test_a_member_that_stops_polling_loses_its_partitions_to_the_other(address: str) -> None:
    create_topic(address, "jobs", 2)
    stalled_lost: list[list[tuple[str, int]]] = []
    stalled = member(address, "workers", **{"max.poll.interval.ms": 1500})
    steady = member(address, "workers")
    try:
        stalled.subscribe(["jobs"], on_lost=lambda consumer, partitions: stalled_lost.append([(tp.topic, tp.partition) for tp in partitions]))
        steady.subscribe(["jobs"])
        received: list[bytes] = []
        poll_all([stalled, steady], received, lambda: len(assignment(stalled)) == 1 and len(assignment(steady)) == 1)
        # ``stalled`` stops polling: it leaves after max.poll.interval.ms and ``steady`` gets both partitions.
        poll_all([steady], received, lambda: len(assignment(steady)) == 2)
        events: list[Message] = []
        deadline = time.monotonic() + WAIT
        while not stalled_lost and time.monotonic() < deadline:
            message = stalled.poll(0.1)
            if message is not None and message.error() is not None:
                events.append(message)
        assert [event.error().code() for event in events][:1] == [ErrorCode._MAX_POLL_EXCEEDED]  # type: ignore[attr-defined, union-attr]
        assert len(stalled_lost) == 1 and len(stalled_lost[0]) == 1
    finally:
        stalled.close()
        steady.close()


def test_a_static_member_that_closes_gets_its_partitions_back_when_it_returns(address: str) -> None:
    create_topic(address, "invoices", 2)
    produce(address, "invoices", 6, 2)
    first = member(address, "archive", **{"group.instance.id": "archive-0", "client.id": "archive-a"})
    try:
        first.subscribe(["invoices"])
        received: list[bytes] = []
        poll_all([first], received, lambda: len(received) == 6)
    finally:
        first.close()  # a static member leaves for now: its partitions wait for it
    admin = AdminClient({"bootstrap.servers": address})
    returning = member(address, "archive", **{"group.instance.id": "archive-0", "client.id": "archive-b"})
    try:
        assigned: list[list[tuple[str, int]]] = []
        returning.subscribe(["invoices"], on_assign=lambda consumer, partitions: assigned.append(sorted((tp.topic, tp.partition) for tp in partitions)))
        again: list[bytes] = []
        poll_all([returning], again, lambda: assignment(returning) == {("invoices", 0), ("invoices", 1)})
        assert assigned == [[("invoices", 0), ("invoices", 1)]]
        [described] = admin.describe_consumer_groups(["archive"])["archive"].result(timeout=WAIT).members
        assert (described.group_instance_id, described.client_id) == ("archive-0", "archive-b")
        # Its offsets were committed on close: nothing is read twice.
        returning.poll(1.0)
        assert again == []
    finally:
        returning.close()
        admin.close()

"""Bootstrap from a list of brokers, and the metadata cache: which broker a call reaches, and when the cache is refreshed."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator

import pytest

from tests.support.processes import free_port
from tests.support.waiting import wait_until
from tests.weir.scripted_broker import ScriptedBroker, metadata
from tests.weir.sdk_support import assigned, consume_all, create_topic
from weir import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Producer
from weir.admin import AdminClient
from weir.cluster import Cluster
from weir.config import ADMIN, ClientConfig


@pytest.fixture
def scripted() -> Iterator[list[ScriptedBroker]]:
    started = [ScriptedBroker(node_id).start() for node_id in (1, 2, 3)]
    try:
        yield started
    finally:
        for broker in started:
            broker.stop()


@pytest.fixture
def black_hole() -> Iterator[str]:
    """An address that accepts TCP connections (the kernel's backlog) but never answers."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    try:
        yield f"127.0.0.1:{listener.getsockname()[1]}"
    finally:
        listener.close()


def _cluster(bootstrap: str, **extra: object) -> Cluster:
    return Cluster(ClientConfig({"bootstrap.servers": bootstrap, "retry.backoff.ms": 10, "retry.backoff.max.ms": 50, **extra}, ADMIN))


def test_clients_bootstrap_past_a_dead_first_address(broker) -> None:
    bootstrap = f"127.0.0.1:{free_port()},{broker.address}"
    create_topic(bootstrap, "first-dead")
    producer = Producer({"bootstrap.servers": bootstrap})
    for index in range(20):
        producer.produce("first-dead", b"%d" % index)
    assert producer.close(20) == 0
    consumer = assigned(Consumer({"bootstrap.servers": bootstrap}), "first-dead", 1, OFFSET_BEGINNING)
    received = consume_all(consumer, 20)
    consumer.close()
    assert [message.value() for message in received] == [b"%d" % index for index in range(20)]


def test_no_broker_answering_fails_in_bounded_time_naming_every_address() -> None:
    dead = [f"127.0.0.1:{free_port()}", f"127.0.0.1:{free_port()}"]
    admin = AdminClient({"bootstrap.servers": ",".join(dead), "retry.backoff.ms": 20, "retry.backoff.max.ms": 100})
    started = time.monotonic()
    with pytest.raises(KafkaException) as raised:
        admin.list_topics(timeout=1.5)
    elapsed = time.monotonic() - started
    admin.close()

    error = raised.value.error
    assert error.code() == KafkaError._TRANSPORT  # type: ignore[attr-defined]
    assert all(address in error.str() for address in dead)
    assert "none of the brokers answered" in error.str()
    assert elapsed < 10  # bounded by the call's timeout, with a wide margin for a loaded machine


def test_first_produce_without_any_broker_fails_after_max_block_naming_the_addresses() -> None:
    dead = f"127.0.0.1:{free_port()}"
    producer = Producer({"bootstrap.servers": dead, "max.block.ms": 500, "retry.backoff.ms": 20, "retry.backoff.max.ms": 100})
    with pytest.raises(KafkaException) as raised:
        producer.produce("nowhere", b"x")
    producer.close(timeout=0)
    assert raised.value.error.code() == KafkaError._TRANSPORT  # type: ignore[attr-defined]
    assert dead in raised.value.error.str()


def test_an_address_that_never_answers_is_left_after_the_connection_setup_timeout(scripted: list[ScriptedBroker], black_hole: str) -> None:
    live = scripted[0]
    live.answers["Metadata"] = lambda request: metadata([live])
    cluster = _cluster(f"{black_hole},{live.address}", **{"socket.connection.setup.timeout.ms": 200})
    try:
        result = cluster.list_topics(timeout=20)
    finally:
        cluster.close()
    assert list(result.brokers) == [1]
    assert len(live.called("Metadata")) == 1


def test_an_address_that_failed_is_tried_last_until_it_answers() -> None:
    cluster = _cluster("127.0.0.1:9001,127.0.0.1:9002,127.0.0.1:9003")
    try:
        cluster.note_failure("127.0.0.1:9001", KafkaError(KafkaError._TRANSPORT))  # type: ignore[attr-defined]
        cluster.note_failure("127.0.0.1:9002", KafkaError(KafkaError._TIMED_OUT))  # type: ignore[attr-defined]
        cluster.note_failure("127.0.0.1:9003", KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED))  # type: ignore[attr-defined]  # an answer, not a failure to reach
        assert cluster.candidate_addresses() == ["127.0.0.1:9003", "127.0.0.1:9001", "127.0.0.1:9002"]
        cluster.note_answer("127.0.0.1:9001")
        assert cluster.candidate_addresses() == ["127.0.0.1:9001", "127.0.0.1:9003", "127.0.0.1:9002"]
    finally:
        cluster.close()


def test_metadata_with_an_older_leader_epoch_keeps_the_cached_leader(scripted: list[ScriptedBroker]) -> None:
    first, second, third = scripted
    answers = iter(
        [
            metadata(scripted, {"orders": [(2, 5)]}),
            metadata(scripted, {"orders": [(1, 4)]}),  # from a broker that missed the last election
            metadata(scripted, {"orders": [(3, 6)]}),
            metadata(scripted, {"orders": [(1, 0)]}, topic_id="topic-id-2"),  # deleted and created again
        ]
    )
    first.answers["Metadata"] = lambda request: next(answers)
    cluster = _cluster(first.address)
    leaders = []
    try:
        for _ in range(4):
            cluster.refresh(["orders"], timeout=10)
            leaders.append((cluster.leader_address("orders", 0), cluster.leader_epoch("orders", 0)))
    finally:
        cluster.close()
    assert leaders == [(second.address, 5), (second.address, 5), (third.address, 6), (first.address, 0)]


def test_background_refresh_happens_when_stale_or_old_and_at_most_once_per_backoff(scripted: list[ScriptedBroker]) -> None:
    broker = scripted[0]
    broker.answers["Metadata"] = lambda request: metadata([broker], {"orders": [(1, 0)], "audit": [(1, 0)]})
    cluster = _cluster(broker.address, **{"retry.backoff.ms": 60000, "retry.backoff.max.ms": 60000})
    try:
        assert cluster.maybe_refresh(["orders"], timeout=10)  # unknown: fetched
        assert not cluster.maybe_refresh(["orders"], timeout=10)  # fresh: nothing to do
        cluster.mark_stale("orders")
        assert not cluster.maybe_refresh(["orders"], timeout=10)  # stale, but within retry.backoff.ms of the last refresh
        assert cluster.is_stale("orders")
    finally:
        cluster.close()
    assert [list(request.topics) for request in broker.called("Metadata")] == [["orders"]]


def test_background_refresh_renews_metadata_older_than_max_age(scripted: list[ScriptedBroker]) -> None:
    broker = scripted[0]
    broker.answers["Metadata"] = lambda request: metadata([broker], {"orders": [(1, 0)]})
    cluster = _cluster(broker.address, **{"metadata.max.age.ms": 1, "retry.backoff.ms": 1, "retry.backoff.max.ms": 1})
    try:
        assert cluster.maybe_refresh(["orders"], timeout=10)
        # Refused (no request) until metadata.max.age.ms and retry.backoff.ms have passed, then renewed.
        wait_until(lambda: cluster.maybe_refresh(["orders"], timeout=10), "a refresh of metadata older than metadata.max.age.ms", 10)
    finally:
        cluster.close()
    assert len(broker.called("Metadata")) == 2

"""A forwarded CreateTopics or DeleteTopics is answered once the receiving broker's map shows it.

The controller answers a forwarded topic change as soon as its catalog changed and pushes the
new cluster map in the background; a client that asks the same broker's Metadata right after
(KafkaJS's createTopics with waitForLeaders) must find the topic, as on Kafka. Here the
controller's answer is scripted and its push arrives a moment after it, on another thread.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from broker_nodes.requests import topics as topic_requests
from broker_nodes.security.access import CallContext, CallerKind
from grpc_protos.weir.v1 import admin_pb2, broker_pb2
from tests.broker_nodes.security.managed_cluster import INTERNAL, SecuredBroker, brokers, topic

TENANT = "tn-k7q2m9x4hz"
TOPIC_ID = "00000000-0000-0000-0000-0000000000aa"
PUSH_DELAY_SECONDS = 0.3


@pytest.fixture
def node(tmp_path: Path) -> Iterator[SecuredBroker]:
    broker = SecuredBroker(tmp_path / "node-1").start()
    yield broker
    broker.stop()


def push_later(node: SecuredBroker, version: int, *topics: admin_pb2.TopicAssignment) -> threading.Thread:
    """The controller's background push of map ``version``, PUSH_DELAY_SECONDS from now."""

    def push() -> None:
        time.sleep(PUSH_DELAY_SECONDS)  # the push's lateness is the scenario, not a wait for a condition
        request = admin_pb2.ApplyPartitionsRequest(version=version, cluster_id="weir-test", brokers=brokers((1, node.port)), topics=list(topics))
        node.admin.ApplyPartitions(request, metadata=INTERNAL)

    thread = threading.Thread(target=push, daemon=True)
    thread.start()
    return thread


@pytest.fixture
def controller_answers(monkeypatch: pytest.MonkeyPatch) -> dict[str, object]:
    """Make the broker forward to a scripted controller: each forwarded request gets answers[kind]."""
    answers: dict[str, object] = {}
    monkeypatch.setattr(topic_requests, "topic_admin_controller", lambda broker, call: object())
    monkeypatch.setattr(topic_requests.topic_forwarding, "create_topics", lambda controller, call, request: answers["create"])
    monkeypatch.setattr(topic_requests.topic_forwarding, "delete_topics", lambda controller, call, names, timeout_ms: answers["delete"])
    return answers


def caller() -> CallContext:
    return CallContext(tenant_id=TENANT, principal="User:sa-writer", client_host="127.0.0.1", kind=CallerKind.CLIENT)


def test_a_created_topic_is_in_the_brokers_map_when_the_answer_comes(node: SecuredBroker, controller_answers: dict[str, object]) -> None:
    controller_answers["create"] = broker_pb2.CreateTopicsResponse(topics=[broker_pb2.TopicResult(name="orders", topic_id=TOPIC_ID, num_partitions=1)])
    pusher = push_later(node, 1, topic(TENANT, "orders", topic_id=TOPIC_ID))
    request = broker_pb2.CreateTopicsRequest(topics=[broker_pb2.CreatableTopic(name="orders", num_partitions=1, replication_factor=1)], timeout_ms=30_000)

    answer = topic_requests.create_topics(node.broker, caller(), request)

    assert [(result.name, result.error_code) for result in answer.topics] == [("orders", 0)]
    shown = node.broker.registry.get(f"{TENANT}~orders")
    assert shown is not None and shown.topic_id == TOPIC_ID
    pusher.join(timeout=30)


def test_a_deleted_topic_is_gone_from_the_brokers_map_when_the_answer_comes(node: SecuredBroker, controller_answers: dict[str, object]) -> None:
    push_later(node, 1, topic(TENANT, "orders", topic_id=TOPIC_ID)).join(timeout=30)
    assert node.broker.registry.get(f"{TENANT}~orders") is not None
    controller_answers["delete"] = broker_pb2.DeleteTopicsResponse(topics=[broker_pb2.TopicResult(name="orders", topic_id=TOPIC_ID)])
    pusher = push_later(node, 2)

    answer = topic_requests.delete_topics(node.broker, caller(), ["orders"], 30_000)

    assert [(result.name, result.error_code) for result in answer.topics] == [("orders", 0)]
    assert node.broker.registry.get(f"{TENANT}~orders") is None
    pusher.join(timeout=30)


def test_without_a_push_the_answer_still_comes_within_the_requests_timeout(node: SecuredBroker, controller_answers: dict[str, object]) -> None:
    controller_answers["create"] = broker_pb2.CreateTopicsResponse(topics=[broker_pb2.TopicResult(name="orders", topic_id=TOPIC_ID, num_partitions=1)])
    request = broker_pb2.CreateTopicsRequest(topics=[broker_pb2.CreatableTopic(name="orders", num_partitions=1, replication_factor=1)], timeout_ms=200)

    answer = topic_requests.create_topics(node.broker, caller(), request)

    # The catalog has the topic: the answer says so, and the map follows when the push arrives.
    assert [(result.name, result.error_code) for result in answer.topics] == [("orders", 0)]
    assert node.broker.registry.get(f"{TENANT}~orders") is None


def test_validate_only_and_refused_topics_do_not_wait(node: SecuredBroker, controller_answers: dict[str, object], monkeypatch: pytest.MonkeyPatch) -> None:
    waits: list[object] = []
    monkeypatch.setattr(node.broker, "wait_for_topics", lambda *arguments: waits.append(arguments) or True)
    refused = broker_pb2.TopicResult(name="orders", error_code=36, error_message="topic 'orders' already exists")
    controller_answers["create"] = broker_pb2.CreateTopicsResponse(topics=[refused])
    request = broker_pb2.CreateTopicsRequest(topics=[broker_pb2.CreatableTopic(name="orders", num_partitions=1, replication_factor=1)], timeout_ms=60_000)

    topic_requests.create_topics(node.broker, caller(), request)
    controller_answers["create"] = broker_pb2.CreateTopicsResponse(topics=[broker_pb2.TopicResult(name="orders", topic_id=TOPIC_ID)])
    topic_requests.create_topics(node.broker, caller(), broker_pb2.CreateTopicsRequest(topics=request.topics, validate_only=True, timeout_ms=60_000))
    topic_requests.create_topics(node.broker, caller(), broker_pb2.CreateTopicsRequest(topics=request.topics, timeout_ms=0))

    assert waits == []  # nothing was created, only validated, or the client asked not to wait

"""Auto-creation of a tenant's topic through Metadata (``requests.metadata``): with the client's
allow_auto_topic_creation and the broker's auto.create.topics.enable, an unknown topic is
created by the controller (a forwarded CreateTopics with the defaults), as KRaft brokers do.
One in-process broker for the module, its controller client replaced by a fake."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from broker_nodes.requests import metadata
from broker_nodes.security.access import CallContext, CallerKind
from broker_nodes.security.authorizer import AclEntry, Operation, PatternType, Permission, ResourceType
from broker_nodes.topic_registry import TopicMetadata
from grpc_protos.weir.v1 import broker_pb2, controller_pb2
from tests.support.in_process_broker import InProcessBroker
from weir.errors import ErrorCode

TENANT = "tn-auto"
DESCRIBE_ANY = AclEntry("User:sa-1", ResourceType.TOPIC, "*", PatternType.LITERAL, Operation.DESCRIBE, Permission.ALLOW, "*")
CREATE_ANY = AclEntry("User:sa-1", ResourceType.TOPIC, "*", PatternType.LITERAL, Operation.CREATE, Permission.ALLOW, "*")


class FakeController:
    """Answers forwarded CreateTopics with ``code``; with ``push``, the topic is on the broker before the answer."""

    addresses = ("127.0.0.1:1",)

    def __init__(self, broker: Any) -> None:
        self.broker = broker
        self.code = ErrorCode.NO_ERROR
        self.push = False
        self.requests: list[controller_pb2.ForwardedCreateTopicsRequest] = []

    def call(self, method: str, request: Any, *, timeout: float) -> Any:
        assert method == "CreateTopics"
        self.requests.append(request)
        names = [topic.name for topic in request.request.topics]
        if self.push:  # as the cluster map's push would (the registry only: Metadata reads no log)
            pushed = [TopicMetadata(f"{TENANT}~{name}", str(uuid.uuid4()), 2, 1) for name in names]
            self.broker.registry.replace_managed_topics([*self.broker.registry.topics(), *pushed])
        results = [broker_pb2.TopicResult(name=name, error_code=self.code, error_message="why" if self.code else "") for name in names]
        return broker_pb2.CreateTopicsResponse(topics=results)


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    server = InProcessBroker(tmp_path_factory.mktemp("auto-create"), {"auto.create.topics.enable": "true"}).start()
    try:
        yield server.broker
    finally:
        server.stop()


@pytest.fixture
def controller(broker: Any) -> Iterator[FakeController]:
    fake = FakeController(broker)
    broker.controller = fake
    try:
        yield fake
    finally:
        broker.controller = None


def tenant(*acls: AclEntry) -> CallContext:
    return CallContext(TENANT, "User:sa-1", "127.0.0.1", CallerKind.CLIENT, acls)


def answer(broker: Any, name: str, call: CallContext, allow: bool = True) -> metadata.TopicDescription:
    [topic] = metadata.describe(broker, call, [name], allow_auto_topic_creation=allow).topics
    return topic


def test_an_unknown_topic_is_created_by_the_controller_and_answered_being_created(broker: Any, controller: FakeController) -> None:
    described = answer(broker, "orders", tenant(DESCRIBE_ANY, CREATE_ANY))
    assert (described.error_code, described.error_message) == (ErrorCode.LEADER_NOT_AVAILABLE, "topic 'orders' is being created")
    [forwarded] = controller.requests
    [creatable] = forwarded.request.topics
    assert (forwarded.caller.tenant_id, creatable.name, creatable.num_partitions, creatable.replication_factor) == (TENANT, "orders", -1, -1)


def test_topics_the_push_brought_before_the_answer_are_described_after_one_forwarded_request(broker: Any, controller: FakeController) -> None:
    controller.push = True
    described = metadata.describe(broker, tenant(DESCRIBE_ANY, CREATE_ANY), ["payments", "refunds", "payments"], allow_auto_topic_creation=True).topics
    assert [(topic.error_code, topic.name, len(topic.partitions)) for topic in described] == [(0, "payments", 2), (0, "refunds", 2)]
    [forwarded] = controller.requests
    assert [topic.name for topic in forwarded.request.topics] == ["payments", "refunds"]


def test_no_creation_without_the_clients_wish_or_create_permission(broker: Any, controller: FakeController) -> None:
    assert answer(broker, "clicks", tenant(DESCRIBE_ANY, CREATE_ANY), allow=False).error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert answer(broker, "clicks", tenant(DESCRIBE_ANY)).error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    assert controller.requests == []  # the CREATE check is the broker's, as for CreateTopics


def test_a_creation_the_controller_refuses_stays_unknown_with_the_reason(broker: Any, controller: FakeController) -> None:
    controller.code = ErrorCode.POLICY_VIOLATION
    described = answer(broker, "too-many", tenant(DESCRIBE_ANY, CREATE_ANY))
    assert described.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION and "could not be auto-created: why" in described.error_message

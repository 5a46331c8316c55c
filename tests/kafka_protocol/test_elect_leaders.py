"""ElectLeaders (key 43) through the shared request layer (``requests.elections``), with a fake
controller client and a fake broker: no process, no database. Kafka's requests of every version
are round-tripped through kio's codecs as a client would send and read them."""

from __future__ import annotations

import datetime
from types import SimpleNamespace
from typing import Any

import grpc
import pytest

from broker_nodes.controller_client import ControllerUnavailableError
from broker_nodes.requests import elections
from broker_nodes.security.access import CallContext, CallerKind
from broker_nodes.security.authorizer import CLUSTER_RESOURCE_NAME, AclEntry, Operation, PatternType, Permission, ResourceType
from grpc_protos.weir.v1 import broker_pb2, controller_pb2
from tests.kafka_protocol.admin_calls import call_handler, request_module
from weir.errors import ErrorCode

ELECT_LEADERS = 43
PREFERRED, UNCLEAN = 0, 1


class FakeController:
    """Answers every forwarded election with ``answer`` (or raises it) and records the requests."""

    addresses = ("127.0.0.1:1",)

    def __init__(self, answer: broker_pb2.ElectLeadersResponse | Exception) -> None:
        self.answer = answer
        self.calls: list[tuple[str, Any]] = []

    def call(self, method: str, request: object, *, timeout: float) -> Any:
        self.calls.append((method, request))
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


def fake_broker(controller: FakeController | None) -> Any:
    return SimpleNamespace(config=SimpleNamespace(node_id=1), controller=controller)


def client(*acls: AclEntry) -> CallContext:
    return CallContext("tn-a", "User:sa-1", "127.0.0.1", CallerKind.CLIENT, tuple(acls), door="kafka")


ALTER_CLUSTER = AclEntry("User:sa-1", ResourceType.CLUSTER, CLUSTER_RESOURCE_NAME, PatternType.LITERAL, Operation.ALTER, Permission.ALLOW, "*")


def answer(*results: tuple[str, int, int]) -> broker_pb2.ElectLeadersResponse:
    return broker_pb2.ElectLeadersResponse(
        results=[
            broker_pb2.ElectionResult(topic=topic, partition=partition, error_code=code, error_message="why" if code else "")
            for topic, partition, code in results
        ]
    )


def kafka_request(version: int, partitions: dict[str, tuple[int, ...]] | None, election_type: int = PREFERRED) -> Any:
    schema = request_module(ELECT_LEADERS, version)
    topics = None if partitions is None else tuple(schema.TopicPartitions(topic=topic, partitions=indexes) for topic, indexes in partitions.items())
    fields = {"election_type": election_type} if version >= 1 else {}
    return schema.ElectLeadersRequest(topic_partitions=topics, timeout=datetime.timedelta(seconds=5), **fields)


@pytest.mark.parametrize("version", [0, 1, 2])
def test_kafka_election_is_forwarded_with_the_caller_and_answered_per_topic(version: int) -> None:
    controller = FakeController(answer(("orders", 0, 0), ("orders", 1, ErrorCode.ELECTION_NOT_NEEDED), ("payments", 0, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)))
    request = kafka_request(version, {"orders": (0, 1), "payments": (0,)}, UNCLEAN if version else PREFERRED)
    response = call_handler(fake_broker(controller), client(ALTER_CLUSTER), ELECT_LEADERS, version, request)
    [(method, forwarded)] = controller.calls
    assert method == "ElectLeaders" and isinstance(forwarded, controller_pb2.ForwardedElectLeadersRequest)
    assert (forwarded.caller.tenant_id, forwarded.caller.principal, forwarded.caller.door) == ("tn-a", "User:sa-1", "kafka")
    assert forwarded.request.election_type == (UNCLEAN if version else PREFERRED) and not forwarded.request.all_partitions
    assert [(topic.topic, list(topic.partitions)) for topic in forwarded.request.partitions] == [("orders", [0, 1]), ("payments", [0])]
    answered = {
        (result.topic, partition.partition_id): (partition.error_code, partition.error_message)
        for result in response.replica_election_results
        for partition in result.partition_result
    }
    assert answered == {
        ("orders", 0): (0, None),
        ("orders", 1): (ErrorCode.ELECTION_NOT_NEEDED, "why"),
        ("payments", 0): (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "why"),
    }
    if version >= 1:
        assert response.error_code == 0


def test_null_partitions_ask_for_every_partition_of_the_tenant() -> None:
    controller = FakeController(answer(("orders", 2, 0)))
    response = call_handler(fake_broker(controller), client(ALTER_CLUSTER), ELECT_LEADERS, 2, kafka_request(2, None))
    assert controller.calls[0][1].request.all_partitions
    assert [(result.topic, [p.partition_id for p in result.partition_result]) for result in response.replica_election_results] == [("orders", [2])]


def test_without_alter_on_the_cluster_nothing_is_forwarded() -> None:
    controller = FakeController(answer())
    response = call_handler(fake_broker(controller), client(), ELECT_LEADERS, 2, kafka_request(2, {"orders": (0,)}))
    assert response.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    [[partition]] = [result.partition_result for result in response.replica_election_results]
    assert partition.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED and "ALTER" in partition.error_message
    assert controller.calls == []


@pytest.mark.parametrize(
    ("controller", "request_fields", "code", "message_part"),
    [
        (None, {}, ErrorCode.INVALID_REQUEST, "standalone"),
        (FakeController(answer()), {"election_type": 5}, ErrorCode.INVALID_REQUEST, "election type"),
        (FakeController(answer()), {"partitions": [broker_pb2.TopicPartitions(topic="", partitions=[0])]}, ErrorCode.INVALID_REQUEST, "topic name"),
        (FakeController(ControllerUnavailableError(("127.0.0.1:1",), "refused")), {}, ErrorCode.NOT_CONTROLLER, "refused"),
    ],
)
def test_refusals_of_the_whole_request(controller: FakeController | None, request_fields: dict[str, Any], code: int, message_part: str) -> None:
    fields = {"partitions": [broker_pb2.TopicPartitions(topic="orders", partitions=[0])], **request_fields}
    response = elections.elect_leaders(fake_broker(controller), client(ALTER_CLUSTER), broker_pb2.ElectLeadersRequest(**fields))
    assert response.error_code == code and message_part in response.error_message
    assert all(result.error_code == code for result in response.results) and len(response.results) == 1


def test_a_controller_that_fails_the_call_is_not_controller() -> None:
    class Broken(grpc.RpcError):
        def code(self) -> grpc.StatusCode:
            return grpc.StatusCode.UNAVAILABLE

        def details(self) -> str:
            return "connection refused"

    request = broker_pb2.ElectLeadersRequest(all_partitions=True)
    response = elections.elect_leaders(fake_broker(FakeController(Broken())), client(ALTER_CLUSTER), request)
    assert response.error_code == ErrorCode.NOT_CONTROLLER and "UNAVAILABLE" in response.error_message and not response.results

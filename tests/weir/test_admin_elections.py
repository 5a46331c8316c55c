"""``AdminClient.elect_leaders``: confluent-kafka's argument checks, the request it sends and the
answer it gives (no broker: the pure functions, and one call that fails for want of a broker)."""

from __future__ import annotations

import pytest

from grpc_protos.weir.v1 import broker_pb2
from weir import ElectionType, KafkaError, KafkaException, TopicPartition
from weir.admin import AdminClient
from weir.admin_elections import check_elect_leaders, election_request, election_results


@pytest.mark.parametrize(
    ("election_type", "partitions", "raised", "match"),
    [
        (None, [TopicPartition("t", 0)], TypeError, "ElectionType"),
        ("1", [TopicPartition("t", 0)], TypeError, "ElectionType"),
        (ElectionType.PREFERRED, "1", TypeError, "Expected 'partitions' to be a list, got 'str'"),
        (ElectionType.PREFERRED, ["test-1"], TypeError, "Element of the 'partitions' list must be of type 'TopicPartition' got 'str'"),
        (ElectionType.PREFERRED, [None], TypeError, "got 'NoneType'"),
        (ElectionType.PREFERRED, [TopicPartition("")], ValueError, "negative"),
        (ElectionType.PREFERRED, [TopicPartition("", 0)], ValueError, "name a topic"),
        (ElectionType.PREFERRED, [TopicPartition("t", -1)], ValueError, "negative"),
    ],
)
def test_arguments_are_checked_as_confluent_kafka_checks_them(election_type: object, partitions: object, raised: type[Exception], match: str) -> None:
    with pytest.raises(raised, match=match):
        check_elect_leaders(election_type, partitions)


def test_the_request_groups_partitions_by_topic_and_none_means_every_partition() -> None:
    request = election_request(ElectionType.UNCLEAN, [TopicPartition("a", 1), TopicPartition("b", 0), TopicPartition("a", 0)], 5000)
    assert request.election_type == 1 and not request.all_partitions and request.timeout_ms == 5000
    assert [(topic.topic, list(topic.partitions)) for topic in request.partitions] == [("a", [1, 0]), ("b", [0])]
    assert election_request(ElectionType.PREFERRED, None, 1).all_partitions
    with pytest.raises(KafkaException) as duplicate:
        election_request(ElectionType.PREFERRED, [TopicPartition("a", 0), TopicPartition("a", 0)], 1)
    assert duplicate.value.args[0].code() == KafkaError._INVALID_ARG


def test_the_answer_maps_each_partition_to_its_error_or_none() -> None:
    response = broker_pb2.ElectLeadersResponse(
        results=[
            broker_pb2.ElectionResult(topic="a", partition=0),
            broker_pb2.ElectionResult(topic="a", partition=1, error_code=KafkaError.ELECTION_NOT_NEEDED, error_message="a [1]: leads already"),
        ]
    )
    results = election_results(response)
    assert results[TopicPartition("a", 0)] is None
    error = results[TopicPartition("a", 1)]
    assert error is not None and error.code() == KafkaError.ELECTION_NOT_NEEDED and error.str() == "a [1]: leads already"
    with pytest.raises(KafkaException) as refused:
        election_results(broker_pb2.ElectLeadersResponse(error_code=KafkaError.CLUSTER_AUTHORIZATION_FAILED, error_message="needs ALTER"))
    assert refused.value.args[0].code() == KafkaError.CLUSTER_AUTHORIZATION_FAILED


def test_a_call_without_a_reachable_broker_fails_its_future() -> None:
    with AdminClient({"bootstrap.servers": "127.0.0.1:1", "socket.timeout.ms": 10}) as admin, pytest.raises(KafkaException):
        admin.elect_leaders(ElectionType.PREFERRED, [TopicPartition("test-topic1", 0)]).result(timeout=10)

"""Kafka error codes and confluent-kafka's KafkaError shape."""

from __future__ import annotations

from weir.errors import ErrorCode, KafkaError, KafkaException, error_name, is_retriable


def test_codes_match_kafka_numbers_and_retriability():
    assert ErrorCode.NOT_LEADER_OR_FOLLOWER == 6 and is_retriable(6)
    assert ErrorCode.OFFSET_OUT_OF_RANGE == 1 and not is_retriable(1)
    assert ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER == 45
    assert ErrorCode.NOT_ENOUGH_REPLICAS == 19 and is_retriable(19)
    assert error_name(29) == "TOPIC_AUTHORIZATION_FAILED"
    assert error_name(12345) == "ERROR_12345"


def test_kafka_error_reads_like_confluent_kafka():
    error = KafkaError(KafkaError.NOT_LEADER_FOR_PARTITION, "moved")
    assert error.code() == 6 and error.name() == "NOT_LEADER_OR_FOLLOWER"
    assert error.str() == "moved" and error.retriable() and not error.fatal()
    assert error == KafkaError.NOT_LEADER_OR_FOLLOWER
    exception = KafkaException(error)
    assert exception.args[0] is error
    assert "NOT_LEADER_OR_FOLLOWER" in str(exception)


def test_local_errors_use_librdkafka_codes():
    assert KafkaError._MSG_TIMED_OUT == -192
    assert KafkaError(KafkaError._PARTITION_EOF).name() == "_PARTITION_EOF"

"""Message and TopicPartition accessors, as confluent-kafka's."""

from __future__ import annotations

from weir import OFFSET_BEGINNING, OFFSET_END, OFFSET_INVALID, OFFSET_STORED, KafkaError, Message, TopicPartition
from weir.message import TIMESTAMP_CREATE_TIME, TIMESTAMP_LOG_APPEND_TIME, TIMESTAMP_NOT_AVAILABLE


def test_offset_constants_match_confluent_kafka() -> None:
    assert (OFFSET_BEGINNING, OFFSET_END, OFFSET_STORED, OFFSET_INVALID) == (-2, -1, -1000, -1001)
    assert (TIMESTAMP_NOT_AVAILABLE, TIMESTAMP_CREATE_TIME, TIMESTAMP_LOG_APPEND_TIME) == (0, 1, 2)


def test_message_accessors_read_the_record() -> None:
    message = Message("t", 3, (42, 1700, b"k", b"value", (("h", b"1"),)), TIMESTAMP_CREATE_TIME, leader_epoch=5)
    assert message.topic() == "t"
    assert message.partition() == 3
    assert message.offset() == 42
    assert message.key() == b"k"
    assert message.value() == b"value"
    assert message.headers() == [("h", b"1")]
    assert message.timestamp() == (TIMESTAMP_CREATE_TIME, 1700)
    assert message.error() is None
    assert message.leader_epoch() == 5
    assert len(message) == 5 and message.len() == 5


def test_message_without_headers_returns_none() -> None:
    assert Message("t", 0, (0, 1, None, b"v", ())).headers() is None


def test_message_without_timestamp_reports_not_available() -> None:
    assert Message("t", 0).timestamp() == (TIMESTAMP_NOT_AVAILABLE, -1)


def test_log_append_time_is_reported_as_such() -> None:
    assert Message("t", 0, (0, 99, None, None, ()), TIMESTAMP_LOG_APPEND_TIME).timestamp() == (TIMESTAMP_LOG_APPEND_TIME, 99)


def test_error_message_has_no_offset_and_no_value() -> None:
    message = Message("t", 1, error=KafkaError(KafkaError._PARTITION_EOF))
    assert message.offset() is None
    assert message.value() is None
    assert message.error().code() == KafkaError._PARTITION_EOF
    assert len(message) == 0


def test_setters_replace_fields() -> None:
    message = Message("t", 0, (1, 2, b"k", b"v", ()), TIMESTAMP_CREATE_TIME)
    message.set_value(b"new")
    message.set_key(None)
    message.set_headers([("a", b"b")])
    assert (message.key(), message.value(), message.headers(), message.offset()) == (None, b"new", [("a", b"b")], 1)


def test_topic_partition_defaults() -> None:
    tp = TopicPartition("t")
    assert (tp.topic, tp.partition, tp.offset, tp.metadata, tp.leader_epoch, tp.error) == ("t", -1, OFFSET_INVALID, None, None, None)


def test_topic_partitions_key_dicts_by_topic_and_partition() -> None:
    results = {TopicPartition("t", 1, 5): "x"}
    assert results[TopicPartition("t", 1)] == "x"
    assert TopicPartition("t", 1) != TopicPartition("t", 2)
    assert sorted([TopicPartition("b", 0), TopicPartition("a", 1), TopicPartition("a", 0)]) == [
        TopicPartition("a", 0),
        TopicPartition("a", 1),
        TopicPartition("b", 0),
    ]

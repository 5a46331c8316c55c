import logging

import grpc
import pytest

from broker_nodes.coordinator.offset_store import InvalidGroupIdError, OffsetMetadataTooLargeError
from broker_nodes.replica_manager import InvalidRequiredAcksError, ProduceRequestTooLargeError
from broker_nodes.server.errors import BrokerNotReadyError, InvalidRequestError, error_code, error_code_and_message, grpc_status
from broker_nodes.storage import errors as storage_errors
from broker_nodes.topic_registry import InvalidTopicError, UnknownTopicOrPartitionError
from weir.errors import ErrorCode, is_retriable
from weir.records import RecordFormatError, UnsupportedMagicError
from weir.topic_config import InvalidConfigError


@pytest.mark.parametrize(
    "error, expected",
    [
        (storage_errors.OffsetOutOfRangeError(9, 0, 5), ErrorCode.OFFSET_OUT_OF_RANGE),
        (storage_errors.CorruptRecordError("crc", 0), ErrorCode.CORRUPT_MESSAGE),
        (storage_errors.InvalidRecordError("magic"), ErrorCode.INVALID_RECORD),
        (storage_errors.RecordTooLargeError(10, 5), ErrorCode.MESSAGE_TOO_LARGE),
        (storage_errors.RecordBatchTooLargeForSegmentError(10, 5), ErrorCode.RECORD_LIST_TOO_LARGE),
        (storage_errors.InvalidTimestampError(1, "old"), ErrorCode.INVALID_TIMESTAMP),
        (storage_errors.OutOfOrderSequenceError(1, 2, 3), ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER),
        (storage_errors.InvalidProducerEpochError(1, 2, 1), ErrorCode.INVALID_PRODUCER_EPOCH),
        (storage_errors.LogDirectoryError("/data", "disk gone"), ErrorCode.KAFKA_STORAGE_ERROR),
        (InvalidTopicError("../x", "bad"), ErrorCode.INVALID_TOPIC_EXCEPTION),
        (UnknownTopicOrPartitionError("t", 1), ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
        (InvalidConfigError("retention.ms", "x", "not a number"), ErrorCode.INVALID_CONFIG),
        (InvalidRequiredAcksError(3), ErrorCode.INVALID_REQUIRED_ACKS),
        (ProduceRequestTooLargeError(10, 5), ErrorCode.MESSAGE_TOO_LARGE),
        (InvalidGroupIdError(""), ErrorCode.INVALID_GROUP_ID),
        (OffsetMetadataTooLargeError(5000, 4096), ErrorCode.OFFSET_METADATA_TOO_LARGE),
        (RecordFormatError("crc", corrupt=True), ErrorCode.CORRUPT_MESSAGE),
        (RecordFormatError("rule", corrupt=False), ErrorCode.INVALID_RECORD),
        (UnsupportedMagicError(1), ErrorCode.INVALID_RECORD),
    ],
)
def test_typed_errors_map_to_kafka_codes_with_their_message(error, expected):
    code, message = error_code_and_message(error)
    assert code == expected
    assert message == str(error)


@pytest.mark.parametrize(
    "error",
    [UnknownTopicOrPartitionError("t"), storage_errors.LogDirectoryError("/d", "gone"), InvalidTopicError("x", "bad"), InvalidRequiredAcksError(2)],
)
def test_retriable_flags_agree_with_kafkas_table(error):
    assert is_retriable(error_code(error)) == error.retriable


def test_unexpected_error_is_unknown_server_error_and_logged_with_traceback(caplog):
    try:
        raise KeyError("surprise")
    except KeyError as raised:
        error = raised
    with caplog.at_level(logging.ERROR, logger="broker_nodes.server.errors"):
        code, message = error_code_and_message(error)
    assert code == ErrorCode.UNKNOWN_SERVER_ERROR
    assert "KeyError" in message
    assert caplog.records[0].exc_info[0] is KeyError


def test_request_level_errors_map_to_grpc_statuses():
    assert grpc_status(InvalidRequestError("bad")) == grpc.StatusCode.INVALID_ARGUMENT
    assert grpc_status(BrokerNotReadyError("starting")) == grpc.StatusCode.UNAVAILABLE
    assert grpc_status(RuntimeError("boom")) == grpc.StatusCode.INTERNAL

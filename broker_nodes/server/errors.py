"""The one place where typed errors become Kafka error codes, messages and gRPC statuses.

Per-partition (and per-topic, per-resource) failures travel in responses as Kafka's numeric
codes with a message naming the problem; a malformed request as a whole is refused with
gRPC status INVALID_ARGUMENT. An exception nobody expected is answered with
UNKNOWN_SERVER_ERROR and logged with its traceback; it never ends the process.
"""

from __future__ import annotations

import logging

import grpc

from broker_nodes import cluster_state, producer_ids, replica_manager, schema_ids, topic_registry
from broker_nodes.coordinator import offset_store
from broker_nodes.coordinator.groups import classic_errors
from broker_nodes.coordinator.groups import errors as group_errors
from broker_nodes.coordinator.transactions import errors as transaction_errors
from broker_nodes.replication import errors as replication_errors
from broker_nodes.security import errors as security_errors
from broker_nodes.security.authenticator import AuthenticationError, CredentialsUnavailableError
from broker_nodes.storage import errors as storage_errors
from weir import records
from weir.errors import ErrorCode
from weir.topic_config import InvalidConfigError

logger = logging.getLogger(__name__)


class InvalidRequestError(ValueError):
    """A request that breaks the protocol as a whole (gRPC INVALID_ARGUMENT)."""

    retriable = False


class BrokerNotReadyError(Exception):
    """The broker is still recovering its logs or already shutting down (gRPC UNAVAILABLE)."""

    retriable = True


# Exception class -> Kafka error code. Looked up along the exception's class hierarchy, so a
# subclass maps like its closest listed ancestor.
_ERROR_CODES: dict[type[BaseException], int] = {
    storage_errors.OffsetOutOfRangeError: ErrorCode.OFFSET_OUT_OF_RANGE,
    storage_errors.CorruptRecordError: ErrorCode.CORRUPT_MESSAGE,
    storage_errors.InvalidRecordError: ErrorCode.INVALID_RECORD,
    storage_errors.RecordTooLargeError: ErrorCode.MESSAGE_TOO_LARGE,
    storage_errors.RecordBatchTooLargeForSegmentError: ErrorCode.RECORD_LIST_TOO_LARGE,
    storage_errors.InvalidTimestampError: ErrorCode.INVALID_TIMESTAMP,
    storage_errors.OutOfOrderSequenceError: ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
    storage_errors.InvalidProducerEpochError: ErrorCode.INVALID_PRODUCER_EPOCH,
    storage_errors.InvalidTxnStateError: ErrorCode.INVALID_TXN_STATE,
    storage_errors.TransactionCoordinatorFencedError: ErrorCode.TRANSACTION_COORDINATOR_FENCED,
    storage_errors.LogDirectoryError: ErrorCode.KAFKA_STORAGE_ERROR,
    # The storage engine wraps codec errors in its own types; these entries only matter if a
    # codec error ever reaches the server unwrapped.
    records.BatchTooLargeError: ErrorCode.MESSAGE_TOO_LARGE,
    records.UnsupportedMagicError: ErrorCode.INVALID_RECORD,
    topic_registry.InvalidTopicError: ErrorCode.INVALID_TOPIC_EXCEPTION,
    topic_registry.TopicAlreadyExistsError: ErrorCode.TOPIC_ALREADY_EXISTS,
    topic_registry.UnknownTopicOrPartitionError: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    topic_registry.InvalidPartitionsError: ErrorCode.INVALID_PARTITIONS,
    topic_registry.InvalidReplicationFactorError: ErrorCode.INVALID_REPLICATION_FACTOR,
    InvalidConfigError: ErrorCode.INVALID_CONFIG,
    replica_manager.InvalidRequiredAcksError: ErrorCode.INVALID_REQUIRED_ACKS,
    replica_manager.ProduceRequestTooLargeError: ErrorCode.MESSAGE_TOO_LARGE,
    replica_manager.EmptyRecordsError: ErrorCode.INVALID_RECORD,
    replication_errors.FencedLeaderEpochError: ErrorCode.FENCED_LEADER_EPOCH,
    replication_errors.UnknownLeaderEpochError: ErrorCode.UNKNOWN_LEADER_EPOCH,
    replica_manager.InvalidListOffsetsTimestampError: ErrorCode.INVALID_REQUEST,
    producer_ids.InvalidProducerIdMappingError: ErrorCode.INVALID_PRODUCER_ID_MAPPING,
    producer_ids.TransactionsUnsupportedError: ErrorCode.UNSUPPORTED_VERSION,
    offset_store.InvalidGroupIdError: ErrorCode.INVALID_GROUP_ID,
    offset_store.OffsetMetadataTooLargeError: ErrorCode.OFFSET_METADATA_TOO_LARGE,
    offset_store.InvalidCommitOffsetError: ErrorCode.INVALID_REQUEST,
    offset_store.CoordinatorLoadingError: ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    offset_store.NotCoordinatorError: ErrorCode.NOT_COORDINATOR,
    offset_store.CoordinatorNotAvailableError: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    offset_store.UnstableOffsetCommitError: ErrorCode.UNSTABLE_OFFSET_COMMIT,
    transaction_errors.NotTransactionCoordinatorError: ErrorCode.NOT_COORDINATOR,
    transaction_errors.TransactionCoordinatorLoadingError: ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    transaction_errors.TransactionCoordinatorNotAvailableError: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    transaction_errors.InvalidTransactionalIdError: ErrorCode.INVALID_REQUEST,
    transaction_errors.InvalidTransactionTimeoutError: ErrorCode.INVALID_TRANSACTION_TIMEOUT,
    transaction_errors.ConcurrentTransactionsError: ErrorCode.CONCURRENT_TRANSACTIONS,
    transaction_errors.InvalidProducerIdMappingError: ErrorCode.INVALID_PRODUCER_ID_MAPPING,
    transaction_errors.ProducerFencedError: ErrorCode.PRODUCER_FENCED,
    transaction_errors.InvalidTransactionStateError: ErrorCode.INVALID_TXN_STATE,
    transaction_errors.TransactionalIdNotFoundError: ErrorCode.TRANSACTIONAL_ID_NOT_FOUND,
    transaction_errors.TransactionalIdAuthorizationError: ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
    transaction_errors.TransactionVerificationUnavailableError: ErrorCode.NOT_ENOUGH_REPLICAS,
    # The registry could not be asked about a record's schema id: retriable, the batch is not appended.
    schema_ids.SchemaRegistryUnavailableError: ErrorCode.REQUEST_TIMED_OUT,
    group_errors.UnknownMemberIdError: ErrorCode.UNKNOWN_MEMBER_ID,
    group_errors.FencedMemberEpochError: ErrorCode.FENCED_MEMBER_EPOCH,
    group_errors.StaleMemberEpochError: ErrorCode.STALE_MEMBER_EPOCH,
    group_errors.UnreleasedInstanceIdError: ErrorCode.UNRELEASED_INSTANCE_ID,
    group_errors.FencedInstanceIdError: ErrorCode.FENCED_INSTANCE_ID,
    group_errors.UnsupportedAssignorError: ErrorCode.UNSUPPORTED_ASSIGNOR,
    group_errors.GroupMaxSizeReachedError: ErrorCode.GROUP_MAX_SIZE_REACHED,
    group_errors.InvalidGroupRequestError: ErrorCode.INVALID_REQUEST,
    group_errors.InvalidSessionTimeoutError: ErrorCode.INVALID_SESSION_TIMEOUT,
    group_errors.GroupIdNotFoundError: ErrorCode.GROUP_ID_NOT_FOUND,
    group_errors.NonEmptyGroupError: ErrorCode.NON_EMPTY_GROUP,
    # An admin commit to an active group: Kafka's answer to AlterConsumerGroupOffsets then.
    group_errors.ActiveGroupError: ErrorCode.UNKNOWN_MEMBER_ID,
    group_errors.PartitionNotAssignedError: ErrorCode.INVALID_REQUEST,
    classic_errors.RebalanceInProgressError: ErrorCode.REBALANCE_IN_PROGRESS,
    classic_errors.IllegalGenerationError: ErrorCode.ILLEGAL_GENERATION,
    classic_errors.MemberIdRequiredError: ErrorCode.MEMBER_ID_REQUIRED,
    classic_errors.InconsistentGroupProtocolError: ErrorCode.INCONSISTENT_GROUP_PROTOCOL,
    classic_errors.GroupSubscribedToTopicError: ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC,
    InvalidRequestError: ErrorCode.INVALID_REQUEST,
    cluster_state.NotLeaderOrFollowerError: ErrorCode.NOT_LEADER_OR_FOLLOWER,
    replication_errors.NotEnoughReplicasError: ErrorCode.NOT_ENOUGH_REPLICAS,
    replication_errors.NotEnoughReplicasAfterAppendError: ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
    replication_errors.ReplicationTimedOutError: ErrorCode.REQUEST_TIMED_OUT,
    replication_errors.LowWatermarkTimedOutError: ErrorCode.REQUEST_TIMED_OUT,
    replication_errors.ReplicationWaitersFullError: ErrorCode.REQUEST_TIMED_OUT,
    security_errors.TopicAuthorizationError: ErrorCode.TOPIC_AUTHORIZATION_FAILED,
    security_errors.GroupAuthorizationError: ErrorCode.GROUP_AUTHORIZATION_FAILED,
    security_errors.ClusterAuthorizationError: ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
    security_errors.ManagedTopicsPolicyError: ErrorCode.POLICY_VIOLATION,
}


def error_code(error: BaseException) -> int:
    """The Kafka error code for ``error``; UNKNOWN_SERVER_ERROR for an unexpected type."""
    for cls in type(error).__mro__:
        code = _ERROR_CODES.get(cls)
        if code is not None:
            return code
    if isinstance(error, records.RecordFormatError):
        return ErrorCode.CORRUPT_MESSAGE if error.corrupt else ErrorCode.INVALID_RECORD
    return ErrorCode.UNKNOWN_SERVER_ERROR


def error_code_and_message(error: BaseException) -> tuple[int, str]:
    """(Kafka error code, message for the client). Unexpected errors are logged with their traceback."""
    code = error_code(error)
    if code == ErrorCode.UNKNOWN_SERVER_ERROR:
        logger.error("unexpected error while serving a request", exc_info=error)
        return code, f"unexpected server error: {type(error).__name__}: {error}"
    return code, str(error)


def grpc_status(error: BaseException) -> grpc.StatusCode:
    """The gRPC status a whole call fails with when ``error`` escapes a servicer."""
    if isinstance(error, InvalidRequestError):
        return grpc.StatusCode.INVALID_ARGUMENT
    if isinstance(error, (BrokerNotReadyError, CredentialsUnavailableError)):
        return grpc.StatusCode.UNAVAILABLE
    if isinstance(error, AuthenticationError):
        return grpc.StatusCode.UNAUTHENTICATED
    if isinstance(error, cluster_state.StaleSnapshotError):
        return grpc.StatusCode.FAILED_PRECONDITION
    if isinstance(error, cluster_state.InvalidSnapshotError):
        return grpc.StatusCode.INVALID_ARGUMENT
    return grpc.StatusCode.INTERNAL

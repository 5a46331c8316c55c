"""Kafka's error codes, and the ``KafkaError`` / ``KafkaException`` of confluent-kafka's API.

Broker errors travel as Kafka's numeric codes (``error_code`` fields of the gRPC messages),
so that names, numbers and retriability match what Kafka users already know. Errors that
arise inside the client carry confluent-kafka's negative local codes (``_MSG_TIMED_OUT``...).
"""

from __future__ import annotations

import builtins
from dataclasses import dataclass
from typing import ClassVar


@dataclass(frozen=True, slots=True)
class ErrorSpec:
    code: int
    name: str
    retriable: bool
    description: str


_BROKER_ERRORS = [
    ErrorSpec(-1, "UNKNOWN_SERVER_ERROR", False, "The server experienced an unexpected error when processing the request."),
    ErrorSpec(0, "NO_ERROR", False, "Success."),
    ErrorSpec(1, "OFFSET_OUT_OF_RANGE", False, "The requested offset is not within the range of offsets maintained by the server."),
    ErrorSpec(2, "CORRUPT_MESSAGE", True, "The record batch failed its CRC check, is truncated, or is otherwise corrupt."),
    ErrorSpec(3, "UNKNOWN_TOPIC_OR_PARTITION", True, "This server does not host this topic-partition."),
    ErrorSpec(4, "INVALID_FETCH_SIZE", False, "The requested fetch size is invalid."),
    ErrorSpec(5, "LEADER_NOT_AVAILABLE", True, "There is no leader for this topic-partition as we are in the middle of a leadership election."),
    ErrorSpec(6, "NOT_LEADER_OR_FOLLOWER", True, "This server is not the leader or a follower for that topic-partition."),
    ErrorSpec(7, "REQUEST_TIMED_OUT", True, "The request timed out."),
    ErrorSpec(8, "BROKER_NOT_AVAILABLE", False, "The broker is not available."),
    ErrorSpec(9, "REPLICA_NOT_AVAILABLE", True, "The replica is not available for the requested topic-partition."),
    ErrorSpec(10, "MESSAGE_TOO_LARGE", False, "The request included a message larger than the max message size the server will accept."),
    ErrorSpec(11, "STALE_CONTROLLER_EPOCH", False, "The controller moved to another broker."),
    ErrorSpec(12, "OFFSET_METADATA_TOO_LARGE", False, "The metadata field of the offset request was too large."),
    ErrorSpec(13, "NETWORK_EXCEPTION", True, "The server disconnected before a response was received."),
    ErrorSpec(14, "COORDINATOR_LOAD_IN_PROGRESS", True, "The coordinator is loading and hence can't process requests."),
    ErrorSpec(15, "COORDINATOR_NOT_AVAILABLE", True, "The coordinator is not available."),
    ErrorSpec(16, "NOT_COORDINATOR", True, "This is not the correct coordinator."),
    ErrorSpec(17, "INVALID_TOPIC_EXCEPTION", False, "The request attempted to perform an operation on an invalid topic."),
    ErrorSpec(18, "RECORD_LIST_TOO_LARGE", False, "The request included message batch larger than the configured segment size on the server."),
    ErrorSpec(19, "NOT_ENOUGH_REPLICAS", True, "Messages are rejected since there are fewer in-sync replicas than required."),
    ErrorSpec(20, "NOT_ENOUGH_REPLICAS_AFTER_APPEND", True, "Messages are written to the log, but to fewer in-sync replicas than required."),
    ErrorSpec(21, "INVALID_REQUIRED_ACKS", False, "Produce request specified an invalid value for required acks."),
    ErrorSpec(22, "ILLEGAL_GENERATION", False, "Specified group generation id is not valid."),
    ErrorSpec(23, "INCONSISTENT_GROUP_PROTOCOL", False, "The group member's supported protocols are incompatible with those of existing members."),
    ErrorSpec(24, "INVALID_GROUP_ID", False, "The configured groupId is invalid."),
    ErrorSpec(25, "UNKNOWN_MEMBER_ID", False, "The coordinator is not aware of this member."),
    ErrorSpec(26, "INVALID_SESSION_TIMEOUT", False, "The session timeout is not within the range allowed by the broker."),
    ErrorSpec(27, "REBALANCE_IN_PROGRESS", False, "The group is rebalancing, so a rejoin is needed."),
    ErrorSpec(28, "INVALID_COMMIT_OFFSET_SIZE", False, "The committing offset data size is not valid."),
    ErrorSpec(29, "TOPIC_AUTHORIZATION_FAILED", False, "Topic authorization failed."),
    ErrorSpec(30, "GROUP_AUTHORIZATION_FAILED", False, "Group authorization failed."),
    ErrorSpec(31, "CLUSTER_AUTHORIZATION_FAILED", False, "Cluster authorization failed."),
    ErrorSpec(32, "INVALID_TIMESTAMP", False, "The timestamp of the message is out of acceptable range."),
    ErrorSpec(35, "UNSUPPORTED_VERSION", False, "The version of the API or record format is not supported."),
    ErrorSpec(36, "TOPIC_ALREADY_EXISTS", False, "Topic with this name already exists."),
    ErrorSpec(37, "INVALID_PARTITIONS", False, "Number of partitions is below 1 or would shrink."),
    ErrorSpec(38, "INVALID_REPLICATION_FACTOR", False, "Replication factor is below 1 or larger than the number of available brokers."),
    ErrorSpec(39, "INVALID_REPLICA_ASSIGNMENT", False, "Replica assignment is invalid."),
    ErrorSpec(40, "INVALID_CONFIG", False, "Configuration is invalid."),
    ErrorSpec(41, "NOT_CONTROLLER", True, "This is not the correct controller for this cluster."),
    ErrorSpec(42, "INVALID_REQUEST", False, "The request is malformed or violates the protocol."),
    ErrorSpec(44, "POLICY_VIOLATION", False, "Request parameters do not satisfy the configured policy."),
    ErrorSpec(45, "OUT_OF_ORDER_SEQUENCE_NUMBER", False, "The broker received an out of order sequence number."),
    ErrorSpec(46, "DUPLICATE_SEQUENCE_NUMBER", False, "The broker received a duplicate sequence number."),
    ErrorSpec(47, "INVALID_PRODUCER_EPOCH", False, "Producer attempted to produce with an old epoch."),
    ErrorSpec(48, "INVALID_TXN_STATE", False, "The producer attempted a transactional operation in an invalid state."),
    ErrorSpec(49, "INVALID_PRODUCER_ID_MAPPING", False, "The producer attempted to use a producer id which is not currently assigned to its transactional id."),
    ErrorSpec(50, "INVALID_TRANSACTION_TIMEOUT", False, "The transaction timeout is larger than the maximum value allowed by the broker."),
    ErrorSpec(
        51,
        "CONCURRENT_TRANSACTIONS",
        True,
        "The producer attempted to update a transaction while another concurrent operation on the same transaction was ongoing.",
    ),
    ErrorSpec(
        52,
        "TRANSACTION_COORDINATOR_FENCED",
        False,
        "The transaction coordinator sending a transaction marker is no longer the current coordinator for the producer.",
    ),
    ErrorSpec(53, "TRANSACTIONAL_ID_AUTHORIZATION_FAILED", False, "Transactional Id authorization failed."),
    ErrorSpec(55, "OPERATION_NOT_ATTEMPTED", False, "The broker did not attempt to execute this operation."),
    ErrorSpec(56, "KAFKA_STORAGE_ERROR", True, "Disk error when trying to access log file on the disk."),
    ErrorSpec(58, "SASL_AUTHENTICATION_FAILED", False, "Authentication failed."),
    ErrorSpec(59, "UNKNOWN_PRODUCER_ID", False, "The broker has no state for this producer id."),
    ErrorSpec(68, "NON_EMPTY_GROUP", False, "The group is not empty."),
    ErrorSpec(69, "GROUP_ID_NOT_FOUND", False, "The group id does not exist."),
    ErrorSpec(73, "TOPIC_DELETION_DISABLED", False, "Topic deletion is disabled."),
    ErrorSpec(74, "FENCED_LEADER_EPOCH", True, "The leader epoch in the request is older than the epoch on the broker."),
    ErrorSpec(75, "UNKNOWN_LEADER_EPOCH", True, "The leader epoch in the request is newer than the epoch on the broker."),
    ErrorSpec(76, "UNSUPPORTED_COMPRESSION_TYPE", False, "The requesting client does not support the compression type of given partition."),
    ErrorSpec(77, "STALE_BROKER_EPOCH", False, "The broker epoch is not the current one of the broker's session."),
    ErrorSpec(78, "OFFSET_NOT_AVAILABLE", True, "The leader high watermark has not caught up from a recent leader election."),
    ErrorSpec(79, "MEMBER_ID_REQUIRED", False, "The group member needs to have a valid member id before actually entering a consumer group."),
    ErrorSpec(81, "GROUP_MAX_SIZE_REACHED", False, "The consumer group has reached its max size."),
    ErrorSpec(
        82,
        "FENCED_INSTANCE_ID",
        False,
        "The broker rejected this static consumer since another consumer with the same group.instance.id has registered with a different member.id.",
    ),
    ErrorSpec(86, "GROUP_SUBSCRIBED_TO_TOPIC", False, "The consumer group is actively subscribed to the topic."),
    ErrorSpec(87, "INVALID_RECORD", False, "This record has failed the validation on broker and hence will be rejected."),
    ErrorSpec(88, "UNSTABLE_OFFSET_COMMIT", True, "There are unstable offsets that need to be cleared."),
    ErrorSpec(89, "THROTTLING_QUOTA_EXCEEDED", True, "The throttling quota has been exceeded."),
    ErrorSpec(90, "PRODUCER_FENCED", False, "There is a newer producer with the same transactional id which fences the current one."),
    ErrorSpec(100, "UNKNOWN_TOPIC_ID", True, "This server does not host this topic ID."),
    ErrorSpec(105, "TRANSACTIONAL_ID_NOT_FOUND", False, "The transactionalId could not be found."),
    ErrorSpec(110, "FENCED_MEMBER_EPOCH", False, "The member epoch is fenced by the group coordinator."),
    ErrorSpec(111, "UNRELEASED_INSTANCE_ID", False, "The instance ID is still used by another member in the consumer group. That member must leave first."),
    ErrorSpec(112, "UNSUPPORTED_ASSIGNOR", False, "The assignor or its version range is not supported by the consumer group."),
    ErrorSpec(113, "STALE_MEMBER_EPOCH", False, "The member epoch is stale."),
    # The rest of Kafka's codes that librdkafka (confluent-kafka) names: Weir's brokers send few of them.
    ErrorSpec(33, "UNSUPPORTED_SASL_MECHANISM", False, "Unsupported SASL mechanism."),
    ErrorSpec(34, "ILLEGAL_SASL_STATE", False, "Request not valid in current SASL state."),
    ErrorSpec(43, "UNSUPPORTED_FOR_MESSAGE_FORMAT", False, "Message format on broker does not support request."),
    ErrorSpec(54, "SECURITY_DISABLED", False, "Security features are disabled."),
    ErrorSpec(57, "LOG_DIR_NOT_FOUND", False, "The user-specified log directory is not found in the broker config."),
    ErrorSpec(60, "REASSIGNMENT_IN_PROGRESS", False, "Partition reassignment is in progress."),
    ErrorSpec(61, "DELEGATION_TOKEN_AUTH_DISABLED", False, "Delegation Token feature is not enabled."),
    ErrorSpec(62, "DELEGATION_TOKEN_NOT_FOUND", False, "Delegation Token is not found on server."),
    ErrorSpec(63, "DELEGATION_TOKEN_OWNER_MISMATCH", False, "Specified Principal is not valid Owner/Renewer."),
    ErrorSpec(64, "DELEGATION_TOKEN_REQUEST_NOT_ALLOWED", False, "Delegation Token requests are not allowed on this connection."),
    ErrorSpec(65, "DELEGATION_TOKEN_AUTHORIZATION_FAILED", False, "Delegation Token authorization failed."),
    ErrorSpec(66, "DELEGATION_TOKEN_EXPIRED", False, "Delegation Token is expired."),
    ErrorSpec(67, "INVALID_PRINCIPAL_TYPE", False, "Supplied principalType is not supported."),
    ErrorSpec(70, "FETCH_SESSION_ID_NOT_FOUND", True, "The fetch session ID was not found."),
    ErrorSpec(71, "INVALID_FETCH_SESSION_EPOCH", True, "The fetch session epoch is invalid."),
    ErrorSpec(72, "LISTENER_NOT_FOUND", True, "No matching listener."),
    ErrorSpec(80, "PREFERRED_LEADER_NOT_AVAILABLE", True, "Preferred leader was not available."),
    ErrorSpec(83, "ELIGIBLE_LEADERS_NOT_AVAILABLE", True, "Eligible partition leaders are not available."),
    ErrorSpec(84, "ELECTION_NOT_NEEDED", False, "Leader election not needed for topic partition."),
    ErrorSpec(85, "NO_REASSIGNMENT_IN_PROGRESS", False, "No partition reassignment is in progress."),
    ErrorSpec(91, "RESOURCE_NOT_FOUND", False, "Request illegally referred to resource that does not exist."),
    ErrorSpec(92, "DUPLICATE_RESOURCE", False, "Request illegally referred to the same resource twice."),
    ErrorSpec(93, "UNACCEPTABLE_CREDENTIAL", False, "Requested credential would not meet criteria for acceptability."),
    ErrorSpec(
        94, "INCONSISTENT_VOTER_SET", False, "Indicates that the either the sender or recipient of a voter-only request is not one of the expected voters."
    ),
    ErrorSpec(95, "INVALID_UPDATE_VERSION", False, "Invalid update version."),
    ErrorSpec(96, "FEATURE_UPDATE_FAILED", False, "Unable to update finalized features due to server error."),
    ErrorSpec(97, "PRINCIPAL_DESERIALIZATION_FAILURE", False, "Request principal deserialization failed during forwarding."),
    ErrorSpec(103, "INCONSISTENT_TOPIC_ID", False, "The log's topic ID did not match the topic ID in the request."),
    ErrorSpec(114, "MISMATCHED_ENDPOINT_TYPE", False, "The request was sent to an endpoint of the wrong type."),
    ErrorSpec(115, "UNSUPPORTED_ENDPOINT_TYPE", False, "This endpoint type is not supported yet."),
    ErrorSpec(116, "UNKNOWN_CONTROLLER_ID", False, "This controller ID is not known."),
    ErrorSpec(117, "UNKNOWN_SUBSCRIPTION_ID", False, "Client sent a push telemetry request with an invalid or outdated subscription ID."),
    ErrorSpec(118, "TELEMETRY_TOO_LARGE", False, "Client sent a push telemetry request larger than the maximum size the broker will accept."),
    ErrorSpec(119, "INVALID_REGISTRATION", False, "The controller has considered the broker registration to be invalid."),
    ErrorSpec(120, "TRANSACTION_ABORTABLE", False, "The server encountered an error with the transaction."),
    ErrorSpec(121, "INVALID_RECORD_STATE", False, "The record state is invalid."),
    ErrorSpec(122, "SHARE_SESSION_NOT_FOUND", False, "The share session was not found."),
    ErrorSpec(123, "INVALID_SHARE_SESSION_EPOCH", False, "The share session epoch is invalid."),
    ErrorSpec(124, "FENCED_STATE_EPOCH", False, "The share-group state epoch did not match."),
    ErrorSpec(125, "INVALID_VOTER_KEY", False, "The voter key doesn't match the receiving replica's key."),
    ErrorSpec(126, "DUPLICATE_VOTER", False, "The voter is already part of the set of voters."),
    ErrorSpec(127, "VOTER_NOT_FOUND", False, "The voter is not part of the set of voters."),
    ErrorSpec(128, "INVALID_REGULAR_EXPRESSION", False, "The regular expression is not valid."),
    ErrorSpec(129, "REBOOTSTRAP_REQUIRED", False, "Client metadata is stale, client should rebootstrap to obtain new metadata."),
    ErrorSpec(130, "STREAMS_INVALID_TOPOLOGY", False, "The supplied topology is invalid."),
    ErrorSpec(131, "STREAMS_INVALID_TOPOLOGY_EPOCH", False, "The supplied topology epoch is invalid."),
    ErrorSpec(132, "STREAMS_TOPOLOGY_FENCED", False, "The supplied topology epoch is outdated."),
    ErrorSpec(133, "SHARE_SESSION_LIMIT_REACHED", False, "The limit of share sessions has been reached."),
]

# confluent-kafka (librdkafka) local error codes: raised inside the client, never by a broker.
_LOCAL_ERRORS = [
    ErrorSpec(-199, "_BAD_MSG", False, "Received message is incorrect."),
    ErrorSpec(-197, "_DESTROY", False, "The client is being closed."),
    ErrorSpec(-196, "_FAIL", False, "Generic failure."),
    ErrorSpec(-195, "_TRANSPORT", True, "Broker transport failure."),
    ErrorSpec(-192, "_MSG_TIMED_OUT", False, "Message timed out before it could be delivered."),
    ErrorSpec(-191, "_PARTITION_EOF", False, "Reached the end of the partition."),
    ErrorSpec(-190, "_UNKNOWN_PARTITION", False, "Unknown partition."),
    ErrorSpec(-188, "_UNKNOWN_TOPIC", False, "Unknown topic."),
    ErrorSpec(-187, "_ALL_BROKERS_DOWN", True, "All broker connections are down."),
    ErrorSpec(-186, "_INVALID_ARG", False, "Invalid argument or configuration."),
    ErrorSpec(-185, "_TIMED_OUT", True, "Operation timed out."),
    ErrorSpec(-184, "_QUEUE_FULL", True, "The producer's buffer is full."),
    ErrorSpec(-172, "_STATE", False, "Operation not allowed in the current state."),
    ErrorSpec(-168, "_NO_OFFSET", False, "No offset to commit or no stored offset."),
    ErrorSpec(-169, "_AUTHENTICATION", False, "Authentication failure."),
    ErrorSpec(-150, "_FATAL", False, "A fatal error has occurred."),
    ErrorSpec(-147, "_MAX_POLL_EXCEEDED", False, "Application maximum poll interval (max.poll.interval.ms) exceeded."),
    ErrorSpec(-140, "_AUTO_OFFSET_RESET", False, "The fetch offset is out of range and auto.offset.reset is error."),
    ErrorSpec(-152, "_PURGE_QUEUE", False, "Purged from the queue."),
    ErrorSpec(-145, "_NOT_CONFIGURED", False, "Functionality not configured."),
    ErrorSpec(-144, "_FENCED", False, "This instance has been fenced by a newer instance."),
    # The rest of librdkafka's local codes, so that code comparing with them ports unchanged.
    ErrorSpec(-137, "_DESTROY_BROKER", False, "Broker handle destroyed without termination."),
    ErrorSpec(-138, "_INVALID_DIFFERENT_RECORD", False, "an invalid record in the same batch caused the failure of this message too."),
    ErrorSpec(-139, "_LOG_TRUNCATION", False, "Partition log truncation detected."),
    ErrorSpec(-141, "_NOOP", False, "No operation performed."),
    ErrorSpec(-142, "_ASSIGNMENT_LOST", False, "Group partition assignment lost."),
    ErrorSpec(-143, "_APPLICATION", False, "Application generated error."),
    ErrorSpec(-146, "_UNKNOWN_BROKER", False, "Unknown broker."),
    ErrorSpec(-148, "_GAPLESS_GUARANTEE", False, "Gap-less ordering would not be guaranteed if proceeding."),
    ErrorSpec(-149, "_INCONSISTENT", False, "Inconsistent state."),
    ErrorSpec(-151, "_PURGE_INFLIGHT", False, "Purged in flight."),
    ErrorSpec(-153, "_RETRY", True, "Retry operation."),
    ErrorSpec(-154, "_INVALID_TYPE", False, "Invalid type."),
    ErrorSpec(-155, "_UNDERFLOW", False, "Read underflow."),
    ErrorSpec(-156, "_NOENT", False, "No such entry."),
    ErrorSpec(-157, "_READ_ONLY", False, "Read-only object."),
    ErrorSpec(-158, "_PARTIAL", False, "Partial response."),
    ErrorSpec(-159, "_VALUE_DESERIALIZATION", False, "Value deserialization error."),
    ErrorSpec(-160, "_KEY_DESERIALIZATION", False, "Key deserialization error."),
    ErrorSpec(-161, "_VALUE_SERIALIZATION", False, "Value serialization error."),
    ErrorSpec(-162, "_KEY_SERIALIZATION", False, "Key serialization error."),
    ErrorSpec(-163, "_INTR", False, "Operation interrupted."),
    ErrorSpec(-164, "_WAIT_CACHE", False, "Awaiting cache update."),
    ErrorSpec(-165, "_UNSUPPORTED_FEATURE", False, "Required feature not supported by broker."),
    ErrorSpec(-166, "_TIMED_OUT_QUEUE", False, "Timed out in queue."),
    ErrorSpec(-167, "_OUTDATED", False, "Outdated."),
    ErrorSpec(-170, "_NOT_IMPLEMENTED", False, "Not implemented."),
    ErrorSpec(-171, "_UNKNOWN_PROTOCOL", False, "Unknown protocol."),
    ErrorSpec(-173, "_CONFLICT", False, "Conflicting use."),
    ErrorSpec(-174, "_REVOKE_PARTITIONS", False, "Revoke partitions."),
    ErrorSpec(-175, "_ASSIGN_PARTITIONS", False, "Assign partitions."),
    ErrorSpec(-176, "_EXISTING_SUBSCRIPTION", False, "Existing subscription."),
    ErrorSpec(-177, "_PREV_IN_PROGRESS", False, "Previous operation in progress."),
    ErrorSpec(-178, "_IN_PROGRESS", False, "Operation in progress."),
    ErrorSpec(-179, "_UNKNOWN_GROUP", False, "Unknown group."),
    ErrorSpec(-180, "_WAIT_COORD", False, "Waiting for coordinator."),
    ErrorSpec(-181, "_SSL", False, "SSL error."),
    ErrorSpec(-182, "_NODE_UPDATE", False, "Broker node update."),
    ErrorSpec(-183, "_ISR_INSUFF", False, "ISR count insufficient."),
    ErrorSpec(-189, "_FS", False, "File or filesystem error."),
    ErrorSpec(-193, "_RESOLVE", False, "Host resolution failure."),
    ErrorSpec(-194, "_CRIT_SYS_RESOURCE", False, "Critical system resource failure."),
    ErrorSpec(-198, "_BAD_COMPRESSION", False, "Invalid compressed data."),
]

ERRORS_BY_CODE: dict[int, ErrorSpec] = {spec.code: spec for spec in _BROKER_ERRORS + _LOCAL_ERRORS}
ERRORS_BY_NAME: dict[str, ErrorSpec] = {spec.name: spec for spec in _BROKER_ERRORS + _LOCAL_ERRORS}


class _CodeNames:
    """Every name of the two tables above as an ``int`` class attribute of :class:`ErrorCode` and
    :class:`KafkaError`. ``_set_code_names`` sets the values from the tables; the names are
    declared here as well so that the type checker knows them, and import fails when a name is
    in one place and not the other."""

    __slots__ = ()

    UNKNOWN_SERVER_ERROR: ClassVar[int]
    NO_ERROR: ClassVar[int]
    OFFSET_OUT_OF_RANGE: ClassVar[int]
    CORRUPT_MESSAGE: ClassVar[int]
    UNKNOWN_TOPIC_OR_PARTITION: ClassVar[int]
    INVALID_FETCH_SIZE: ClassVar[int]
    LEADER_NOT_AVAILABLE: ClassVar[int]
    NOT_LEADER_OR_FOLLOWER: ClassVar[int]
    REQUEST_TIMED_OUT: ClassVar[int]
    BROKER_NOT_AVAILABLE: ClassVar[int]
    REPLICA_NOT_AVAILABLE: ClassVar[int]
    MESSAGE_TOO_LARGE: ClassVar[int]
    STALE_CONTROLLER_EPOCH: ClassVar[int]
    OFFSET_METADATA_TOO_LARGE: ClassVar[int]
    NETWORK_EXCEPTION: ClassVar[int]
    COORDINATOR_LOAD_IN_PROGRESS: ClassVar[int]
    COORDINATOR_NOT_AVAILABLE: ClassVar[int]
    NOT_COORDINATOR: ClassVar[int]
    INVALID_TOPIC_EXCEPTION: ClassVar[int]
    RECORD_LIST_TOO_LARGE: ClassVar[int]
    NOT_ENOUGH_REPLICAS: ClassVar[int]
    NOT_ENOUGH_REPLICAS_AFTER_APPEND: ClassVar[int]
    INVALID_REQUIRED_ACKS: ClassVar[int]
    ILLEGAL_GENERATION: ClassVar[int]
    INCONSISTENT_GROUP_PROTOCOL: ClassVar[int]
    INVALID_GROUP_ID: ClassVar[int]
    UNKNOWN_MEMBER_ID: ClassVar[int]
    INVALID_SESSION_TIMEOUT: ClassVar[int]
    REBALANCE_IN_PROGRESS: ClassVar[int]
    INVALID_COMMIT_OFFSET_SIZE: ClassVar[int]
    TOPIC_AUTHORIZATION_FAILED: ClassVar[int]
    GROUP_AUTHORIZATION_FAILED: ClassVar[int]
    CLUSTER_AUTHORIZATION_FAILED: ClassVar[int]
    INVALID_TIMESTAMP: ClassVar[int]
    UNSUPPORTED_VERSION: ClassVar[int]
    TOPIC_ALREADY_EXISTS: ClassVar[int]
    INVALID_PARTITIONS: ClassVar[int]
    INVALID_REPLICATION_FACTOR: ClassVar[int]
    INVALID_REPLICA_ASSIGNMENT: ClassVar[int]
    INVALID_CONFIG: ClassVar[int]
    NOT_CONTROLLER: ClassVar[int]
    INVALID_REQUEST: ClassVar[int]
    POLICY_VIOLATION: ClassVar[int]
    OUT_OF_ORDER_SEQUENCE_NUMBER: ClassVar[int]
    DUPLICATE_SEQUENCE_NUMBER: ClassVar[int]
    INVALID_PRODUCER_EPOCH: ClassVar[int]
    INVALID_TXN_STATE: ClassVar[int]
    INVALID_PRODUCER_ID_MAPPING: ClassVar[int]
    INVALID_TRANSACTION_TIMEOUT: ClassVar[int]
    CONCURRENT_TRANSACTIONS: ClassVar[int]
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED: ClassVar[int]
    TRANSACTION_COORDINATOR_FENCED: ClassVar[int]
    OPERATION_NOT_ATTEMPTED: ClassVar[int]
    KAFKA_STORAGE_ERROR: ClassVar[int]
    SASL_AUTHENTICATION_FAILED: ClassVar[int]
    UNKNOWN_PRODUCER_ID: ClassVar[int]
    NON_EMPTY_GROUP: ClassVar[int]
    GROUP_ID_NOT_FOUND: ClassVar[int]
    TOPIC_DELETION_DISABLED: ClassVar[int]
    FENCED_LEADER_EPOCH: ClassVar[int]
    UNKNOWN_LEADER_EPOCH: ClassVar[int]
    UNSUPPORTED_COMPRESSION_TYPE: ClassVar[int]
    STALE_BROKER_EPOCH: ClassVar[int]
    OFFSET_NOT_AVAILABLE: ClassVar[int]
    MEMBER_ID_REQUIRED: ClassVar[int]
    GROUP_MAX_SIZE_REACHED: ClassVar[int]
    FENCED_INSTANCE_ID: ClassVar[int]
    GROUP_SUBSCRIBED_TO_TOPIC: ClassVar[int]
    INVALID_RECORD: ClassVar[int]
    UNSTABLE_OFFSET_COMMIT: ClassVar[int]
    THROTTLING_QUOTA_EXCEEDED: ClassVar[int]
    PRODUCER_FENCED: ClassVar[int]
    UNKNOWN_TOPIC_ID: ClassVar[int]
    TRANSACTIONAL_ID_NOT_FOUND: ClassVar[int]
    FENCED_MEMBER_EPOCH: ClassVar[int]
    UNRELEASED_INSTANCE_ID: ClassVar[int]
    UNSUPPORTED_ASSIGNOR: ClassVar[int]
    STALE_MEMBER_EPOCH: ClassVar[int]
    UNSUPPORTED_SASL_MECHANISM: ClassVar[int]
    ILLEGAL_SASL_STATE: ClassVar[int]
    UNSUPPORTED_FOR_MESSAGE_FORMAT: ClassVar[int]
    SECURITY_DISABLED: ClassVar[int]
    LOG_DIR_NOT_FOUND: ClassVar[int]
    REASSIGNMENT_IN_PROGRESS: ClassVar[int]
    DELEGATION_TOKEN_AUTH_DISABLED: ClassVar[int]
    DELEGATION_TOKEN_NOT_FOUND: ClassVar[int]
    DELEGATION_TOKEN_OWNER_MISMATCH: ClassVar[int]
    DELEGATION_TOKEN_REQUEST_NOT_ALLOWED: ClassVar[int]
    DELEGATION_TOKEN_AUTHORIZATION_FAILED: ClassVar[int]
    DELEGATION_TOKEN_EXPIRED: ClassVar[int]
    INVALID_PRINCIPAL_TYPE: ClassVar[int]
    FETCH_SESSION_ID_NOT_FOUND: ClassVar[int]
    INVALID_FETCH_SESSION_EPOCH: ClassVar[int]
    LISTENER_NOT_FOUND: ClassVar[int]
    PREFERRED_LEADER_NOT_AVAILABLE: ClassVar[int]
    ELIGIBLE_LEADERS_NOT_AVAILABLE: ClassVar[int]
    ELECTION_NOT_NEEDED: ClassVar[int]
    NO_REASSIGNMENT_IN_PROGRESS: ClassVar[int]
    RESOURCE_NOT_FOUND: ClassVar[int]
    DUPLICATE_RESOURCE: ClassVar[int]
    UNACCEPTABLE_CREDENTIAL: ClassVar[int]
    INCONSISTENT_VOTER_SET: ClassVar[int]
    INVALID_UPDATE_VERSION: ClassVar[int]
    FEATURE_UPDATE_FAILED: ClassVar[int]
    PRINCIPAL_DESERIALIZATION_FAILURE: ClassVar[int]
    INCONSISTENT_TOPIC_ID: ClassVar[int]
    MISMATCHED_ENDPOINT_TYPE: ClassVar[int]
    UNSUPPORTED_ENDPOINT_TYPE: ClassVar[int]
    UNKNOWN_CONTROLLER_ID: ClassVar[int]
    UNKNOWN_SUBSCRIPTION_ID: ClassVar[int]
    TELEMETRY_TOO_LARGE: ClassVar[int]
    INVALID_REGISTRATION: ClassVar[int]
    TRANSACTION_ABORTABLE: ClassVar[int]
    INVALID_RECORD_STATE: ClassVar[int]
    SHARE_SESSION_NOT_FOUND: ClassVar[int]
    INVALID_SHARE_SESSION_EPOCH: ClassVar[int]
    FENCED_STATE_EPOCH: ClassVar[int]
    INVALID_VOTER_KEY: ClassVar[int]
    DUPLICATE_VOTER: ClassVar[int]
    VOTER_NOT_FOUND: ClassVar[int]
    INVALID_REGULAR_EXPRESSION: ClassVar[int]
    REBOOTSTRAP_REQUIRED: ClassVar[int]
    STREAMS_INVALID_TOPOLOGY: ClassVar[int]
    STREAMS_INVALID_TOPOLOGY_EPOCH: ClassVar[int]
    STREAMS_TOPOLOGY_FENCED: ClassVar[int]
    SHARE_SESSION_LIMIT_REACHED: ClassVar[int]
    # confluent-kafka's local codes.
    _BAD_MSG: ClassVar[int]
    _DESTROY: ClassVar[int]
    _FAIL: ClassVar[int]
    _TRANSPORT: ClassVar[int]
    _MSG_TIMED_OUT: ClassVar[int]
    _PARTITION_EOF: ClassVar[int]
    _UNKNOWN_PARTITION: ClassVar[int]
    _UNKNOWN_TOPIC: ClassVar[int]
    _ALL_BROKERS_DOWN: ClassVar[int]
    _INVALID_ARG: ClassVar[int]
    _TIMED_OUT: ClassVar[int]
    _QUEUE_FULL: ClassVar[int]
    _STATE: ClassVar[int]
    _NO_OFFSET: ClassVar[int]
    _AUTHENTICATION: ClassVar[int]
    _FATAL: ClassVar[int]
    _MAX_POLL_EXCEEDED: ClassVar[int]
    _AUTO_OFFSET_RESET: ClassVar[int]
    _PURGE_QUEUE: ClassVar[int]
    _NOT_CONFIGURED: ClassVar[int]
    _FENCED: ClassVar[int]
    _DESTROY_BROKER: ClassVar[int]
    _INVALID_DIFFERENT_RECORD: ClassVar[int]
    _LOG_TRUNCATION: ClassVar[int]
    _NOOP: ClassVar[int]
    _ASSIGNMENT_LOST: ClassVar[int]
    _APPLICATION: ClassVar[int]
    _UNKNOWN_BROKER: ClassVar[int]
    _GAPLESS_GUARANTEE: ClassVar[int]
    _INCONSISTENT: ClassVar[int]
    _PURGE_INFLIGHT: ClassVar[int]
    _RETRY: ClassVar[int]
    _INVALID_TYPE: ClassVar[int]
    _UNDERFLOW: ClassVar[int]
    _NOENT: ClassVar[int]
    _READ_ONLY: ClassVar[int]
    _PARTIAL: ClassVar[int]
    _VALUE_DESERIALIZATION: ClassVar[int]
    _KEY_DESERIALIZATION: ClassVar[int]
    _VALUE_SERIALIZATION: ClassVar[int]
    _KEY_SERIALIZATION: ClassVar[int]
    _INTR: ClassVar[int]
    _WAIT_CACHE: ClassVar[int]
    _UNSUPPORTED_FEATURE: ClassVar[int]
    _TIMED_OUT_QUEUE: ClassVar[int]
    _OUTDATED: ClassVar[int]
    _NOT_IMPLEMENTED: ClassVar[int]
    _UNKNOWN_PROTOCOL: ClassVar[int]
    _CONFLICT: ClassVar[int]
    _REVOKE_PARTITIONS: ClassVar[int]
    _ASSIGN_PARTITIONS: ClassVar[int]
    _EXISTING_SUBSCRIPTION: ClassVar[int]
    _PREV_IN_PROGRESS: ClassVar[int]
    _IN_PROGRESS: ClassVar[int]
    _UNKNOWN_GROUP: ClassVar[int]
    _WAIT_COORD: ClassVar[int]
    _SSL: ClassVar[int]
    _NODE_UPDATE: ClassVar[int]
    _ISR_INSUFF: ClassVar[int]
    _FS: ClassVar[int]
    _RESOLVE: ClassVar[int]
    _CRIT_SYS_RESOURCE: ClassVar[int]
    _BAD_COMPRESSION: ClassVar[int]


def _set_code_names(cls: type[_CodeNames]) -> None:
    for spec in _BROKER_ERRORS + _LOCAL_ERRORS:
        setattr(cls, spec.name, spec.code)
    undefined = [name for name in _CodeNames.__annotations__ if name not in ERRORS_BY_NAME]
    if undefined:
        raise RuntimeError(f"error code names declared without a code in the tables: {undefined}")
    undeclared = [name for name in ERRORS_BY_NAME if name not in _CodeNames.__annotations__]
    if undeclared:
        raise RuntimeError(f"error codes in the tables without a declaration in _CodeNames: {undeclared}")


class ErrorCode(_CodeNames):
    """Kafka error codes by name: ``ErrorCode.NOT_LEADER_OR_FOLLOWER == 6``."""


_set_code_names(ErrorCode)


def error_name(code: int) -> str:
    spec = ERRORS_BY_CODE.get(code)
    return spec.name if spec else f"ERROR_{code}"


def is_retriable(code: int) -> bool:
    spec = ERRORS_BY_CODE.get(code)
    return spec.retriable if spec else False


class KafkaError(_CodeNames):
    """An error as confluent-kafka reports it: ``code()``, ``name()``, ``str()``, ``retriable()``.

    Class attributes hold every code by name, with confluent-kafka's older aliases
    (``NOT_LEADER_FOR_PARTITION``, ``MSG_SIZE_TOO_LARGE``, ...) beside Kafka's names.
    """

    __slots__ = ("_code", "_reason", "_fatal", "_retriable", "_txn_requires_abort")

    # confluent-kafka's names for codes Kafka has since renamed.
    NOT_LEADER_FOR_PARTITION: ClassVar[int] = 6
    MSG_SIZE_TOO_LARGE: ClassVar[int] = 10
    TOPIC_EXCEPTION: ClassVar[int] = 17
    INVALID_MSG: ClassVar[int] = 2
    UNKNOWN: ClassVar[int] = -1
    UNKNOWN_TOPIC_OR_PART: ClassVar[int] = 3
    STALE_CTRL_EPOCH: ClassVar[int] = 11
    INVALID_MSG_SIZE: ClassVar[int] = 4

    def __init__(
        self,
        error: int,
        reason: str | None = None,
        fatal: bool = False,
        retriable: bool | None = None,
        txn_requires_abort: bool = False,
    ) -> None:
        self._code = error
        spec = ERRORS_BY_CODE.get(error)
        self._reason = reason if reason else (spec.description if spec else f"error code {error}")
        self._fatal = fatal
        self._retriable = (spec.retriable if spec else False) if retriable is None else retriable
        self._txn_requires_abort = txn_requires_abort

    def code(self) -> int:
        return self._code

    def name(self) -> str:
        return error_name(self._code)

    def str(self) -> str:
        return self._reason

    def fatal(self) -> bool:
        return self._fatal

    def retriable(self) -> bool:
        return self._retriable

    def txn_requires_abort(self) -> bool:
        return self._txn_requires_abort

    # builtins.str: inside this class body, ``str`` names the method above.
    def __str__(self) -> builtins.str:
        return f'KafkaError{{code={self.name()},val={self._code},str="{self._reason}"}}'

    __repr__ = __str__

    def __eq__(self, other: object) -> bool:
        if isinstance(other, KafkaError):
            return self._code == other._code
        if isinstance(other, int):
            return self._code == other
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._code)


_set_code_names(KafkaError)


class BadBatchError(KafkaError):
    """_BAD_MSG for a stored batch whose records cannot be decoded (written before brokers
    validated records, or damaged on disk).

    A KafkaError like any other for applications written for confluent-kafka; tools that
    want to skip the batch read ``first_offset`` / ``last_offset`` and seek to
    ``last_offset + 1`` (``next_offset``) instead of parsing the message.
    """

    __slots__ = ("first_offset", "last_offset")

    def __init__(self, reason: str, first_offset: int, last_offset: int) -> None:
        super().__init__(KafkaError._BAD_MSG, reason)
        self.first_offset = first_offset
        self.last_offset = last_offset

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1


class KafkaException(Exception):
    """Raised by client calls; ``args[0]`` is the :class:`KafkaError`, as in confluent-kafka."""

    def __init__(self, error: KafkaError | int, reason: str | None = None) -> None:
        if isinstance(error, int):
            error = KafkaError(error, reason)
        super().__init__(error)

    @property
    def error(self) -> KafkaError:
        error: KafkaError = self.args[0]  # always a KafkaError: __init__ wraps a bare code
        return error

    def __str__(self) -> str:
        return str(self.args[0])

from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class VerifyTxnPartitionsRequest(_message.Message):
    __slots__ = ("transactional_id", "producer_id", "producer_epoch", "partitions")
    TRANSACTIONAL_ID_FIELD_NUMBER: _ClassVar[int]
    PRODUCER_ID_FIELD_NUMBER: _ClassVar[int]
    PRODUCER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    transactional_id: str
    producer_id: int
    producer_epoch: int
    partitions: _containers.RepeatedCompositeFieldContainer[TxnMarkerPartition]
    def __init__(self, transactional_id: _Optional[str] = ..., producer_id: _Optional[int] = ..., producer_epoch: _Optional[int] = ..., partitions: _Optional[_Iterable[_Union[TxnMarkerPartition, _Mapping]]] = ...) -> None: ...

class VerifyTxnPartitionsResponse(_message.Message):
    __slots__ = ("partitions",)
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    partitions: _containers.RepeatedCompositeFieldContainer[WriteTxnMarkersPartitionResult]
    def __init__(self, partitions: _Optional[_Iterable[_Union[WriteTxnMarkersPartitionResult, _Mapping]]] = ...) -> None: ...

class TxnMarkerPartition(_message.Message):
    __slots__ = ("topic", "partition")
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    topic: str
    partition: int
    def __init__(self, topic: _Optional[str] = ..., partition: _Optional[int] = ...) -> None: ...

class WriteTxnMarkersRequest(_message.Message):
    __slots__ = ("transactional_id", "producer_id", "producer_epoch", "commit", "coordinator_epoch", "partitions", "above_batches")
    TRANSACTIONAL_ID_FIELD_NUMBER: _ClassVar[int]
    PRODUCER_ID_FIELD_NUMBER: _ClassVar[int]
    PRODUCER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    COMMIT_FIELD_NUMBER: _ClassVar[int]
    COORDINATOR_EPOCH_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    ABOVE_BATCHES_FIELD_NUMBER: _ClassVar[int]
    transactional_id: str
    producer_id: int
    producer_epoch: int
    commit: bool
    coordinator_epoch: int
    partitions: _containers.RepeatedCompositeFieldContainer[TxnMarkerPartition]
    above_batches: bool
    def __init__(self, transactional_id: _Optional[str] = ..., producer_id: _Optional[int] = ..., producer_epoch: _Optional[int] = ..., commit: _Optional[bool] = ..., coordinator_epoch: _Optional[int] = ..., partitions: _Optional[_Iterable[_Union[TxnMarkerPartition, _Mapping]]] = ..., above_batches: _Optional[bool] = ...) -> None: ...

class WriteTxnMarkersPartitionResult(_message.Message):
    __slots__ = ("topic", "partition", "error_code", "error_message")
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    topic: str
    partition: int
    error_code: int
    error_message: str
    def __init__(self, topic: _Optional[str] = ..., partition: _Optional[int] = ..., error_code: _Optional[int] = ..., error_message: _Optional[str] = ...) -> None: ...

class WriteTxnMarkersResponse(_message.Message):
    __slots__ = ("partitions",)
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    partitions: _containers.RepeatedCompositeFieldContainer[WriteTxnMarkersPartitionResult]
    def __init__(self, partitions: _Optional[_Iterable[_Union[WriteTxnMarkersPartitionResult, _Mapping]]] = ...) -> None: ...

class ReplicaFetchPartition(_message.Message):
    __slots__ = ("topic", "partition", "fetch_offset", "current_leader_epoch", "log_end_offset", "log_start_offset")
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    FETCH_OFFSET_FIELD_NUMBER: _ClassVar[int]
    CURRENT_LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    LOG_END_OFFSET_FIELD_NUMBER: _ClassVar[int]
    LOG_START_OFFSET_FIELD_NUMBER: _ClassVar[int]
    topic: str
    partition: int
    fetch_offset: int
    current_leader_epoch: int
    log_end_offset: int
    log_start_offset: int
    def __init__(self, topic: _Optional[str] = ..., partition: _Optional[int] = ..., fetch_offset: _Optional[int] = ..., current_leader_epoch: _Optional[int] = ..., log_end_offset: _Optional[int] = ..., log_start_offset: _Optional[int] = ...) -> None: ...

class ReplicaFetchRequest(_message.Message):
    __slots__ = ("replica_id", "max_wait_ms", "min_bytes", "max_bytes", "partitions", "session_id", "session_epoch", "forgotten")
    REPLICA_ID_FIELD_NUMBER: _ClassVar[int]
    MAX_WAIT_MS_FIELD_NUMBER: _ClassVar[int]
    MIN_BYTES_FIELD_NUMBER: _ClassVar[int]
    MAX_BYTES_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_EPOCH_FIELD_NUMBER: _ClassVar[int]
    FORGOTTEN_FIELD_NUMBER: _ClassVar[int]
    replica_id: int
    max_wait_ms: int
    min_bytes: int
    max_bytes: int
    partitions: _containers.RepeatedCompositeFieldContainer[ReplicaFetchPartition]
    session_id: int
    session_epoch: int
    forgotten: _containers.RepeatedCompositeFieldContainer[ReplicaFetchForgottenPartition]
    def __init__(self, replica_id: _Optional[int] = ..., max_wait_ms: _Optional[int] = ..., min_bytes: _Optional[int] = ..., max_bytes: _Optional[int] = ..., partitions: _Optional[_Iterable[_Union[ReplicaFetchPartition, _Mapping]]] = ..., session_id: _Optional[int] = ..., session_epoch: _Optional[int] = ..., forgotten: _Optional[_Iterable[_Union[ReplicaFetchForgottenPartition, _Mapping]]] = ...) -> None: ...

class ReplicaFetchForgottenPartition(_message.Message):
    __slots__ = ("topic", "partition")
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    topic: str
    partition: int
    def __init__(self, topic: _Optional[str] = ..., partition: _Optional[int] = ...) -> None: ...

class ReplicaFetchPartitionResponse(_message.Message):
    __slots__ = ("topic", "partition", "error_code", "error_message", "high_watermark", "log_start_offset", "log_end_offset", "records")
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    HIGH_WATERMARK_FIELD_NUMBER: _ClassVar[int]
    LOG_START_OFFSET_FIELD_NUMBER: _ClassVar[int]
    LOG_END_OFFSET_FIELD_NUMBER: _ClassVar[int]
    RECORDS_FIELD_NUMBER: _ClassVar[int]
    topic: str
    partition: int
    error_code: int
    error_message: str
    high_watermark: int
    log_start_offset: int
    log_end_offset: int
    records: bytes
    def __init__(self, topic: _Optional[str] = ..., partition: _Optional[int] = ..., error_code: _Optional[int] = ..., error_message: _Optional[str] = ..., high_watermark: _Optional[int] = ..., log_start_offset: _Optional[int] = ..., log_end_offset: _Optional[int] = ..., records: _Optional[bytes] = ...) -> None: ...

class ReplicaFetchResponse(_message.Message):
    __slots__ = ("partitions", "error_code", "error_message", "session_id")
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    partitions: _containers.RepeatedCompositeFieldContainer[ReplicaFetchPartitionResponse]
    error_code: int
    error_message: str
    session_id: int
    def __init__(self, partitions: _Optional[_Iterable[_Union[ReplicaFetchPartitionResponse, _Mapping]]] = ..., error_code: _Optional[int] = ..., error_message: _Optional[str] = ..., session_id: _Optional[int] = ...) -> None: ...

class OffsetForLeaderEpochPartition(_message.Message):
    __slots__ = ("topic", "partition", "current_leader_epoch", "leader_epoch")
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    CURRENT_LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    topic: str
    partition: int
    current_leader_epoch: int
    leader_epoch: int
    def __init__(self, topic: _Optional[str] = ..., partition: _Optional[int] = ..., current_leader_epoch: _Optional[int] = ..., leader_epoch: _Optional[int] = ...) -> None: ...

class OffsetForLeaderEpochRequest(_message.Message):
    __slots__ = ("replica_id", "partitions")
    REPLICA_ID_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    replica_id: int
    partitions: _containers.RepeatedCompositeFieldContainer[OffsetForLeaderEpochPartition]
    def __init__(self, replica_id: _Optional[int] = ..., partitions: _Optional[_Iterable[_Union[OffsetForLeaderEpochPartition, _Mapping]]] = ...) -> None: ...

class OffsetForLeaderEpochPartitionResponse(_message.Message):
    __slots__ = ("topic", "partition", "error_code", "error_message", "leader_epoch", "end_offset")
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    END_OFFSET_FIELD_NUMBER: _ClassVar[int]
    topic: str
    partition: int
    error_code: int
    error_message: str
    leader_epoch: int
    end_offset: int
    def __init__(self, topic: _Optional[str] = ..., partition: _Optional[int] = ..., error_code: _Optional[int] = ..., error_message: _Optional[str] = ..., leader_epoch: _Optional[int] = ..., end_offset: _Optional[int] = ...) -> None: ...

class OffsetForLeaderEpochResponse(_message.Message):
    __slots__ = ("partitions",)
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    partitions: _containers.RepeatedCompositeFieldContainer[OffsetForLeaderEpochPartitionResponse]
    def __init__(self, partitions: _Optional[_Iterable[_Union[OffsetForLeaderEpochPartitionResponse, _Mapping]]] = ...) -> None: ...

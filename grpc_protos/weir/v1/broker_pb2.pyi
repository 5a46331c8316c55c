from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ResourceType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    RESOURCE_TYPE_UNSPECIFIED: _ClassVar[ResourceType]
    RESOURCE_TYPE_TOPIC: _ClassVar[ResourceType]
    RESOURCE_TYPE_BROKER: _ClassVar[ResourceType]

class ConfigSource(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    CONFIG_SOURCE_UNKNOWN: _ClassVar[ConfigSource]
    CONFIG_SOURCE_DYNAMIC_TOPIC_CONFIG: _ClassVar[ConfigSource]
    CONFIG_SOURCE_STATIC_BROKER_CONFIG: _ClassVar[ConfigSource]
    CONFIG_SOURCE_DEFAULT_CONFIG: _ClassVar[ConfigSource]

class AlterConfigOp(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ALTER_CONFIG_OP_SET: _ClassVar[AlterConfigOp]
    ALTER_CONFIG_OP_DELETE: _ClassVar[AlterConfigOp]
    ALTER_CONFIG_OP_APPEND: _ClassVar[AlterConfigOp]
    ALTER_CONFIG_OP_SUBTRACT: _ClassVar[AlterConfigOp]

class IsolationLevel(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    READ_UNCOMMITTED: _ClassVar[IsolationLevel]
    READ_COMMITTED: _ClassVar[IsolationLevel]

class CoordinatorKeyType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    COORDINATOR_KEY_TYPE_GROUP: _ClassVar[CoordinatorKeyType]
    COORDINATOR_KEY_TYPE_TRANSACTION: _ClassVar[CoordinatorKeyType]
RESOURCE_TYPE_UNSPECIFIED: ResourceType
RESOURCE_TYPE_TOPIC: ResourceType
RESOURCE_TYPE_BROKER: ResourceType
CONFIG_SOURCE_UNKNOWN: ConfigSource
CONFIG_SOURCE_DYNAMIC_TOPIC_CONFIG: ConfigSource
CONFIG_SOURCE_STATIC_BROKER_CONFIG: ConfigSource
CONFIG_SOURCE_DEFAULT_CONFIG: ConfigSource
ALTER_CONFIG_OP_SET: AlterConfigOp
ALTER_CONFIG_OP_DELETE: AlterConfigOp
ALTER_CONFIG_OP_APPEND: AlterConfigOp
ALTER_CONFIG_OP_SUBTRACT: AlterConfigOp
READ_UNCOMMITTED: IsolationLevel
READ_COMMITTED: IsolationLevel
COORDINATOR_KEY_TYPE_GROUP: CoordinatorKeyType
COORDINATOR_KEY_TYPE_TRANSACTION: CoordinatorKeyType

class MetadataRequest(_message.Message):
    __slots__ = ("topics", "allow_auto_topic_creation", "include_topic_authorized_operations")
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    ALLOW_AUTO_TOPIC_CREATION_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_TOPIC_AUTHORIZED_OPERATIONS_FIELD_NUMBER: _ClassVar[int]
    topics: _containers.RepeatedScalarFieldContainer[str]
    allow_auto_topic_creation: bool
    include_topic_authorized_operations: bool
    def __init__(self, topics: _Optional[_Iterable[str]] = ..., allow_auto_topic_creation: _Optional[bool] = ..., include_topic_authorized_operations: _Optional[bool] = ...) -> None: ...

class BrokerNode(_message.Message):
    __slots__ = ("node_id", "host", "port", "rack", "kafka_port")
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    HOST_FIELD_NUMBER: _ClassVar[int]
    PORT_FIELD_NUMBER: _ClassVar[int]
    RACK_FIELD_NUMBER: _ClassVar[int]
    KAFKA_PORT_FIELD_NUMBER: _ClassVar[int]
    node_id: int
    host: str
    port: int
    rack: str
    kafka_port: int
    def __init__(self, node_id: _Optional[int] = ..., host: _Optional[str] = ..., port: _Optional[int] = ..., rack: _Optional[str] = ..., kafka_port: _Optional[int] = ...) -> None: ...

class PartitionMetadata(_message.Message):
    __slots__ = ("error_code", "error_message", "partition", "leader_id", "leader_epoch", "replicas", "isr", "offline_replicas")
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    LEADER_ID_FIELD_NUMBER: _ClassVar[int]
    LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    REPLICAS_FIELD_NUMBER: _ClassVar[int]
    ISR_FIELD_NUMBER: _ClassVar[int]
    OFFLINE_REPLICAS_FIELD_NUMBER: _ClassVar[int]
    error_code: int
    error_message: str
    partition: int
    leader_id: int
    leader_epoch: int
    replicas: _containers.RepeatedScalarFieldContainer[int]
    isr: _containers.RepeatedScalarFieldContainer[int]
    offline_replicas: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, error_code: _Optional[int] = ..., error_message: _Optional[str] = ..., partition: _Optional[int] = ..., leader_id: _Optional[int] = ..., leader_epoch: _Optional[int] = ..., replicas: _Optional[_Iterable[int]] = ..., isr: _Optional[_Iterable[int]] = ..., offline_replicas: _Optional[_Iterable[int]] = ...) -> None: ...

class TopicMetadata(_message.Message):
    __slots__ = ("error_code", "error_message", "name", "is_internal", "partitions", "topic_id", "authorized_operations_included", "authorized_operations")
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    IS_INTERNAL_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    TOPIC_ID_FIELD_NUMBER: _ClassVar[int]
    AUTHORIZED_OPERATIONS_INCLUDED_FIELD_NUMBER: _ClassVar[int]
    AUTHORIZED_OPERATIONS_FIELD_NUMBER: _ClassVar[int]
    error_code: int
    error_message: str
    name: str
    is_internal: bool
    partitions: _containers.RepeatedCompositeFieldContainer[PartitionMetadata]
    topic_id: str
    authorized_operations_included: bool
    authorized_operations: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, error_code: _Optional[int] = ..., error_message: _Optional[str] = ..., name: _Optional[str] = ..., is_internal: _Optional[bool] = ..., partitions: _Optional[_Iterable[_Union[PartitionMetadata, _Mapping]]] = ..., topic_id: _Optional[str] = ..., authorized_operations_included: _Optional[bool] = ..., authorized_operations: _Optional[_Iterable[str]] = ...) -> None: ...

class MetadataResponse(_message.Message):
    __slots__ = ("brokers", "cluster_id", "controller_id", "topics")
    BROKERS_FIELD_NUMBER: _ClassVar[int]
    CLUSTER_ID_FIELD_NUMBER: _ClassVar[int]
    CONTROLLER_ID_FIELD_NUMBER: _ClassVar[int]
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    brokers: _containers.RepeatedCompositeFieldContainer[BrokerNode]
    cluster_id: str
    controller_id: int
    topics: _containers.RepeatedCompositeFieldContainer[TopicMetadata]
    def __init__(self, brokers: _Optional[_Iterable[_Union[BrokerNode, _Mapping]]] = ..., cluster_id: _Optional[str] = ..., controller_id: _Optional[int] = ..., topics: _Optional[_Iterable[_Union[TopicMetadata, _Mapping]]] = ...) -> None: ...

class TopicConfigEntry(_message.Message):
    __slots__ = ("name", "value")
    NAME_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    name: str
    value: str
    def __init__(self, name: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...

class CreatableTopic(_message.Message):
    __slots__ = ("name", "num_partitions", "replication_factor", "configs")
    NAME_FIELD_NUMBER: _ClassVar[int]
    NUM_PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    REPLICATION_FACTOR_FIELD_NUMBER: _ClassVar[int]
    CONFIGS_FIELD_NUMBER: _ClassVar[int]
    name: str
    num_partitions: int
    replication_factor: int
    configs: _containers.RepeatedCompositeFieldContainer[TopicConfigEntry]
    def __init__(self, name: _Optional[str] = ..., num_partitions: _Optional[int] = ..., replication_factor: _Optional[int] = ..., configs: _Optional[_Iterable[_Union[TopicConfigEntry, _Mapping]]] = ...) -> None: ...

class CreateTopicsRequest(_message.Message):
    __slots__ = ("topics", "validate_only", "timeout_ms")
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    VALIDATE_ONLY_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    topics: _containers.RepeatedCompositeFieldContainer[CreatableTopic]
    validate_only: bool
    timeout_ms: int
    def __init__(self, topics: _Optional[_Iterable[_Union[CreatableTopic, _Mapping]]] = ..., validate_only: _Optional[bool] = ..., timeout_ms: _Optional[int] = ...) -> None: ...

class TopicResult(_message.Message):
    __slots__ = ("name", "error_code", "error_message", "topic_id", "num_partitions", "replication_factor")
    NAME_FIELD_NUMBER: _ClassVar[int]
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    TOPIC_ID_FIELD_NUMBER: _ClassVar[int]
    NUM_PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    REPLICATION_FACTOR_FIELD_NUMBER: _ClassVar[int]
    name: str
    error_code: int
    error_message: str
    topic_id: str
    num_partitions: int
    replication_factor: int
    def __init__(self, name: _Optional[str] = ..., error_code: _Optional[int] = ..., error_message: _Optional[str] = ..., topic_id: _Optional[str] = ..., num_partitions: _Optional[int] = ..., replication_factor: _Optional[int] = ...) -> None: ...

class CreateTopicsResponse(_message.Message):
    __slots__ = ("topics",)
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    topics: _containers.RepeatedCompositeFieldContainer[TopicResult]
    def __init__(self, topics: _Optional[_Iterable[_Union[TopicResult, _Mapping]]] = ...) -> None: ...

class DeleteTopicsRequest(_message.Message):
    __slots__ = ("topics", "timeout_ms")
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    topics: _containers.RepeatedScalarFieldContainer[str]
    timeout_ms: int
    def __init__(self, topics: _Optional[_Iterable[str]] = ..., timeout_ms: _Optional[int] = ...) -> None: ...

class DeleteTopicsResponse(_message.Message):
    __slots__ = ("topics",)
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    topics: _containers.RepeatedCompositeFieldContainer[TopicResult]
    def __init__(self, topics: _Optional[_Iterable[_Union[TopicResult, _Mapping]]] = ...) -> None: ...

class CreatePartitionsTopic(_message.Message):
    __slots__ = ("name", "count")
    NAME_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    name: str
    count: int
    def __init__(self, name: _Optional[str] = ..., count: _Optional[int] = ...) -> None: ...

class CreatePartitionsRequest(_message.Message):
    __slots__ = ("topics", "validate_only", "timeout_ms")
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    VALIDATE_ONLY_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    topics: _containers.RepeatedCompositeFieldContainer[CreatePartitionsTopic]
    validate_only: bool
    timeout_ms: int
    def __init__(self, topics: _Optional[_Iterable[_Union[CreatePartitionsTopic, _Mapping]]] = ..., validate_only: _Optional[bool] = ..., timeout_ms: _Optional[int] = ...) -> None: ...

class CreatePartitionsResponse(_message.Message):
    __slots__ = ("topics",)
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    topics: _containers.RepeatedCompositeFieldContainer[TopicResult]
    def __init__(self, topics: _Optional[_Iterable[_Union[TopicResult, _Mapping]]] = ...) -> None: ...

class ConfigResourceRef(_message.Message):
    __slots__ = ("type", "name", "config_names")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    CONFIG_NAMES_FIELD_NUMBER: _ClassVar[int]
    type: ResourceType
    name: str
    config_names: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, type: _Optional[_Union[ResourceType, str]] = ..., name: _Optional[str] = ..., config_names: _Optional[_Iterable[str]] = ...) -> None: ...

class DescribeConfigsRequest(_message.Message):
    __slots__ = ("resources", "include_documentation", "include_synonyms")
    RESOURCES_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_DOCUMENTATION_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_SYNONYMS_FIELD_NUMBER: _ClassVar[int]
    resources: _containers.RepeatedCompositeFieldContainer[ConfigResourceRef]
    include_documentation: bool
    include_synonyms: bool
    def __init__(self, resources: _Optional[_Iterable[_Union[ConfigResourceRef, _Mapping]]] = ..., include_documentation: _Optional[bool] = ..., include_synonyms: _Optional[bool] = ...) -> None: ...

class ConfigSynonym(_message.Message):
    __slots__ = ("name", "value", "source")
    NAME_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    name: str
    value: str
    source: ConfigSource
    def __init__(self, name: _Optional[str] = ..., value: _Optional[str] = ..., source: _Optional[_Union[ConfigSource, str]] = ...) -> None: ...

class ConfigEntryResult(_message.Message):
    __slots__ = ("name", "value", "read_only", "is_default", "is_sensitive", "source", "documentation", "type", "synonyms")
    NAME_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    READ_ONLY_FIELD_NUMBER: _ClassVar[int]
    IS_DEFAULT_FIELD_NUMBER: _ClassVar[int]
    IS_SENSITIVE_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    DOCUMENTATION_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    SYNONYMS_FIELD_NUMBER: _ClassVar[int]
    name: str
    value: str
    read_only: bool
    is_default: bool
    is_sensitive: bool
    source: ConfigSource
    documentation: str
    type: str
    synonyms: _containers.RepeatedCompositeFieldContainer[ConfigSynonym]
    def __init__(self, name: _Optional[str] = ..., value: _Optional[str] = ..., read_only: _Optional[bool] = ..., is_default: _Optional[bool] = ..., is_sensitive: _Optional[bool] = ..., source: _Optional[_Union[ConfigSource, str]] = ..., documentation: _Optional[str] = ..., type: _Optional[str] = ..., synonyms: _Optional[_Iterable[_Union[ConfigSynonym, _Mapping]]] = ...) -> None: ...

class ConfigResourceResult(_message.Message):
    __slots__ = ("type", "name", "error_code", "error_message", "configs")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    CONFIGS_FIELD_NUMBER: _ClassVar[int]
    type: ResourceType
    name: str
    error_code: int
    error_message: str
    configs: _containers.RepeatedCompositeFieldContainer[ConfigEntryResult]
    def __init__(self, type: _Optional[_Union[ResourceType, str]] = ..., name: _Optional[str] = ..., error_code: _Optional[int] = ..., error_message: _Optional[str] = ..., configs: _Optional[_Iterable[_Union[ConfigEntryResult, _Mapping]]] = ...) -> None: ...

class DescribeConfigsResponse(_message.Message):
    __slots__ = ("resources",)
    RESOURCES_FIELD_NUMBER: _ClassVar[int]
    resources: _containers.RepeatedCompositeFieldContainer[ConfigResourceResult]
    def __init__(self, resources: _Optional[_Iterable[_Union[ConfigResourceResult, _Mapping]]] = ...) -> None: ...

class AlterableConfig(_message.Message):
    __slots__ = ("name", "value", "op")
    NAME_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    OP_FIELD_NUMBER: _ClassVar[int]
    name: str
    value: str
    op: AlterConfigOp
    def __init__(self, name: _Optional[str] = ..., value: _Optional[str] = ..., op: _Optional[_Union[AlterConfigOp, str]] = ...) -> None: ...

class AlterConfigsResource(_message.Message):
    __slots__ = ("type", "name", "configs", "incremental")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    CONFIGS_FIELD_NUMBER: _ClassVar[int]
    INCREMENTAL_FIELD_NUMBER: _ClassVar[int]
    type: ResourceType
    name: str
    configs: _containers.RepeatedCompositeFieldContainer[AlterableConfig]
    incremental: bool
    def __init__(self, type: _Optional[_Union[ResourceType, str]] = ..., name: _Optional[str] = ..., configs: _Optional[_Iterable[_Union[AlterableConfig, _Mapping]]] = ..., incremental: _Optional[bool] = ...) -> None: ...

class AlterConfigsRequest(_message.Message):
    __slots__ = ("resources", "validate_only")
    RESOURCES_FIELD_NUMBER: _ClassVar[int]
    VALIDATE_ONLY_FIELD_NUMBER: _ClassVar[int]
    resources: _containers.RepeatedCompositeFieldContainer[AlterConfigsResource]
    validate_only: bool
    def __init__(self, resources: _Optional[_Iterable[_Union[AlterConfigsResource, _Mapping]]] = ..., validate_only: _Optional[bool] = ...) -> None: ...

class AlterConfigsResponse(_message.Message):
    __slots__ = ("resources",)
    RESOURCES_FIELD_NUMBER: _ClassVar[int]
    resources: _containers.RepeatedCompositeFieldContainer[ConfigResourceResult]
    def __init__(self, resources: _Optional[_Iterable[_Union[ConfigResourceResult, _Mapping]]] = ...) -> None: ...

class ProducePartitionData(_message.Message):
    __slots__ = ("partition", "records")
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    RECORDS_FIELD_NUMBER: _ClassVar[int]
    partition: int
    records: bytes
    def __init__(self, partition: _Optional[int] = ..., records: _Optional[bytes] = ...) -> None: ...

class ProduceTopicData(_message.Message):
    __slots__ = ("topic", "partitions")
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    topic: str
    partitions: _containers.RepeatedCompositeFieldContainer[ProducePartitionData]
    def __init__(self, topic: _Optional[str] = ..., partitions: _Optional[_Iterable[_Union[ProducePartitionData, _Mapping]]] = ...) -> None: ...

class ProduceRequest(_message.Message):
    __slots__ = ("acks", "timeout_ms", "topics", "transactional_id")
    ACKS_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    TRANSACTIONAL_ID_FIELD_NUMBER: _ClassVar[int]
    acks: int
    timeout_ms: int
    topics: _containers.RepeatedCompositeFieldContainer[ProduceTopicData]
    transactional_id: str
    def __init__(self, acks: _Optional[int] = ..., timeout_ms: _Optional[int] = ..., topics: _Optional[_Iterable[_Union[ProduceTopicData, _Mapping]]] = ..., transactional_id: _Optional[str] = ...) -> None: ...

class ProducePartitionResponse(_message.Message):
    __slots__ = ("partition", "error_code", "error_message", "base_offset", "log_append_time_ms", "log_start_offset", "record_errors")
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    BASE_OFFSET_FIELD_NUMBER: _ClassVar[int]
    LOG_APPEND_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    LOG_START_OFFSET_FIELD_NUMBER: _ClassVar[int]
    RECORD_ERRORS_FIELD_NUMBER: _ClassVar[int]
    partition: int
    error_code: int
    error_message: str
    base_offset: int
    log_append_time_ms: int
    log_start_offset: int
    record_errors: _containers.RepeatedCompositeFieldContainer[ProduceRecordError]
    def __init__(self, partition: _Optional[int] = ..., error_code: _Optional[int] = ..., error_message: _Optional[str] = ..., base_offset: _Optional[int] = ..., log_append_time_ms: _Optional[int] = ..., log_start_offset: _Optional[int] = ..., record_errors: _Optional[_Iterable[_Union[ProduceRecordError, _Mapping]]] = ...) -> None: ...

class ProduceRecordError(_message.Message):
    __slots__ = ("batch_index", "message")
    BATCH_INDEX_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    batch_index: int
    message: str
    def __init__(self, batch_index: _Optional[int] = ..., message: _Optional[str] = ...) -> None: ...

class ProduceTopicResponse(_message.Message):
    __slots__ = ("topic", "partitions")
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    topic: str
    partitions: _containers.RepeatedCompositeFieldContainer[ProducePartitionResponse]
    def __init__(self, topic: _Optional[str] = ..., partitions: _Optional[_Iterable[_Union[ProducePartitionResponse, _Mapping]]] = ...) -> None: ...

class ProduceResponse(_message.Message):
    __slots__ = ("topics", "throttle_time_ms")
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    THROTTLE_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    topics: _containers.RepeatedCompositeFieldContainer[ProduceTopicResponse]
    throttle_time_ms: int
    def __init__(self, topics: _Optional[_Iterable[_Union[ProduceTopicResponse, _Mapping]]] = ..., throttle_time_ms: _Optional[int] = ...) -> None: ...

class FetchPartition(_message.Message):
    __slots__ = ("partition", "fetch_offset", "partition_max_bytes", "current_leader_epoch", "last_fetched_epoch")
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    FETCH_OFFSET_FIELD_NUMBER: _ClassVar[int]
    PARTITION_MAX_BYTES_FIELD_NUMBER: _ClassVar[int]
    CURRENT_LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    LAST_FETCHED_EPOCH_FIELD_NUMBER: _ClassVar[int]
    partition: int
    fetch_offset: int
    partition_max_bytes: int
    current_leader_epoch: int
    last_fetched_epoch: int
    def __init__(self, partition: _Optional[int] = ..., fetch_offset: _Optional[int] = ..., partition_max_bytes: _Optional[int] = ..., current_leader_epoch: _Optional[int] = ..., last_fetched_epoch: _Optional[int] = ...) -> None: ...

class FetchTopic(_message.Message):
    __slots__ = ("topic", "partitions")
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    topic: str
    partitions: _containers.RepeatedCompositeFieldContainer[FetchPartition]
    def __init__(self, topic: _Optional[str] = ..., partitions: _Optional[_Iterable[_Union[FetchPartition, _Mapping]]] = ...) -> None: ...

class FetchRequest(_message.Message):
    __slots__ = ("max_wait_ms", "min_bytes", "max_bytes", "isolation_level", "topics", "replica_id")
    MAX_WAIT_MS_FIELD_NUMBER: _ClassVar[int]
    MIN_BYTES_FIELD_NUMBER: _ClassVar[int]
    MAX_BYTES_FIELD_NUMBER: _ClassVar[int]
    ISOLATION_LEVEL_FIELD_NUMBER: _ClassVar[int]
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    REPLICA_ID_FIELD_NUMBER: _ClassVar[int]
    max_wait_ms: int
    min_bytes: int
    max_bytes: int
    isolation_level: IsolationLevel
    topics: _containers.RepeatedCompositeFieldContainer[FetchTopic]
    replica_id: int
    def __init__(self, max_wait_ms: _Optional[int] = ..., min_bytes: _Optional[int] = ..., max_bytes: _Optional[int] = ..., isolation_level: _Optional[_Union[IsolationLevel, str]] = ..., topics: _Optional[_Iterable[_Union[FetchTopic, _Mapping]]] = ..., replica_id: _Optional[int] = ...) -> None: ...

class FetchPartitionResponse(_message.Message):
    __slots__ = ("partition", "error_code", "error_message", "high_watermark", "last_stable_offset", "log_start_offset", "records", "diverging_epoch", "aborted_transactions")
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    HIGH_WATERMARK_FIELD_NUMBER: _ClassVar[int]
    LAST_STABLE_OFFSET_FIELD_NUMBER: _ClassVar[int]
    LOG_START_OFFSET_FIELD_NUMBER: _ClassVar[int]
    RECORDS_FIELD_NUMBER: _ClassVar[int]
    DIVERGING_EPOCH_FIELD_NUMBER: _ClassVar[int]
    ABORTED_TRANSACTIONS_FIELD_NUMBER: _ClassVar[int]
    partition: int
    error_code: int
    error_message: str
    high_watermark: int
    last_stable_offset: int
    log_start_offset: int
    records: bytes
    diverging_epoch: EpochEndOffset
    aborted_transactions: _containers.RepeatedCompositeFieldContainer[AbortedTransaction]
    def __init__(self, partition: _Optional[int] = ..., error_code: _Optional[int] = ..., error_message: _Optional[str] = ..., high_watermark: _Optional[int] = ..., last_stable_offset: _Optional[int] = ..., log_start_offset: _Optional[int] = ..., records: _Optional[bytes] = ..., diverging_epoch: _Optional[_Union[EpochEndOffset, _Mapping]] = ..., aborted_transactions: _Optional[_Iterable[_Union[AbortedTransaction, _Mapping]]] = ...) -> None: ...

class AbortedTransaction(_message.Message):
    __slots__ = ("producer_id", "first_offset")
    PRODUCER_ID_FIELD_NUMBER: _ClassVar[int]
    FIRST_OFFSET_FIELD_NUMBER: _ClassVar[int]
    producer_id: int
    first_offset: int
    def __init__(self, producer_id: _Optional[int] = ..., first_offset: _Optional[int] = ...) -> None: ...

class EpochEndOffset(_message.Message):
    __slots__ = ("epoch", "end_offset")
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    END_OFFSET_FIELD_NUMBER: _ClassVar[int]
    epoch: int
    end_offset: int
    def __init__(self, epoch: _Optional[int] = ..., end_offset: _Optional[int] = ...) -> None: ...

class FetchTopicResponse(_message.Message):
    __slots__ = ("topic", "partitions")
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    topic: str
    partitions: _containers.RepeatedCompositeFieldContainer[FetchPartitionResponse]
    def __init__(self, topic: _Optional[str] = ..., partitions: _Optional[_Iterable[_Union[FetchPartitionResponse, _Mapping]]] = ...) -> None: ...

class FetchResponse(_message.Message):
    __slots__ = ("error_code", "topics", "throttle_time_ms")
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    THROTTLE_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    error_code: int
    topics: _containers.RepeatedCompositeFieldContainer[FetchTopicResponse]
    throttle_time_ms: int
    def __init__(self, error_code: _Optional[int] = ..., topics: _Optional[_Iterable[_Union[FetchTopicResponse, _Mapping]]] = ..., throttle_time_ms: _Optional[int] = ...) -> None: ...

class ListOffsetsPartition(_message.Message):
    __slots__ = ("partition", "timestamp")
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    partition: int
    timestamp: int
    def __init__(self, partition: _Optional[int] = ..., timestamp: _Optional[int] = ...) -> None: ...

class ListOffsetsTopic(_message.Message):
    __slots__ = ("topic", "partitions")
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    topic: str
    partitions: _containers.RepeatedCompositeFieldContainer[ListOffsetsPartition]
    def __init__(self, topic: _Optional[str] = ..., partitions: _Optional[_Iterable[_Union[ListOffsetsPartition, _Mapping]]] = ...) -> None: ...

class ListOffsetsRequest(_message.Message):
    __slots__ = ("isolation_level", "topics")
    ISOLATION_LEVEL_FIELD_NUMBER: _ClassVar[int]
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    isolation_level: IsolationLevel
    topics: _containers.RepeatedCompositeFieldContainer[ListOffsetsTopic]
    def __init__(self, isolation_level: _Optional[_Union[IsolationLevel, str]] = ..., topics: _Optional[_Iterable[_Union[ListOffsetsTopic, _Mapping]]] = ...) -> None: ...

class ListOffsetsPartitionResponse(_message.Message):
    __slots__ = ("partition", "error_code", "error_message", "timestamp", "offset", "leader_epoch")
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    partition: int
    error_code: int
    error_message: str
    timestamp: int
    offset: int
    leader_epoch: int
    def __init__(self, partition: _Optional[int] = ..., error_code: _Optional[int] = ..., error_message: _Optional[str] = ..., timestamp: _Optional[int] = ..., offset: _Optional[int] = ..., leader_epoch: _Optional[int] = ...) -> None: ...

class ListOffsetsTopicResponse(_message.Message):
    __slots__ = ("topic", "partitions")
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    topic: str
    partitions: _containers.RepeatedCompositeFieldContainer[ListOffsetsPartitionResponse]
    def __init__(self, topic: _Optional[str] = ..., partitions: _Optional[_Iterable[_Union[ListOffsetsPartitionResponse, _Mapping]]] = ...) -> None: ...

class ListOffsetsResponse(_message.Message):
    __slots__ = ("topics",)
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    topics: _containers.RepeatedCompositeFieldContainer[ListOffsetsTopicResponse]
    def __init__(self, topics: _Optional[_Iterable[_Union[ListOffsetsTopicResponse, _Mapping]]] = ...) -> None: ...

class InitProducerIdRequest(_message.Message):
    __slots__ = ("transactional_id", "transaction_timeout_ms", "producer_id", "producer_epoch")
    TRANSACTIONAL_ID_FIELD_NUMBER: _ClassVar[int]
    TRANSACTION_TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    PRODUCER_ID_FIELD_NUMBER: _ClassVar[int]
    PRODUCER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    transactional_id: str
    transaction_timeout_ms: int
    producer_id: int
    producer_epoch: int
    def __init__(self, transactional_id: _Optional[str] = ..., transaction_timeout_ms: _Optional[int] = ..., producer_id: _Optional[int] = ..., producer_epoch: _Optional[int] = ...) -> None: ...

class InitProducerIdResponse(_message.Message):
    __slots__ = ("error_code", "error_message", "producer_id", "producer_epoch")
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    PRODUCER_ID_FIELD_NUMBER: _ClassVar[int]
    PRODUCER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    error_code: int
    error_message: str
    producer_id: int
    producer_epoch: int
    def __init__(self, error_code: _Optional[int] = ..., error_message: _Optional[str] = ..., producer_id: _Optional[int] = ..., producer_epoch: _Optional[int] = ...) -> None: ...

class OffsetCommitPartition(_message.Message):
    __slots__ = ("partition", "committed_offset", "committed_leader_epoch", "metadata")
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    COMMITTED_OFFSET_FIELD_NUMBER: _ClassVar[int]
    COMMITTED_LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    partition: int
    committed_offset: int
    committed_leader_epoch: int
    metadata: str
    def __init__(self, partition: _Optional[int] = ..., committed_offset: _Optional[int] = ..., committed_leader_epoch: _Optional[int] = ..., metadata: _Optional[str] = ...) -> None: ...

class OffsetCommitTopic(_message.Message):
    __slots__ = ("topic", "partitions")
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    topic: str
    partitions: _containers.RepeatedCompositeFieldContainer[OffsetCommitPartition]
    def __init__(self, topic: _Optional[str] = ..., partitions: _Optional[_Iterable[_Union[OffsetCommitPartition, _Mapping]]] = ...) -> None: ...

class OffsetCommitRequest(_message.Message):
    __slots__ = ("group_id", "generation_id", "member_id", "topics")
    GROUP_ID_FIELD_NUMBER: _ClassVar[int]
    GENERATION_ID_FIELD_NUMBER: _ClassVar[int]
    MEMBER_ID_FIELD_NUMBER: _ClassVar[int]
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    group_id: str
    generation_id: int
    member_id: str
    topics: _containers.RepeatedCompositeFieldContainer[OffsetCommitTopic]
    def __init__(self, group_id: _Optional[str] = ..., generation_id: _Optional[int] = ..., member_id: _Optional[str] = ..., topics: _Optional[_Iterable[_Union[OffsetCommitTopic, _Mapping]]] = ...) -> None: ...

class OffsetCommitPartitionResponse(_message.Message):
    __slots__ = ("partition", "error_code", "error_message")
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    partition: int
    error_code: int
    error_message: str
    def __init__(self, partition: _Optional[int] = ..., error_code: _Optional[int] = ..., error_message: _Optional[str] = ...) -> None: ...

class OffsetCommitTopicResponse(_message.Message):
    __slots__ = ("topic", "partitions")
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    topic: str
    partitions: _containers.RepeatedCompositeFieldContainer[OffsetCommitPartitionResponse]
    def __init__(self, topic: _Optional[str] = ..., partitions: _Optional[_Iterable[_Union[OffsetCommitPartitionResponse, _Mapping]]] = ...) -> None: ...

class OffsetCommitResponse(_message.Message):
    __slots__ = ("error_code", "error_message", "topics")
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    error_code: int
    error_message: str
    topics: _containers.RepeatedCompositeFieldContainer[OffsetCommitTopicResponse]
    def __init__(self, error_code: _Optional[int] = ..., error_message: _Optional[str] = ..., topics: _Optional[_Iterable[_Union[OffsetCommitTopicResponse, _Mapping]]] = ...) -> None: ...

class OffsetFetchTopic(_message.Message):
    __slots__ = ("topic", "partitions")
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    topic: str
    partitions: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, topic: _Optional[str] = ..., partitions: _Optional[_Iterable[int]] = ...) -> None: ...

class OffsetFetchRequest(_message.Message):
    __slots__ = ("group_id", "topics")
    GROUP_ID_FIELD_NUMBER: _ClassVar[int]
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    group_id: str
    topics: _containers.RepeatedCompositeFieldContainer[OffsetFetchTopic]
    def __init__(self, group_id: _Optional[str] = ..., topics: _Optional[_Iterable[_Union[OffsetFetchTopic, _Mapping]]] = ...) -> None: ...

class OffsetFetchPartitionResponse(_message.Message):
    __slots__ = ("partition", "committed_offset", "committed_leader_epoch", "metadata", "error_code", "error_message")
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    COMMITTED_OFFSET_FIELD_NUMBER: _ClassVar[int]
    COMMITTED_LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    partition: int
    committed_offset: int
    committed_leader_epoch: int
    metadata: str
    error_code: int
    error_message: str
    def __init__(self, partition: _Optional[int] = ..., committed_offset: _Optional[int] = ..., committed_leader_epoch: _Optional[int] = ..., metadata: _Optional[str] = ..., error_code: _Optional[int] = ..., error_message: _Optional[str] = ...) -> None: ...

class OffsetFetchTopicResponse(_message.Message):
    __slots__ = ("topic", "partitions")
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    topic: str
    partitions: _containers.RepeatedCompositeFieldContainer[OffsetFetchPartitionResponse]
    def __init__(self, topic: _Optional[str] = ..., partitions: _Optional[_Iterable[_Union[OffsetFetchPartitionResponse, _Mapping]]] = ...) -> None: ...

class OffsetFetchResponse(_message.Message):
    __slots__ = ("error_code", "error_message", "topics")
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    error_code: int
    error_message: str
    topics: _containers.RepeatedCompositeFieldContainer[OffsetFetchTopicResponse]
    def __init__(self, error_code: _Optional[int] = ..., error_message: _Optional[str] = ..., topics: _Optional[_Iterable[_Union[OffsetFetchTopicResponse, _Mapping]]] = ...) -> None: ...

class FindCoordinatorRequest(_message.Message):
    __slots__ = ("group_ids", "key_type")
    GROUP_IDS_FIELD_NUMBER: _ClassVar[int]
    KEY_TYPE_FIELD_NUMBER: _ClassVar[int]
    group_ids: _containers.RepeatedScalarFieldContainer[str]
    key_type: CoordinatorKeyType
    def __init__(self, group_ids: _Optional[_Iterable[str]] = ..., key_type: _Optional[_Union[CoordinatorKeyType, str]] = ...) -> None: ...

class Coordinator(_message.Message):
    __slots__ = ("group_id", "node_id", "host", "port", "error_code", "error_message")
    GROUP_ID_FIELD_NUMBER: _ClassVar[int]
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    HOST_FIELD_NUMBER: _ClassVar[int]
    PORT_FIELD_NUMBER: _ClassVar[int]
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    group_id: str
    node_id: int
    host: str
    port: int
    error_code: int
    error_message: str
    def __init__(self, group_id: _Optional[str] = ..., node_id: _Optional[int] = ..., host: _Optional[str] = ..., port: _Optional[int] = ..., error_code: _Optional[int] = ..., error_message: _Optional[str] = ...) -> None: ...

class FindCoordinatorResponse(_message.Message):
    __slots__ = ("coordinators",)
    COORDINATORS_FIELD_NUMBER: _ClassVar[int]
    coordinators: _containers.RepeatedCompositeFieldContainer[Coordinator]
    def __init__(self, coordinators: _Optional[_Iterable[_Union[Coordinator, _Mapping]]] = ...) -> None: ...

class TopicPartitions(_message.Message):
    __slots__ = ("topic", "partitions")
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    topic: str
    partitions: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, topic: _Optional[str] = ..., partitions: _Optional[_Iterable[int]] = ...) -> None: ...

class GroupSubscription(_message.Message):
    __slots__ = ("topic_names", "topic_regex")
    TOPIC_NAMES_FIELD_NUMBER: _ClassVar[int]
    TOPIC_REGEX_FIELD_NUMBER: _ClassVar[int]
    topic_names: _containers.RepeatedScalarFieldContainer[str]
    topic_regex: str
    def __init__(self, topic_names: _Optional[_Iterable[str]] = ..., topic_regex: _Optional[str] = ...) -> None: ...

class OwnedPartitions(_message.Message):
    __slots__ = ("topics",)
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    topics: _containers.RepeatedCompositeFieldContainer[TopicPartitions]
    def __init__(self, topics: _Optional[_Iterable[_Union[TopicPartitions, _Mapping]]] = ...) -> None: ...

class ConsumerGroupHeartbeatRequest(_message.Message):
    __slots__ = ("group_id", "member_id", "member_epoch", "instance_id", "rack_id", "rebalance_timeout_ms", "subscription", "server_assignor", "owned", "session_timeout_ms", "client_id")
    GROUP_ID_FIELD_NUMBER: _ClassVar[int]
    MEMBER_ID_FIELD_NUMBER: _ClassVar[int]
    MEMBER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    INSTANCE_ID_FIELD_NUMBER: _ClassVar[int]
    RACK_ID_FIELD_NUMBER: _ClassVar[int]
    REBALANCE_TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    SUBSCRIPTION_FIELD_NUMBER: _ClassVar[int]
    SERVER_ASSIGNOR_FIELD_NUMBER: _ClassVar[int]
    OWNED_FIELD_NUMBER: _ClassVar[int]
    SESSION_TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    CLIENT_ID_FIELD_NUMBER: _ClassVar[int]
    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str
    rack_id: str
    rebalance_timeout_ms: int
    subscription: GroupSubscription
    server_assignor: str
    owned: OwnedPartitions
    session_timeout_ms: int
    client_id: str
    def __init__(self, group_id: _Optional[str] = ..., member_id: _Optional[str] = ..., member_epoch: _Optional[int] = ..., instance_id: _Optional[str] = ..., rack_id: _Optional[str] = ..., rebalance_timeout_ms: _Optional[int] = ..., subscription: _Optional[_Union[GroupSubscription, _Mapping]] = ..., server_assignor: _Optional[str] = ..., owned: _Optional[_Union[OwnedPartitions, _Mapping]] = ..., session_timeout_ms: _Optional[int] = ..., client_id: _Optional[str] = ...) -> None: ...

class ConsumerGroupHeartbeatResponse(_message.Message):
    __slots__ = ("error_code", "error_message", "member_id", "member_epoch", "heartbeat_interval_ms", "assignment")
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    MEMBER_ID_FIELD_NUMBER: _ClassVar[int]
    MEMBER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    HEARTBEAT_INTERVAL_MS_FIELD_NUMBER: _ClassVar[int]
    ASSIGNMENT_FIELD_NUMBER: _ClassVar[int]
    error_code: int
    error_message: str
    member_id: str
    member_epoch: int
    heartbeat_interval_ms: int
    assignment: OwnedPartitions
    def __init__(self, error_code: _Optional[int] = ..., error_message: _Optional[str] = ..., member_id: _Optional[str] = ..., member_epoch: _Optional[int] = ..., heartbeat_interval_ms: _Optional[int] = ..., assignment: _Optional[_Union[OwnedPartitions, _Mapping]] = ...) -> None: ...

class ConsumerGroupDescribeRequest(_message.Message):
    __slots__ = ("group_ids", "include_authorized_operations")
    GROUP_IDS_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_AUTHORIZED_OPERATIONS_FIELD_NUMBER: _ClassVar[int]
    group_ids: _containers.RepeatedScalarFieldContainer[str]
    include_authorized_operations: bool
    def __init__(self, group_ids: _Optional[_Iterable[str]] = ..., include_authorized_operations: _Optional[bool] = ...) -> None: ...

class GroupMemberDescription(_message.Message):
    __slots__ = ("member_id", "instance_id", "rack_id", "member_epoch", "client_id", "client_host", "subscribed_topic_names", "subscribed_topic_regex", "assignment", "target_assignment")
    MEMBER_ID_FIELD_NUMBER: _ClassVar[int]
    INSTANCE_ID_FIELD_NUMBER: _ClassVar[int]
    RACK_ID_FIELD_NUMBER: _ClassVar[int]
    MEMBER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    CLIENT_ID_FIELD_NUMBER: _ClassVar[int]
    CLIENT_HOST_FIELD_NUMBER: _ClassVar[int]
    SUBSCRIBED_TOPIC_NAMES_FIELD_NUMBER: _ClassVar[int]
    SUBSCRIBED_TOPIC_REGEX_FIELD_NUMBER: _ClassVar[int]
    ASSIGNMENT_FIELD_NUMBER: _ClassVar[int]
    TARGET_ASSIGNMENT_FIELD_NUMBER: _ClassVar[int]
    member_id: str
    instance_id: str
    rack_id: str
    member_epoch: int
    client_id: str
    client_host: str
    subscribed_topic_names: _containers.RepeatedScalarFieldContainer[str]
    subscribed_topic_regex: str
    assignment: _containers.RepeatedCompositeFieldContainer[TopicPartitions]
    target_assignment: _containers.RepeatedCompositeFieldContainer[TopicPartitions]
    def __init__(self, member_id: _Optional[str] = ..., instance_id: _Optional[str] = ..., rack_id: _Optional[str] = ..., member_epoch: _Optional[int] = ..., client_id: _Optional[str] = ..., client_host: _Optional[str] = ..., subscribed_topic_names: _Optional[_Iterable[str]] = ..., subscribed_topic_regex: _Optional[str] = ..., assignment: _Optional[_Iterable[_Union[TopicPartitions, _Mapping]]] = ..., target_assignment: _Optional[_Iterable[_Union[TopicPartitions, _Mapping]]] = ...) -> None: ...

class GroupDescription(_message.Message):
    __slots__ = ("group_id", "error_code", "error_message", "state", "group_epoch", "assignment_epoch", "assignor_name", "members", "group_type", "protocol_type", "authorized_operations_included", "authorized_operations")
    GROUP_ID_FIELD_NUMBER: _ClassVar[int]
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    GROUP_EPOCH_FIELD_NUMBER: _ClassVar[int]
    ASSIGNMENT_EPOCH_FIELD_NUMBER: _ClassVar[int]
    ASSIGNOR_NAME_FIELD_NUMBER: _ClassVar[int]
    MEMBERS_FIELD_NUMBER: _ClassVar[int]
    GROUP_TYPE_FIELD_NUMBER: _ClassVar[int]
    PROTOCOL_TYPE_FIELD_NUMBER: _ClassVar[int]
    AUTHORIZED_OPERATIONS_INCLUDED_FIELD_NUMBER: _ClassVar[int]
    AUTHORIZED_OPERATIONS_FIELD_NUMBER: _ClassVar[int]
    group_id: str
    error_code: int
    error_message: str
    state: str
    group_epoch: int
    assignment_epoch: int
    assignor_name: str
    members: _containers.RepeatedCompositeFieldContainer[GroupMemberDescription]
    group_type: str
    protocol_type: str
    authorized_operations_included: bool
    authorized_operations: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, group_id: _Optional[str] = ..., error_code: _Optional[int] = ..., error_message: _Optional[str] = ..., state: _Optional[str] = ..., group_epoch: _Optional[int] = ..., assignment_epoch: _Optional[int] = ..., assignor_name: _Optional[str] = ..., members: _Optional[_Iterable[_Union[GroupMemberDescription, _Mapping]]] = ..., group_type: _Optional[str] = ..., protocol_type: _Optional[str] = ..., authorized_operations_included: _Optional[bool] = ..., authorized_operations: _Optional[_Iterable[str]] = ...) -> None: ...

class ConsumerGroupDescribeResponse(_message.Message):
    __slots__ = ("groups",)
    GROUPS_FIELD_NUMBER: _ClassVar[int]
    groups: _containers.RepeatedCompositeFieldContainer[GroupDescription]
    def __init__(self, groups: _Optional[_Iterable[_Union[GroupDescription, _Mapping]]] = ...) -> None: ...

class ListGroupsRequest(_message.Message):
    __slots__ = ("states_filter", "types_filter")
    STATES_FILTER_FIELD_NUMBER: _ClassVar[int]
    TYPES_FILTER_FIELD_NUMBER: _ClassVar[int]
    states_filter: _containers.RepeatedScalarFieldContainer[str]
    types_filter: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, states_filter: _Optional[_Iterable[str]] = ..., types_filter: _Optional[_Iterable[str]] = ...) -> None: ...

class ListedGroup(_message.Message):
    __slots__ = ("group_id", "state", "protocol_type", "group_type")
    GROUP_ID_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    PROTOCOL_TYPE_FIELD_NUMBER: _ClassVar[int]
    GROUP_TYPE_FIELD_NUMBER: _ClassVar[int]
    group_id: str
    state: str
    protocol_type: str
    group_type: str
    def __init__(self, group_id: _Optional[str] = ..., state: _Optional[str] = ..., protocol_type: _Optional[str] = ..., group_type: _Optional[str] = ...) -> None: ...

class ListGroupsResponse(_message.Message):
    __slots__ = ("error_code", "error_message", "groups")
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    GROUPS_FIELD_NUMBER: _ClassVar[int]
    error_code: int
    error_message: str
    groups: _containers.RepeatedCompositeFieldContainer[ListedGroup]
    def __init__(self, error_code: _Optional[int] = ..., error_message: _Optional[str] = ..., groups: _Optional[_Iterable[_Union[ListedGroup, _Mapping]]] = ...) -> None: ...

class DeleteGroupsRequest(_message.Message):
    __slots__ = ("group_ids",)
    GROUP_IDS_FIELD_NUMBER: _ClassVar[int]
    group_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, group_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class DeletedGroup(_message.Message):
    __slots__ = ("group_id", "error_code", "error_message")
    GROUP_ID_FIELD_NUMBER: _ClassVar[int]
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    group_id: str
    error_code: int
    error_message: str
    def __init__(self, group_id: _Optional[str] = ..., error_code: _Optional[int] = ..., error_message: _Optional[str] = ...) -> None: ...

class DeleteGroupsResponse(_message.Message):
    __slots__ = ("groups",)
    GROUPS_FIELD_NUMBER: _ClassVar[int]
    groups: _containers.RepeatedCompositeFieldContainer[DeletedGroup]
    def __init__(self, groups: _Optional[_Iterable[_Union[DeletedGroup, _Mapping]]] = ...) -> None: ...

class PartitionResult(_message.Message):
    __slots__ = ("partition", "error_code", "error_message")
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    partition: int
    error_code: int
    error_message: str
    def __init__(self, partition: _Optional[int] = ..., error_code: _Optional[int] = ..., error_message: _Optional[str] = ...) -> None: ...

class TopicPartitionResults(_message.Message):
    __slots__ = ("topic", "partitions")
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    topic: str
    partitions: _containers.RepeatedCompositeFieldContainer[PartitionResult]
    def __init__(self, topic: _Optional[str] = ..., partitions: _Optional[_Iterable[_Union[PartitionResult, _Mapping]]] = ...) -> None: ...

class AddPartitionsToTxnRequest(_message.Message):
    __slots__ = ("transactional_id", "producer_id", "producer_epoch", "topics")
    TRANSACTIONAL_ID_FIELD_NUMBER: _ClassVar[int]
    PRODUCER_ID_FIELD_NUMBER: _ClassVar[int]
    PRODUCER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    transactional_id: str
    producer_id: int
    producer_epoch: int
    topics: _containers.RepeatedCompositeFieldContainer[TopicPartitions]
    def __init__(self, transactional_id: _Optional[str] = ..., producer_id: _Optional[int] = ..., producer_epoch: _Optional[int] = ..., topics: _Optional[_Iterable[_Union[TopicPartitions, _Mapping]]] = ...) -> None: ...

class AddPartitionsToTxnResponse(_message.Message):
    __slots__ = ("topics",)
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    topics: _containers.RepeatedCompositeFieldContainer[TopicPartitionResults]
    def __init__(self, topics: _Optional[_Iterable[_Union[TopicPartitionResults, _Mapping]]] = ...) -> None: ...

class AddOffsetsToTxnRequest(_message.Message):
    __slots__ = ("transactional_id", "producer_id", "producer_epoch", "group_id")
    TRANSACTIONAL_ID_FIELD_NUMBER: _ClassVar[int]
    PRODUCER_ID_FIELD_NUMBER: _ClassVar[int]
    PRODUCER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    GROUP_ID_FIELD_NUMBER: _ClassVar[int]
    transactional_id: str
    producer_id: int
    producer_epoch: int
    group_id: str
    def __init__(self, transactional_id: _Optional[str] = ..., producer_id: _Optional[int] = ..., producer_epoch: _Optional[int] = ..., group_id: _Optional[str] = ...) -> None: ...

class AddOffsetsToTxnResponse(_message.Message):
    __slots__ = ("error_code", "error_message")
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    error_code: int
    error_message: str
    def __init__(self, error_code: _Optional[int] = ..., error_message: _Optional[str] = ...) -> None: ...

class EndTxnRequest(_message.Message):
    __slots__ = ("transactional_id", "producer_id", "producer_epoch", "committed")
    TRANSACTIONAL_ID_FIELD_NUMBER: _ClassVar[int]
    PRODUCER_ID_FIELD_NUMBER: _ClassVar[int]
    PRODUCER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    COMMITTED_FIELD_NUMBER: _ClassVar[int]
    transactional_id: str
    producer_id: int
    producer_epoch: int
    committed: bool
    def __init__(self, transactional_id: _Optional[str] = ..., producer_id: _Optional[int] = ..., producer_epoch: _Optional[int] = ..., committed: _Optional[bool] = ...) -> None: ...

class EndTxnResponse(_message.Message):
    __slots__ = ("error_code", "error_message", "producer_id", "producer_epoch")
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    PRODUCER_ID_FIELD_NUMBER: _ClassVar[int]
    PRODUCER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    error_code: int
    error_message: str
    producer_id: int
    producer_epoch: int
    def __init__(self, error_code: _Optional[int] = ..., error_message: _Optional[str] = ..., producer_id: _Optional[int] = ..., producer_epoch: _Optional[int] = ...) -> None: ...

class TxnOffsetCommitPartition(_message.Message):
    __slots__ = ("partition", "committed_offset", "committed_leader_epoch", "metadata")
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    COMMITTED_OFFSET_FIELD_NUMBER: _ClassVar[int]
    COMMITTED_LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    partition: int
    committed_offset: int
    committed_leader_epoch: int
    metadata: str
    def __init__(self, partition: _Optional[int] = ..., committed_offset: _Optional[int] = ..., committed_leader_epoch: _Optional[int] = ..., metadata: _Optional[str] = ...) -> None: ...

class TxnOffsetCommitTopic(_message.Message):
    __slots__ = ("topic", "partitions")
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    topic: str
    partitions: _containers.RepeatedCompositeFieldContainer[TxnOffsetCommitPartition]
    def __init__(self, topic: _Optional[str] = ..., partitions: _Optional[_Iterable[_Union[TxnOffsetCommitPartition, _Mapping]]] = ...) -> None: ...

class TxnOffsetCommitRequest(_message.Message):
    __slots__ = ("transactional_id", "group_id", "producer_id", "producer_epoch", "generation_id", "member_id", "group_instance_id", "topics")
    TRANSACTIONAL_ID_FIELD_NUMBER: _ClassVar[int]
    GROUP_ID_FIELD_NUMBER: _ClassVar[int]
    PRODUCER_ID_FIELD_NUMBER: _ClassVar[int]
    PRODUCER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    GENERATION_ID_FIELD_NUMBER: _ClassVar[int]
    MEMBER_ID_FIELD_NUMBER: _ClassVar[int]
    GROUP_INSTANCE_ID_FIELD_NUMBER: _ClassVar[int]
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    transactional_id: str
    group_id: str
    producer_id: int
    producer_epoch: int
    generation_id: int
    member_id: str
    group_instance_id: str
    topics: _containers.RepeatedCompositeFieldContainer[TxnOffsetCommitTopic]
    def __init__(self, transactional_id: _Optional[str] = ..., group_id: _Optional[str] = ..., producer_id: _Optional[int] = ..., producer_epoch: _Optional[int] = ..., generation_id: _Optional[int] = ..., member_id: _Optional[str] = ..., group_instance_id: _Optional[str] = ..., topics: _Optional[_Iterable[_Union[TxnOffsetCommitTopic, _Mapping]]] = ...) -> None: ...

class TxnOffsetCommitResponse(_message.Message):
    __slots__ = ("topics",)
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    topics: _containers.RepeatedCompositeFieldContainer[TopicPartitionResults]
    def __init__(self, topics: _Optional[_Iterable[_Union[TopicPartitionResults, _Mapping]]] = ...) -> None: ...

class TransactionDescription(_message.Message):
    __slots__ = ("transactional_id", "error_code", "error_message", "state", "producer_id", "producer_epoch", "transaction_timeout_ms", "transaction_start_time_ms", "topics")
    TRANSACTIONAL_ID_FIELD_NUMBER: _ClassVar[int]
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    PRODUCER_ID_FIELD_NUMBER: _ClassVar[int]
    PRODUCER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    TRANSACTION_TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    TRANSACTION_START_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    transactional_id: str
    error_code: int
    error_message: str
    state: str
    producer_id: int
    producer_epoch: int
    transaction_timeout_ms: int
    transaction_start_time_ms: int
    topics: _containers.RepeatedCompositeFieldContainer[TopicPartitions]
    def __init__(self, transactional_id: _Optional[str] = ..., error_code: _Optional[int] = ..., error_message: _Optional[str] = ..., state: _Optional[str] = ..., producer_id: _Optional[int] = ..., producer_epoch: _Optional[int] = ..., transaction_timeout_ms: _Optional[int] = ..., transaction_start_time_ms: _Optional[int] = ..., topics: _Optional[_Iterable[_Union[TopicPartitions, _Mapping]]] = ...) -> None: ...

class DescribeTransactionsRequest(_message.Message):
    __slots__ = ("transactional_ids",)
    TRANSACTIONAL_IDS_FIELD_NUMBER: _ClassVar[int]
    transactional_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, transactional_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class DescribeTransactionsResponse(_message.Message):
    __slots__ = ("transactions",)
    TRANSACTIONS_FIELD_NUMBER: _ClassVar[int]
    transactions: _containers.RepeatedCompositeFieldContainer[TransactionDescription]
    def __init__(self, transactions: _Optional[_Iterable[_Union[TransactionDescription, _Mapping]]] = ...) -> None: ...

class ListTransactionsRequest(_message.Message):
    __slots__ = ("state_filters", "producer_id_filters", "duration_filter_ms")
    STATE_FILTERS_FIELD_NUMBER: _ClassVar[int]
    PRODUCER_ID_FILTERS_FIELD_NUMBER: _ClassVar[int]
    DURATION_FILTER_MS_FIELD_NUMBER: _ClassVar[int]
    state_filters: _containers.RepeatedScalarFieldContainer[str]
    producer_id_filters: _containers.RepeatedScalarFieldContainer[int]
    duration_filter_ms: int
    def __init__(self, state_filters: _Optional[_Iterable[str]] = ..., producer_id_filters: _Optional[_Iterable[int]] = ..., duration_filter_ms: _Optional[int] = ...) -> None: ...

class ListTransactionsResponse(_message.Message):
    __slots__ = ("error_code", "error_message", "unknown_state_filters", "transactions")
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    UNKNOWN_STATE_FILTERS_FIELD_NUMBER: _ClassVar[int]
    TRANSACTIONS_FIELD_NUMBER: _ClassVar[int]
    error_code: int
    error_message: str
    unknown_state_filters: _containers.RepeatedScalarFieldContainer[str]
    transactions: _containers.RepeatedCompositeFieldContainer[TransactionDescription]
    def __init__(self, error_code: _Optional[int] = ..., error_message: _Optional[str] = ..., unknown_state_filters: _Optional[_Iterable[str]] = ..., transactions: _Optional[_Iterable[_Union[TransactionDescription, _Mapping]]] = ...) -> None: ...

class HangingTransaction(_message.Message):
    __slots__ = ("topic", "partition", "producer_id", "producer_epoch", "coordinator_epoch")
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    PRODUCER_ID_FIELD_NUMBER: _ClassVar[int]
    PRODUCER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    COORDINATOR_EPOCH_FIELD_NUMBER: _ClassVar[int]
    topic: str
    partition: int
    producer_id: int
    producer_epoch: int
    coordinator_epoch: int
    def __init__(self, topic: _Optional[str] = ..., partition: _Optional[int] = ..., producer_id: _Optional[int] = ..., producer_epoch: _Optional[int] = ..., coordinator_epoch: _Optional[int] = ...) -> None: ...

class AbortTransactionRequest(_message.Message):
    __slots__ = ("transactional_id", "hanging")
    TRANSACTIONAL_ID_FIELD_NUMBER: _ClassVar[int]
    HANGING_FIELD_NUMBER: _ClassVar[int]
    transactional_id: str
    hanging: HangingTransaction
    def __init__(self, transactional_id: _Optional[str] = ..., hanging: _Optional[_Union[HangingTransaction, _Mapping]] = ...) -> None: ...

class AbortTransactionResponse(_message.Message):
    __slots__ = ("error_code", "error_message")
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    error_code: int
    error_message: str
    def __init__(self, error_code: _Optional[int] = ..., error_message: _Optional[str] = ...) -> None: ...

class FindHangingTransactionsRequest(_message.Message):
    __slots__ = ("topic", "partitions")
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    topic: str
    partitions: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, topic: _Optional[str] = ..., partitions: _Optional[_Iterable[int]] = ...) -> None: ...

class OpenTransaction(_message.Message):
    __slots__ = ("target", "start_offset", "last_timestamp_ms", "open_for_ms")
    TARGET_FIELD_NUMBER: _ClassVar[int]
    START_OFFSET_FIELD_NUMBER: _ClassVar[int]
    LAST_TIMESTAMP_MS_FIELD_NUMBER: _ClassVar[int]
    OPEN_FOR_MS_FIELD_NUMBER: _ClassVar[int]
    target: HangingTransaction
    start_offset: int
    last_timestamp_ms: int
    open_for_ms: int
    def __init__(self, target: _Optional[_Union[HangingTransaction, _Mapping]] = ..., start_offset: _Optional[int] = ..., last_timestamp_ms: _Optional[int] = ..., open_for_ms: _Optional[int] = ...) -> None: ...

class HangingPartition(_message.Message):
    __slots__ = ("partition", "error_code", "error_message", "transactions")
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    TRANSACTIONS_FIELD_NUMBER: _ClassVar[int]
    partition: int
    error_code: int
    error_message: str
    transactions: _containers.RepeatedCompositeFieldContainer[OpenTransaction]
    def __init__(self, partition: _Optional[int] = ..., error_code: _Optional[int] = ..., error_message: _Optional[str] = ..., transactions: _Optional[_Iterable[_Union[OpenTransaction, _Mapping]]] = ...) -> None: ...

class FindHangingTransactionsResponse(_message.Message):
    __slots__ = ("partitions",)
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    partitions: _containers.RepeatedCompositeFieldContainer[HangingPartition]
    def __init__(self, partitions: _Optional[_Iterable[_Union[HangingPartition, _Mapping]]] = ...) -> None: ...

class DescribeClusterRequest(_message.Message):
    __slots__ = ("include_authorized_operations",)
    INCLUDE_AUTHORIZED_OPERATIONS_FIELD_NUMBER: _ClassVar[int]
    include_authorized_operations: bool
    def __init__(self, include_authorized_operations: _Optional[bool] = ...) -> None: ...

class DescribeClusterResponse(_message.Message):
    __slots__ = ("cluster_id", "controller_id", "brokers", "authorized_operations_included", "authorized_operations")
    CLUSTER_ID_FIELD_NUMBER: _ClassVar[int]
    CONTROLLER_ID_FIELD_NUMBER: _ClassVar[int]
    BROKERS_FIELD_NUMBER: _ClassVar[int]
    AUTHORIZED_OPERATIONS_INCLUDED_FIELD_NUMBER: _ClassVar[int]
    AUTHORIZED_OPERATIONS_FIELD_NUMBER: _ClassVar[int]
    cluster_id: str
    controller_id: int
    brokers: _containers.RepeatedCompositeFieldContainer[BrokerNode]
    authorized_operations_included: bool
    authorized_operations: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, cluster_id: _Optional[str] = ..., controller_id: _Optional[int] = ..., brokers: _Optional[_Iterable[_Union[BrokerNode, _Mapping]]] = ..., authorized_operations_included: _Optional[bool] = ..., authorized_operations: _Optional[_Iterable[str]] = ...) -> None: ...

class ClientAclBinding(_message.Message):
    __slots__ = ("resource_type", "resource_name", "pattern_type", "principal", "host", "operation", "permission")
    RESOURCE_TYPE_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_NAME_FIELD_NUMBER: _ClassVar[int]
    PATTERN_TYPE_FIELD_NUMBER: _ClassVar[int]
    PRINCIPAL_FIELD_NUMBER: _ClassVar[int]
    HOST_FIELD_NUMBER: _ClassVar[int]
    OPERATION_FIELD_NUMBER: _ClassVar[int]
    PERMISSION_FIELD_NUMBER: _ClassVar[int]
    resource_type: str
    resource_name: str
    pattern_type: str
    principal: str
    host: str
    operation: str
    permission: str
    def __init__(self, resource_type: _Optional[str] = ..., resource_name: _Optional[str] = ..., pattern_type: _Optional[str] = ..., principal: _Optional[str] = ..., host: _Optional[str] = ..., operation: _Optional[str] = ..., permission: _Optional[str] = ...) -> None: ...

class ClientAclFilter(_message.Message):
    __slots__ = ("resource_type", "resource_name", "pattern_type", "principal", "host", "operation", "permission")
    RESOURCE_TYPE_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_NAME_FIELD_NUMBER: _ClassVar[int]
    PATTERN_TYPE_FIELD_NUMBER: _ClassVar[int]
    PRINCIPAL_FIELD_NUMBER: _ClassVar[int]
    HOST_FIELD_NUMBER: _ClassVar[int]
    OPERATION_FIELD_NUMBER: _ClassVar[int]
    PERMISSION_FIELD_NUMBER: _ClassVar[int]
    resource_type: str
    resource_name: str
    pattern_type: str
    principal: str
    host: str
    operation: str
    permission: str
    def __init__(self, resource_type: _Optional[str] = ..., resource_name: _Optional[str] = ..., pattern_type: _Optional[str] = ..., principal: _Optional[str] = ..., host: _Optional[str] = ..., operation: _Optional[str] = ..., permission: _Optional[str] = ...) -> None: ...

class CreateAclsRequest(_message.Message):
    __slots__ = ("creations",)
    CREATIONS_FIELD_NUMBER: _ClassVar[int]
    creations: _containers.RepeatedCompositeFieldContainer[ClientAclBinding]
    def __init__(self, creations: _Optional[_Iterable[_Union[ClientAclBinding, _Mapping]]] = ...) -> None: ...

class ClientAclCreationResult(_message.Message):
    __slots__ = ("error_code", "error_message")
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    error_code: int
    error_message: str
    def __init__(self, error_code: _Optional[int] = ..., error_message: _Optional[str] = ...) -> None: ...

class ClientCreateAclsResponse(_message.Message):
    __slots__ = ("results",)
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[ClientAclCreationResult]
    def __init__(self, results: _Optional[_Iterable[_Union[ClientAclCreationResult, _Mapping]]] = ...) -> None: ...

class DescribeAclsRequest(_message.Message):
    __slots__ = ("filter",)
    FILTER_FIELD_NUMBER: _ClassVar[int]
    filter: ClientAclFilter
    def __init__(self, filter: _Optional[_Union[ClientAclFilter, _Mapping]] = ...) -> None: ...

class ClientDescribeAclsResponse(_message.Message):
    __slots__ = ("error_code", "error_message", "bindings")
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    BINDINGS_FIELD_NUMBER: _ClassVar[int]
    error_code: int
    error_message: str
    bindings: _containers.RepeatedCompositeFieldContainer[ClientAclBinding]
    def __init__(self, error_code: _Optional[int] = ..., error_message: _Optional[str] = ..., bindings: _Optional[_Iterable[_Union[ClientAclBinding, _Mapping]]] = ...) -> None: ...

class DeleteAclsRequest(_message.Message):
    __slots__ = ("filters",)
    FILTERS_FIELD_NUMBER: _ClassVar[int]
    filters: _containers.RepeatedCompositeFieldContainer[ClientAclFilter]
    def __init__(self, filters: _Optional[_Iterable[_Union[ClientAclFilter, _Mapping]]] = ...) -> None: ...

class ClientDeleteAclsFilterResult(_message.Message):
    __slots__ = ("error_code", "error_message", "deleted")
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    DELETED_FIELD_NUMBER: _ClassVar[int]
    error_code: int
    error_message: str
    deleted: _containers.RepeatedCompositeFieldContainer[ClientAclBinding]
    def __init__(self, error_code: _Optional[int] = ..., error_message: _Optional[str] = ..., deleted: _Optional[_Iterable[_Union[ClientAclBinding, _Mapping]]] = ...) -> None: ...

class ClientDeleteAclsResponse(_message.Message):
    __slots__ = ("results",)
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[ClientDeleteAclsFilterResult]
    def __init__(self, results: _Optional[_Iterable[_Union[ClientDeleteAclsFilterResult, _Mapping]]] = ...) -> None: ...

class DeleteRecordsPartition(_message.Message):
    __slots__ = ("partition", "offset")
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    partition: int
    offset: int
    def __init__(self, partition: _Optional[int] = ..., offset: _Optional[int] = ...) -> None: ...

class DeleteRecordsTopic(_message.Message):
    __slots__ = ("topic", "partitions")
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    topic: str
    partitions: _containers.RepeatedCompositeFieldContainer[DeleteRecordsPartition]
    def __init__(self, topic: _Optional[str] = ..., partitions: _Optional[_Iterable[_Union[DeleteRecordsPartition, _Mapping]]] = ...) -> None: ...

class DeleteRecordsRequest(_message.Message):
    __slots__ = ("topics", "timeout_ms")
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    topics: _containers.RepeatedCompositeFieldContainer[DeleteRecordsTopic]
    timeout_ms: int
    def __init__(self, topics: _Optional[_Iterable[_Union[DeleteRecordsTopic, _Mapping]]] = ..., timeout_ms: _Optional[int] = ...) -> None: ...

class DeleteRecordsResult(_message.Message):
    __slots__ = ("topic", "partition", "error_code", "error_message", "low_watermark")
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    LOW_WATERMARK_FIELD_NUMBER: _ClassVar[int]
    topic: str
    partition: int
    error_code: int
    error_message: str
    low_watermark: int
    def __init__(self, topic: _Optional[str] = ..., partition: _Optional[int] = ..., error_code: _Optional[int] = ..., error_message: _Optional[str] = ..., low_watermark: _Optional[int] = ...) -> None: ...

class DeleteRecordsResponse(_message.Message):
    __slots__ = ("results",)
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[DeleteRecordsResult]
    def __init__(self, results: _Optional[_Iterable[_Union[DeleteRecordsResult, _Mapping]]] = ...) -> None: ...

class DescribeUserScramCredentialsRequest(_message.Message):
    __slots__ = ("users",)
    USERS_FIELD_NUMBER: _ClassVar[int]
    users: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, users: _Optional[_Iterable[str]] = ...) -> None: ...

class ScramCredentialInfo(_message.Message):
    __slots__ = ("mechanism", "iterations")
    MECHANISM_FIELD_NUMBER: _ClassVar[int]
    ITERATIONS_FIELD_NUMBER: _ClassVar[int]
    mechanism: str
    iterations: int
    def __init__(self, mechanism: _Optional[str] = ..., iterations: _Optional[int] = ...) -> None: ...

class UserScramCredentialsResult(_message.Message):
    __slots__ = ("user", "error_code", "error_message", "credential_infos")
    USER_FIELD_NUMBER: _ClassVar[int]
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    CREDENTIAL_INFOS_FIELD_NUMBER: _ClassVar[int]
    user: str
    error_code: int
    error_message: str
    credential_infos: _containers.RepeatedCompositeFieldContainer[ScramCredentialInfo]
    def __init__(self, user: _Optional[str] = ..., error_code: _Optional[int] = ..., error_message: _Optional[str] = ..., credential_infos: _Optional[_Iterable[_Union[ScramCredentialInfo, _Mapping]]] = ...) -> None: ...

class DescribeUserScramCredentialsResponse(_message.Message):
    __slots__ = ("error_code", "error_message", "results")
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    error_code: int
    error_message: str
    results: _containers.RepeatedCompositeFieldContainer[UserScramCredentialsResult]
    def __init__(self, error_code: _Optional[int] = ..., error_message: _Optional[str] = ..., results: _Optional[_Iterable[_Union[UserScramCredentialsResult, _Mapping]]] = ...) -> None: ...

class ScramCredentialDeletion(_message.Message):
    __slots__ = ("user", "mechanism")
    USER_FIELD_NUMBER: _ClassVar[int]
    MECHANISM_FIELD_NUMBER: _ClassVar[int]
    user: str
    mechanism: str
    def __init__(self, user: _Optional[str] = ..., mechanism: _Optional[str] = ...) -> None: ...

class ScramCredentialUpsertion(_message.Message):
    __slots__ = ("user", "mechanism", "iterations", "salt", "salted_password")
    USER_FIELD_NUMBER: _ClassVar[int]
    MECHANISM_FIELD_NUMBER: _ClassVar[int]
    ITERATIONS_FIELD_NUMBER: _ClassVar[int]
    SALT_FIELD_NUMBER: _ClassVar[int]
    SALTED_PASSWORD_FIELD_NUMBER: _ClassVar[int]
    user: str
    mechanism: str
    iterations: int
    salt: bytes
    salted_password: bytes
    def __init__(self, user: _Optional[str] = ..., mechanism: _Optional[str] = ..., iterations: _Optional[int] = ..., salt: _Optional[bytes] = ..., salted_password: _Optional[bytes] = ...) -> None: ...

class AlterUserScramCredentialsRequest(_message.Message):
    __slots__ = ("deletions", "upsertions")
    DELETIONS_FIELD_NUMBER: _ClassVar[int]
    UPSERTIONS_FIELD_NUMBER: _ClassVar[int]
    deletions: _containers.RepeatedCompositeFieldContainer[ScramCredentialDeletion]
    upsertions: _containers.RepeatedCompositeFieldContainer[ScramCredentialUpsertion]
    def __init__(self, deletions: _Optional[_Iterable[_Union[ScramCredentialDeletion, _Mapping]]] = ..., upsertions: _Optional[_Iterable[_Union[ScramCredentialUpsertion, _Mapping]]] = ...) -> None: ...

class AlterUserScramCredentialsResult(_message.Message):
    __slots__ = ("user", "error_code", "error_message")
    USER_FIELD_NUMBER: _ClassVar[int]
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    user: str
    error_code: int
    error_message: str
    def __init__(self, user: _Optional[str] = ..., error_code: _Optional[int] = ..., error_message: _Optional[str] = ...) -> None: ...

class AlterUserScramCredentialsResponse(_message.Message):
    __slots__ = ("results",)
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[AlterUserScramCredentialsResult]
    def __init__(self, results: _Optional[_Iterable[_Union[AlterUserScramCredentialsResult, _Mapping]]] = ...) -> None: ...

class ElectLeadersRequest(_message.Message):
    __slots__ = ("election_type", "all_partitions", "partitions", "timeout_ms")
    ELECTION_TYPE_FIELD_NUMBER: _ClassVar[int]
    ALL_PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    election_type: int
    all_partitions: bool
    partitions: _containers.RepeatedCompositeFieldContainer[TopicPartitions]
    timeout_ms: int
    def __init__(self, election_type: _Optional[int] = ..., all_partitions: _Optional[bool] = ..., partitions: _Optional[_Iterable[_Union[TopicPartitions, _Mapping]]] = ..., timeout_ms: _Optional[int] = ...) -> None: ...

class ElectionResult(_message.Message):
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

class ElectLeadersResponse(_message.Message):
    __slots__ = ("error_code", "error_message", "results")
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    error_code: int
    error_message: str
    results: _containers.RepeatedCompositeFieldContainer[ElectionResult]
    def __init__(self, error_code: _Optional[int] = ..., error_message: _Optional[str] = ..., results: _Optional[_Iterable[_Union[ElectionResult, _Mapping]]] = ...) -> None: ...

from grpc_protos.weir.v1 import broker_pb2 as _broker_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class AclResourceType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ACL_RESOURCE_TYPE_UNSPECIFIED: _ClassVar[AclResourceType]
    ACL_RESOURCE_TYPE_TOPIC: _ClassVar[AclResourceType]
    ACL_RESOURCE_TYPE_GROUP: _ClassVar[AclResourceType]
    ACL_RESOURCE_TYPE_CLUSTER: _ClassVar[AclResourceType]
    ACL_RESOURCE_TYPE_TRANSACTIONAL_ID: _ClassVar[AclResourceType]

class AclPatternType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ACL_PATTERN_TYPE_UNSPECIFIED: _ClassVar[AclPatternType]
    ACL_PATTERN_TYPE_LITERAL: _ClassVar[AclPatternType]
    ACL_PATTERN_TYPE_PREFIXED: _ClassVar[AclPatternType]

class AclOperation(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ACL_OPERATION_UNSPECIFIED: _ClassVar[AclOperation]
    ACL_OPERATION_ALL: _ClassVar[AclOperation]
    ACL_OPERATION_READ: _ClassVar[AclOperation]
    ACL_OPERATION_WRITE: _ClassVar[AclOperation]
    ACL_OPERATION_CREATE: _ClassVar[AclOperation]
    ACL_OPERATION_DELETE: _ClassVar[AclOperation]
    ACL_OPERATION_ALTER: _ClassVar[AclOperation]
    ACL_OPERATION_DESCRIBE: _ClassVar[AclOperation]
    ACL_OPERATION_DESCRIBE_CONFIGS: _ClassVar[AclOperation]
    ACL_OPERATION_ALTER_CONFIGS: _ClassVar[AclOperation]
    ACL_OPERATION_IDEMPOTENT_WRITE: _ClassVar[AclOperation]

class AclPermission(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ACL_PERMISSION_UNSPECIFIED: _ClassVar[AclPermission]
    ACL_PERMISSION_ALLOW: _ClassVar[AclPermission]
    ACL_PERMISSION_DENY: _ClassVar[AclPermission]
ACL_RESOURCE_TYPE_UNSPECIFIED: AclResourceType
ACL_RESOURCE_TYPE_TOPIC: AclResourceType
ACL_RESOURCE_TYPE_GROUP: AclResourceType
ACL_RESOURCE_TYPE_CLUSTER: AclResourceType
ACL_RESOURCE_TYPE_TRANSACTIONAL_ID: AclResourceType
ACL_PATTERN_TYPE_UNSPECIFIED: AclPatternType
ACL_PATTERN_TYPE_LITERAL: AclPatternType
ACL_PATTERN_TYPE_PREFIXED: AclPatternType
ACL_OPERATION_UNSPECIFIED: AclOperation
ACL_OPERATION_ALL: AclOperation
ACL_OPERATION_READ: AclOperation
ACL_OPERATION_WRITE: AclOperation
ACL_OPERATION_CREATE: AclOperation
ACL_OPERATION_DELETE: AclOperation
ACL_OPERATION_ALTER: AclOperation
ACL_OPERATION_DESCRIBE: AclOperation
ACL_OPERATION_DESCRIBE_CONFIGS: AclOperation
ACL_OPERATION_ALTER_CONFIGS: AclOperation
ACL_OPERATION_IDEMPOTENT_WRITE: AclOperation
ACL_PERMISSION_UNSPECIFIED: AclPermission
ACL_PERMISSION_ALLOW: AclPermission
ACL_PERMISSION_DENY: AclPermission

class PartitionAssignment(_message.Message):
    __slots__ = ("partition", "leader_id", "leader_epoch", "replicas", "isr")
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    LEADER_ID_FIELD_NUMBER: _ClassVar[int]
    LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    REPLICAS_FIELD_NUMBER: _ClassVar[int]
    ISR_FIELD_NUMBER: _ClassVar[int]
    partition: int
    leader_id: int
    leader_epoch: int
    replicas: _containers.RepeatedScalarFieldContainer[int]
    isr: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, partition: _Optional[int] = ..., leader_id: _Optional[int] = ..., leader_epoch: _Optional[int] = ..., replicas: _Optional[_Iterable[int]] = ..., isr: _Optional[_Iterable[int]] = ...) -> None: ...

class TopicAssignment(_message.Message):
    __slots__ = ("tenant_id", "name", "topic_id", "configs", "partitions")
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    TOPIC_ID_FIELD_NUMBER: _ClassVar[int]
    CONFIGS_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    tenant_id: str
    name: str
    topic_id: str
    configs: _containers.RepeatedCompositeFieldContainer[_broker_pb2.TopicConfigEntry]
    partitions: _containers.RepeatedCompositeFieldContainer[PartitionAssignment]
    def __init__(self, tenant_id: _Optional[str] = ..., name: _Optional[str] = ..., topic_id: _Optional[str] = ..., configs: _Optional[_Iterable[_Union[_broker_pb2.TopicConfigEntry, _Mapping]]] = ..., partitions: _Optional[_Iterable[_Union[PartitionAssignment, _Mapping]]] = ...) -> None: ...

class ApplyPartitionsRequest(_message.Message):
    __slots__ = ("version", "cluster_id", "brokers", "topics", "controller_epoch")
    VERSION_FIELD_NUMBER: _ClassVar[int]
    CLUSTER_ID_FIELD_NUMBER: _ClassVar[int]
    BROKERS_FIELD_NUMBER: _ClassVar[int]
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    CONTROLLER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    version: int
    cluster_id: str
    brokers: _containers.RepeatedCompositeFieldContainer[_broker_pb2.BrokerNode]
    topics: _containers.RepeatedCompositeFieldContainer[TopicAssignment]
    controller_epoch: int
    def __init__(self, version: _Optional[int] = ..., cluster_id: _Optional[str] = ..., brokers: _Optional[_Iterable[_Union[_broker_pb2.BrokerNode, _Mapping]]] = ..., topics: _Optional[_Iterable[_Union[TopicAssignment, _Mapping]]] = ..., controller_epoch: _Optional[int] = ...) -> None: ...

class ApplyPartitionsResponse(_message.Message):
    __slots__ = ("applied_version", "partitions_created", "partitions_deleted", "topics_reconfigured", "failed_partitions")
    APPLIED_VERSION_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_CREATED_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_DELETED_FIELD_NUMBER: _ClassVar[int]
    TOPICS_RECONFIGURED_FIELD_NUMBER: _ClassVar[int]
    FAILED_PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    applied_version: int
    partitions_created: int
    partitions_deleted: int
    topics_reconfigured: int
    failed_partitions: _containers.RepeatedCompositeFieldContainer[PartitionFailure]
    def __init__(self, applied_version: _Optional[int] = ..., partitions_created: _Optional[int] = ..., partitions_deleted: _Optional[int] = ..., topics_reconfigured: _Optional[int] = ..., failed_partitions: _Optional[_Iterable[_Union[PartitionFailure, _Mapping]]] = ...) -> None: ...

class PartitionFailure(_message.Message):
    __slots__ = ("tenant_id", "topic", "topic_id", "partition", "error_code", "error_message", "retriable")
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    TOPIC_ID_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    RETRIABLE_FIELD_NUMBER: _ClassVar[int]
    tenant_id: str
    topic: str
    topic_id: str
    partition: int
    error_code: int
    error_message: str
    retriable: bool
    def __init__(self, tenant_id: _Optional[str] = ..., topic: _Optional[str] = ..., topic_id: _Optional[str] = ..., partition: _Optional[int] = ..., error_code: _Optional[int] = ..., error_message: _Optional[str] = ..., retriable: _Optional[bool] = ...) -> None: ...

class Credential(_message.Message):
    __slots__ = ("api_key", "secret_sha256", "tenant_id", "principal", "scram", "cluster_admin")
    API_KEY_FIELD_NUMBER: _ClassVar[int]
    SECRET_SHA256_FIELD_NUMBER: _ClassVar[int]
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    PRINCIPAL_FIELD_NUMBER: _ClassVar[int]
    SCRAM_FIELD_NUMBER: _ClassVar[int]
    CLUSTER_ADMIN_FIELD_NUMBER: _ClassVar[int]
    api_key: str
    secret_sha256: str
    tenant_id: str
    principal: str
    scram: _containers.RepeatedCompositeFieldContainer[ScramCredential]
    cluster_admin: bool
    def __init__(self, api_key: _Optional[str] = ..., secret_sha256: _Optional[str] = ..., tenant_id: _Optional[str] = ..., principal: _Optional[str] = ..., scram: _Optional[_Iterable[_Union[ScramCredential, _Mapping]]] = ..., cluster_admin: _Optional[bool] = ...) -> None: ...

class ScramCredential(_message.Message):
    __slots__ = ("mechanism", "salt", "iterations", "stored_key", "server_key")
    MECHANISM_FIELD_NUMBER: _ClassVar[int]
    SALT_FIELD_NUMBER: _ClassVar[int]
    ITERATIONS_FIELD_NUMBER: _ClassVar[int]
    STORED_KEY_FIELD_NUMBER: _ClassVar[int]
    SERVER_KEY_FIELD_NUMBER: _ClassVar[int]
    mechanism: str
    salt: bytes
    iterations: int
    stored_key: bytes
    server_key: bytes
    def __init__(self, mechanism: _Optional[str] = ..., salt: _Optional[bytes] = ..., iterations: _Optional[int] = ..., stored_key: _Optional[bytes] = ..., server_key: _Optional[bytes] = ...) -> None: ...

class AclBinding(_message.Message):
    __slots__ = ("tenant_id", "principal", "resource_type", "resource_name", "pattern_type", "operation", "permission", "host")
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    PRINCIPAL_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_TYPE_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_NAME_FIELD_NUMBER: _ClassVar[int]
    PATTERN_TYPE_FIELD_NUMBER: _ClassVar[int]
    OPERATION_FIELD_NUMBER: _ClassVar[int]
    PERMISSION_FIELD_NUMBER: _ClassVar[int]
    HOST_FIELD_NUMBER: _ClassVar[int]
    tenant_id: str
    principal: str
    resource_type: AclResourceType
    resource_name: str
    pattern_type: AclPatternType
    operation: AclOperation
    permission: AclPermission
    host: str
    def __init__(self, tenant_id: _Optional[str] = ..., principal: _Optional[str] = ..., resource_type: _Optional[_Union[AclResourceType, str]] = ..., resource_name: _Optional[str] = ..., pattern_type: _Optional[_Union[AclPatternType, str]] = ..., operation: _Optional[_Union[AclOperation, str]] = ..., permission: _Optional[_Union[AclPermission, str]] = ..., host: _Optional[str] = ...) -> None: ...

class TenantQuota(_message.Message):
    __slots__ = ("tenant_id", "produce_bytes_per_second", "consume_bytes_per_second")
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    PRODUCE_BYTES_PER_SECOND_FIELD_NUMBER: _ClassVar[int]
    CONSUME_BYTES_PER_SECOND_FIELD_NUMBER: _ClassVar[int]
    tenant_id: str
    produce_bytes_per_second: int
    consume_bytes_per_second: int
    def __init__(self, tenant_id: _Optional[str] = ..., produce_bytes_per_second: _Optional[int] = ..., consume_bytes_per_second: _Optional[int] = ...) -> None: ...

class ApplySecurityRequest(_message.Message):
    __slots__ = ("version", "credentials", "acls", "quotas", "scram_users")
    VERSION_FIELD_NUMBER: _ClassVar[int]
    CREDENTIALS_FIELD_NUMBER: _ClassVar[int]
    ACLS_FIELD_NUMBER: _ClassVar[int]
    QUOTAS_FIELD_NUMBER: _ClassVar[int]
    SCRAM_USERS_FIELD_NUMBER: _ClassVar[int]
    version: int
    credentials: _containers.RepeatedCompositeFieldContainer[Credential]
    acls: _containers.RepeatedCompositeFieldContainer[AclBinding]
    quotas: _containers.RepeatedCompositeFieldContainer[TenantQuota]
    scram_users: _containers.RepeatedCompositeFieldContainer[ScramUser]
    def __init__(self, version: _Optional[int] = ..., credentials: _Optional[_Iterable[_Union[Credential, _Mapping]]] = ..., acls: _Optional[_Iterable[_Union[AclBinding, _Mapping]]] = ..., quotas: _Optional[_Iterable[_Union[TenantQuota, _Mapping]]] = ..., scram_users: _Optional[_Iterable[_Union[ScramUser, _Mapping]]] = ...) -> None: ...

class ScramUser(_message.Message):
    __slots__ = ("tenant_id", "name", "scram")
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    SCRAM_FIELD_NUMBER: _ClassVar[int]
    tenant_id: str
    name: str
    scram: _containers.RepeatedCompositeFieldContainer[ScramCredential]
    def __init__(self, tenant_id: _Optional[str] = ..., name: _Optional[str] = ..., scram: _Optional[_Iterable[_Union[ScramCredential, _Mapping]]] = ...) -> None: ...

class ApplySecurityResponse(_message.Message):
    __slots__ = ("applied_version",)
    APPLIED_VERSION_FIELD_NUMBER: _ClassVar[int]
    applied_version: int
    def __init__(self, applied_version: _Optional[int] = ...) -> None: ...

class DescribeStateRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class HostedPartition(_message.Message):
    __slots__ = ("tenant_id", "topic", "topic_id", "partition", "is_leader", "leader_epoch", "log_start_offset", "log_end_offset", "high_watermark", "size_bytes", "segment_count", "isr", "replicas", "leader_id", "bytes_in_total", "records_in_total", "bytes_out_total", "records_out_total")
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    TOPIC_ID_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    IS_LEADER_FIELD_NUMBER: _ClassVar[int]
    LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    LOG_START_OFFSET_FIELD_NUMBER: _ClassVar[int]
    LOG_END_OFFSET_FIELD_NUMBER: _ClassVar[int]
    HIGH_WATERMARK_FIELD_NUMBER: _ClassVar[int]
    SIZE_BYTES_FIELD_NUMBER: _ClassVar[int]
    SEGMENT_COUNT_FIELD_NUMBER: _ClassVar[int]
    ISR_FIELD_NUMBER: _ClassVar[int]
    REPLICAS_FIELD_NUMBER: _ClassVar[int]
    LEADER_ID_FIELD_NUMBER: _ClassVar[int]
    BYTES_IN_TOTAL_FIELD_NUMBER: _ClassVar[int]
    RECORDS_IN_TOTAL_FIELD_NUMBER: _ClassVar[int]
    BYTES_OUT_TOTAL_FIELD_NUMBER: _ClassVar[int]
    RECORDS_OUT_TOTAL_FIELD_NUMBER: _ClassVar[int]
    tenant_id: str
    topic: str
    topic_id: str
    partition: int
    is_leader: bool
    leader_epoch: int
    log_start_offset: int
    log_end_offset: int
    high_watermark: int
    size_bytes: int
    segment_count: int
    isr: _containers.RepeatedScalarFieldContainer[int]
    replicas: _containers.RepeatedScalarFieldContainer[int]
    leader_id: int
    bytes_in_total: int
    records_in_total: int
    bytes_out_total: int
    records_out_total: int
    def __init__(self, tenant_id: _Optional[str] = ..., topic: _Optional[str] = ..., topic_id: _Optional[str] = ..., partition: _Optional[int] = ..., is_leader: _Optional[bool] = ..., leader_epoch: _Optional[int] = ..., log_start_offset: _Optional[int] = ..., log_end_offset: _Optional[int] = ..., high_watermark: _Optional[int] = ..., size_bytes: _Optional[int] = ..., segment_count: _Optional[int] = ..., isr: _Optional[_Iterable[int]] = ..., replicas: _Optional[_Iterable[int]] = ..., leader_id: _Optional[int] = ..., bytes_in_total: _Optional[int] = ..., records_in_total: _Optional[int] = ..., bytes_out_total: _Optional[int] = ..., records_out_total: _Optional[int] = ...) -> None: ...

class CredentialUse(_message.Message):
    __slots__ = ("api_key", "last_used_ms", "applications")
    API_KEY_FIELD_NUMBER: _ClassVar[int]
    LAST_USED_MS_FIELD_NUMBER: _ClassVar[int]
    APPLICATIONS_FIELD_NUMBER: _ClassVar[int]
    api_key: str
    last_used_ms: int
    applications: _containers.RepeatedCompositeFieldContainer[ClientApplication]
    def __init__(self, api_key: _Optional[str] = ..., last_used_ms: _Optional[int] = ..., applications: _Optional[_Iterable[_Union[ClientApplication, _Mapping]]] = ...) -> None: ...

class ClientApplication(_message.Message):
    __slots__ = ("client_id", "software_name", "software_version", "address", "first_seen_ms", "last_seen_ms")
    CLIENT_ID_FIELD_NUMBER: _ClassVar[int]
    SOFTWARE_NAME_FIELD_NUMBER: _ClassVar[int]
    SOFTWARE_VERSION_FIELD_NUMBER: _ClassVar[int]
    ADDRESS_FIELD_NUMBER: _ClassVar[int]
    FIRST_SEEN_MS_FIELD_NUMBER: _ClassVar[int]
    LAST_SEEN_MS_FIELD_NUMBER: _ClassVar[int]
    client_id: str
    software_name: str
    software_version: str
    address: str
    first_seen_ms: int
    last_seen_ms: int
    def __init__(self, client_id: _Optional[str] = ..., software_name: _Optional[str] = ..., software_version: _Optional[str] = ..., address: _Optional[str] = ..., first_seen_ms: _Optional[int] = ..., last_seen_ms: _Optional[int] = ...) -> None: ...

class DescribeStateResponse(_message.Message):
    __slots__ = ("node_id", "rack", "partitions_version", "security_version", "partitions", "credential_uses", "controller_epoch", "broker_epoch", "failed_partitions", "incarnation")
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    RACK_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_VERSION_FIELD_NUMBER: _ClassVar[int]
    SECURITY_VERSION_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    CREDENTIAL_USES_FIELD_NUMBER: _ClassVar[int]
    CONTROLLER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    BROKER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    FAILED_PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    INCARNATION_FIELD_NUMBER: _ClassVar[int]
    node_id: int
    rack: str
    partitions_version: int
    security_version: int
    partitions: _containers.RepeatedCompositeFieldContainer[HostedPartition]
    credential_uses: _containers.RepeatedCompositeFieldContainer[CredentialUse]
    controller_epoch: int
    broker_epoch: int
    failed_partitions: _containers.RepeatedCompositeFieldContainer[PartitionFailure]
    incarnation: str
    def __init__(self, node_id: _Optional[int] = ..., rack: _Optional[str] = ..., partitions_version: _Optional[int] = ..., security_version: _Optional[int] = ..., partitions: _Optional[_Iterable[_Union[HostedPartition, _Mapping]]] = ..., credential_uses: _Optional[_Iterable[_Union[CredentialUse, _Mapping]]] = ..., controller_epoch: _Optional[int] = ..., broker_epoch: _Optional[int] = ..., failed_partitions: _Optional[_Iterable[_Union[PartitionFailure, _Mapping]]] = ..., incarnation: _Optional[str] = ...) -> None: ...

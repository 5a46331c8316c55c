from grpc_protos.weir.v1 import broker_pb2 as _broker_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class RegisterBrokerRequest(_message.Message):
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

class RegisterBrokerResponse(_message.Message):
    __slots__ = ("error_code", "broker_epoch", "session_timeout_ms", "controller_epoch")
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    BROKER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    SESSION_TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    CONTROLLER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    error_code: int
    broker_epoch: int
    session_timeout_ms: int
    controller_epoch: int
    def __init__(self, error_code: _Optional[int] = ..., broker_epoch: _Optional[int] = ..., session_timeout_ms: _Optional[int] = ..., controller_epoch: _Optional[int] = ...) -> None: ...

class BrokerHeartbeatRequest(_message.Message):
    __slots__ = ("node_id", "broker_epoch")
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    BROKER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    node_id: int
    broker_epoch: int
    def __init__(self, node_id: _Optional[int] = ..., broker_epoch: _Optional[int] = ...) -> None: ...

class BrokerHeartbeatResponse(_message.Message):
    __slots__ = ("error_code", "fenced", "controller_epoch")
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    FENCED_FIELD_NUMBER: _ClassVar[int]
    CONTROLLER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    error_code: int
    fenced: bool
    controller_epoch: int
    def __init__(self, error_code: _Optional[int] = ..., fenced: _Optional[bool] = ..., controller_epoch: _Optional[int] = ...) -> None: ...

class BrokerLeaseRequest(_message.Message):
    __slots__ = ("node_id", "broker_epoch")
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    BROKER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    node_id: int
    broker_epoch: int
    def __init__(self, node_id: _Optional[int] = ..., broker_epoch: _Optional[int] = ...) -> None: ...

class BrokerLeaseEvent(_message.Message):
    __slots__ = ("error_code", "controller_epoch")
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    CONTROLLER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    error_code: int
    controller_epoch: int
    def __init__(self, error_code: _Optional[int] = ..., controller_epoch: _Optional[int] = ...) -> None: ...

class AlterPartitionRequest(_message.Message):
    __slots__ = ("topic", "partition", "leader_id", "leader_epoch", "new_isr", "broker_epoch")
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    LEADER_ID_FIELD_NUMBER: _ClassVar[int]
    LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    NEW_ISR_FIELD_NUMBER: _ClassVar[int]
    BROKER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    topic: str
    partition: int
    leader_id: int
    leader_epoch: int
    new_isr: _containers.RepeatedScalarFieldContainer[int]
    broker_epoch: int
    def __init__(self, topic: _Optional[str] = ..., partition: _Optional[int] = ..., leader_id: _Optional[int] = ..., leader_epoch: _Optional[int] = ..., new_isr: _Optional[_Iterable[int]] = ..., broker_epoch: _Optional[int] = ...) -> None: ...

class AlterPartitionResponse(_message.Message):
    __slots__ = ("error_code", "isr", "leader_id", "leader_epoch")
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ISR_FIELD_NUMBER: _ClassVar[int]
    LEADER_ID_FIELD_NUMBER: _ClassVar[int]
    LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    error_code: int
    isr: _containers.RepeatedScalarFieldContainer[int]
    leader_id: int
    leader_epoch: int
    def __init__(self, error_code: _Optional[int] = ..., isr: _Optional[_Iterable[int]] = ..., leader_id: _Optional[int] = ..., leader_epoch: _Optional[int] = ...) -> None: ...

class ControlledShutdownRequest(_message.Message):
    __slots__ = ("node_id", "broker_epoch")
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    BROKER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    node_id: int
    broker_epoch: int
    def __init__(self, node_id: _Optional[int] = ..., broker_epoch: _Optional[int] = ...) -> None: ...

class PartitionRef(_message.Message):
    __slots__ = ("topic", "partition")
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    topic: str
    partition: int
    def __init__(self, topic: _Optional[str] = ..., partition: _Optional[int] = ...) -> None: ...

class ControlledShutdownResponse(_message.Message):
    __slots__ = ("error_code", "remaining_partitions")
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    REMAINING_PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    error_code: int
    remaining_partitions: _containers.RepeatedCompositeFieldContainer[PartitionRef]
    def __init__(self, error_code: _Optional[int] = ..., remaining_partitions: _Optional[_Iterable[_Union[PartitionRef, _Mapping]]] = ...) -> None: ...

class ForwardedCaller(_message.Message):
    __slots__ = ("tenant_id", "principal", "api_key", "client_host", "door", "scram_user")
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    PRINCIPAL_FIELD_NUMBER: _ClassVar[int]
    API_KEY_FIELD_NUMBER: _ClassVar[int]
    CLIENT_HOST_FIELD_NUMBER: _ClassVar[int]
    DOOR_FIELD_NUMBER: _ClassVar[int]
    SCRAM_USER_FIELD_NUMBER: _ClassVar[int]
    tenant_id: str
    principal: str
    api_key: str
    client_host: str
    door: str
    scram_user: str
    def __init__(self, tenant_id: _Optional[str] = ..., principal: _Optional[str] = ..., api_key: _Optional[str] = ..., client_host: _Optional[str] = ..., door: _Optional[str] = ..., scram_user: _Optional[str] = ...) -> None: ...

class ForwardedCreateTopicsRequest(_message.Message):
    __slots__ = ("caller", "request")
    CALLER_FIELD_NUMBER: _ClassVar[int]
    REQUEST_FIELD_NUMBER: _ClassVar[int]
    caller: ForwardedCaller
    request: _broker_pb2.CreateTopicsRequest
    def __init__(self, caller: _Optional[_Union[ForwardedCaller, _Mapping]] = ..., request: _Optional[_Union[_broker_pb2.CreateTopicsRequest, _Mapping]] = ...) -> None: ...

class ForwardedDeleteTopicsRequest(_message.Message):
    __slots__ = ("caller", "request")
    CALLER_FIELD_NUMBER: _ClassVar[int]
    REQUEST_FIELD_NUMBER: _ClassVar[int]
    caller: ForwardedCaller
    request: _broker_pb2.DeleteTopicsRequest
    def __init__(self, caller: _Optional[_Union[ForwardedCaller, _Mapping]] = ..., request: _Optional[_Union[_broker_pb2.DeleteTopicsRequest, _Mapping]] = ...) -> None: ...

class ForwardedCreatePartitionsRequest(_message.Message):
    __slots__ = ("caller", "request")
    CALLER_FIELD_NUMBER: _ClassVar[int]
    REQUEST_FIELD_NUMBER: _ClassVar[int]
    caller: ForwardedCaller
    request: _broker_pb2.CreatePartitionsRequest
    def __init__(self, caller: _Optional[_Union[ForwardedCaller, _Mapping]] = ..., request: _Optional[_Union[_broker_pb2.CreatePartitionsRequest, _Mapping]] = ...) -> None: ...

class ForwardedAlterConfigsRequest(_message.Message):
    __slots__ = ("caller", "request")
    CALLER_FIELD_NUMBER: _ClassVar[int]
    REQUEST_FIELD_NUMBER: _ClassVar[int]
    caller: ForwardedCaller
    request: _broker_pb2.AlterConfigsRequest
    def __init__(self, caller: _Optional[_Union[ForwardedCaller, _Mapping]] = ..., request: _Optional[_Union[_broker_pb2.AlterConfigsRequest, _Mapping]] = ...) -> None: ...

class ForwardedAclBinding(_message.Message):
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

class ForwardedAclFilter(_message.Message):
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

class ForwardedCreateAclsRequest(_message.Message):
    __slots__ = ("caller", "creations")
    CALLER_FIELD_NUMBER: _ClassVar[int]
    CREATIONS_FIELD_NUMBER: _ClassVar[int]
    caller: ForwardedCaller
    creations: _containers.RepeatedCompositeFieldContainer[ForwardedAclBinding]
    def __init__(self, caller: _Optional[_Union[ForwardedCaller, _Mapping]] = ..., creations: _Optional[_Iterable[_Union[ForwardedAclBinding, _Mapping]]] = ...) -> None: ...

class AclCreationResult(_message.Message):
    __slots__ = ("error_code", "error_message")
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    error_code: int
    error_message: str
    def __init__(self, error_code: _Optional[int] = ..., error_message: _Optional[str] = ...) -> None: ...

class CreateAclsResponse(_message.Message):
    __slots__ = ("results",)
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[AclCreationResult]
    def __init__(self, results: _Optional[_Iterable[_Union[AclCreationResult, _Mapping]]] = ...) -> None: ...

class ForwardedDescribeAclsRequest(_message.Message):
    __slots__ = ("caller", "filter")
    CALLER_FIELD_NUMBER: _ClassVar[int]
    FILTER_FIELD_NUMBER: _ClassVar[int]
    caller: ForwardedCaller
    filter: ForwardedAclFilter
    def __init__(self, caller: _Optional[_Union[ForwardedCaller, _Mapping]] = ..., filter: _Optional[_Union[ForwardedAclFilter, _Mapping]] = ...) -> None: ...

class DescribeAclsResponse(_message.Message):
    __slots__ = ("error_code", "error_message", "bindings")
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    BINDINGS_FIELD_NUMBER: _ClassVar[int]
    error_code: int
    error_message: str
    bindings: _containers.RepeatedCompositeFieldContainer[ForwardedAclBinding]
    def __init__(self, error_code: _Optional[int] = ..., error_message: _Optional[str] = ..., bindings: _Optional[_Iterable[_Union[ForwardedAclBinding, _Mapping]]] = ...) -> None: ...

class ForwardedDeleteAclsRequest(_message.Message):
    __slots__ = ("caller", "filters")
    CALLER_FIELD_NUMBER: _ClassVar[int]
    FILTERS_FIELD_NUMBER: _ClassVar[int]
    caller: ForwardedCaller
    filters: _containers.RepeatedCompositeFieldContainer[ForwardedAclFilter]
    def __init__(self, caller: _Optional[_Union[ForwardedCaller, _Mapping]] = ..., filters: _Optional[_Iterable[_Union[ForwardedAclFilter, _Mapping]]] = ...) -> None: ...

class DeleteAclsFilterResult(_message.Message):
    __slots__ = ("error_code", "error_message", "deleted")
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    DELETED_FIELD_NUMBER: _ClassVar[int]
    error_code: int
    error_message: str
    deleted: _containers.RepeatedCompositeFieldContainer[ForwardedAclBinding]
    def __init__(self, error_code: _Optional[int] = ..., error_message: _Optional[str] = ..., deleted: _Optional[_Iterable[_Union[ForwardedAclBinding, _Mapping]]] = ...) -> None: ...

class DeleteAclsResponse(_message.Message):
    __slots__ = ("results",)
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[DeleteAclsFilterResult]
    def __init__(self, results: _Optional[_Iterable[_Union[DeleteAclsFilterResult, _Mapping]]] = ...) -> None: ...

class SchemaSubjectsRequest(_message.Message):
    __slots__ = ("tenant_id", "schema_id")
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    SCHEMA_ID_FIELD_NUMBER: _ClassVar[int]
    tenant_id: str
    schema_id: int
    def __init__(self, tenant_id: _Optional[str] = ..., schema_id: _Optional[int] = ...) -> None: ...

class SchemaSubjectsResponse(_message.Message):
    __slots__ = ("error_code", "error_message", "subjects")
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    SUBJECTS_FIELD_NUMBER: _ClassVar[int]
    error_code: int
    error_message: str
    subjects: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, error_code: _Optional[int] = ..., error_message: _Optional[str] = ..., subjects: _Optional[_Iterable[str]] = ...) -> None: ...

class ForwardedElectLeadersRequest(_message.Message):
    __slots__ = ("caller", "request")
    CALLER_FIELD_NUMBER: _ClassVar[int]
    REQUEST_FIELD_NUMBER: _ClassVar[int]
    caller: ForwardedCaller
    request: _broker_pb2.ElectLeadersRequest
    def __init__(self, caller: _Optional[_Union[ForwardedCaller, _Mapping]] = ..., request: _Optional[_Union[_broker_pb2.ElectLeadersRequest, _Mapping]] = ...) -> None: ...

class ForwardedAlterUserScramCredentialsRequest(_message.Message):
    __slots__ = ("caller", "request")
    CALLER_FIELD_NUMBER: _ClassVar[int]
    REQUEST_FIELD_NUMBER: _ClassVar[int]
    caller: ForwardedCaller
    request: _broker_pb2.AlterUserScramCredentialsRequest
    def __init__(self, caller: _Optional[_Union[ForwardedCaller, _Mapping]] = ..., request: _Optional[_Union[_broker_pb2.AlterUserScramCredentialsRequest, _Mapping]] = ...) -> None: ...

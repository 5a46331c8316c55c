"""confluent-kafka's ACL types (``AclBinding``, ``AclBindingFilter`` and their enums) and their
conversion to the broker's ACL messages, for ``AdminClient.create_acls`` / ``describe_acls`` /
``delete_acls``.

Enum values are Kafka's (and librdkafka's) numbers; the broker's messages carry Kafka's names.
Kafka's resource type 4 is ``BROKER`` in confluent-kafka and ``CLUSTER`` in Kafka's own API:
it is the cluster resource (name ``kafka-cluster``). A binding is checked when it is made, as in
confluent-kafka: a None where a value is needed is a ValueError, a non-string name a TypeError,
ANY in a binding (or UNKNOWN in a filter) a ValueError.
"""

from __future__ import annotations

import enum
import functools
from typing import Any, ClassVar

from grpc_protos.weir.v1 import broker_pb2

__all__ = ["AclBinding", "AclBindingFilter", "AclOperation", "AclPermissionType", "ResourcePatternType", "ResourceType"]


class ResourceType(enum.IntEnum):
    """Kafka's resource types (the numbers of ConfigResource.Type and of ACL resources)."""

    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    BROKER = 4
    TRANSACTIONAL_ID = 5


class ResourcePatternType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1  # in a filter: any pattern type
    MATCH = 2  # in a filter: the bindings that apply to the name (literal, prefix or wildcard)
    LITERAL = 3
    PREFIXED = 4


class AclOperation(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12


class AclPermissionType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


_RESOURCE_NAMES = {ResourceType.BROKER: "CLUSTER"}
_RESOURCE_BY_NAME = {"CLUSTER": ResourceType.BROKER}


def _enum(kind: type[enum.IntEnum], value: Any, field: str) -> Any:
    if isinstance(value, kind):
        return value
    try:
        if isinstance(value, str):
            return kind[value.upper()]
        if isinstance(value, int) and not isinstance(value, bool):
            return kind(value)
    except (KeyError, ValueError):
        pass
    raise ValueError(f"{field} must be a {kind.__name__}, its name or its number, got {value!r}")


@functools.total_ordering
class AclBinding:
    """An ACL: ``principal`` may (ALLOW) or may not (DENY) do ``operation`` on the resources ``name``
    designates (literally, or as a prefix), from ``host`` ("*": any)."""

    _required: ClassVar[tuple[str, ...]] = ("restype", "name", "resource_pattern_type", "principal", "host", "operation", "permission_type")
    _forbidden: ClassVar[dict[str, tuple[enum.IntEnum, ...]]] = {
        "restype": (ResourceType.ANY,),
        "resource_pattern_type": (ResourcePatternType.ANY, ResourcePatternType.MATCH),
        "operation": (AclOperation.ANY,),
        "permission_type": (AclPermissionType.ANY,),
    }

    def __init__(
        self,
        restype: ResourceType | str | int,
        name: str | None,
        resource_pattern_type: ResourcePatternType | str | int,
        principal: str | None,
        host: str | None,
        operation: AclOperation | str | int,
        permission_type: AclPermissionType | str | int,
    ) -> None:
        values = {
            "restype": restype,
            "name": name,
            "resource_pattern_type": resource_pattern_type,
            "principal": principal,
            "host": host,
            "operation": operation,
            "permission_type": permission_type,
        }
        for field in self._required:
            if values[field] is None:
                raise ValueError(f"Expected {field} to be not None")
        for field in ("name", "principal", "host"):
            if values[field] is not None and not isinstance(values[field], str):
                raise TypeError(f"Expected {field} to be a string")
        self.restype: ResourceType = _enum(ResourceType, restype, "restype")
        self.name = name
        self.resource_pattern_type: ResourcePatternType = _enum(ResourcePatternType, resource_pattern_type, "resource_pattern_type")
        self.principal = principal
        self.host = host
        self.operation: AclOperation = _enum(AclOperation, operation, "operation")
        self.permission_type: AclPermissionType = _enum(AclPermissionType, permission_type, "permission_type")
        for field, refused in self._forbidden.items():
            if getattr(self, field) in refused:
                raise ValueError(f"Cannot use enum {field}, value {getattr(self, field).name} in this class")
        self.restype_int = int(self.restype)
        self.resource_pattern_type_int = int(self.resource_pattern_type)
        self.operation_int = int(self.operation)
        self.permission_type_int = int(self.permission_type)

    def _to_tuple(self) -> tuple[Any, ...]:
        return (self.restype, self.name, self.resource_pattern_type, self.principal, self.host, self.operation, self.permission_type)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({','.join(str(value) for value in self._to_tuple())})"

    def __hash__(self) -> int:
        return hash(self._to_tuple())

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, AclBinding):
            return NotImplemented
        return self._to_tuple() == other._to_tuple()

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, AclBinding):
            return NotImplemented
        return tuple("" if value is None else value for value in self._to_tuple()) < tuple("" if value is None else value for value in other._to_tuple())


class AclBindingFilter(AclBinding):
    """Matches bindings: ANY (enums) or None (strings) matches every value; pattern MATCH matches
    the bindings that apply to ``name``."""

    _required: ClassVar[tuple[str, ...]] = ("restype", "resource_pattern_type", "operation", "permission_type")
    _forbidden: ClassVar[dict[str, tuple[enum.IntEnum, ...]]] = {
        "restype": (ResourceType.UNKNOWN,),
        "resource_pattern_type": (ResourcePatternType.UNKNOWN,),
        "operation": (AclOperation.UNKNOWN,),
        "permission_type": (AclPermissionType.UNKNOWN,),
    }


def binding_message(binding: AclBinding) -> broker_pb2.ClientAclBinding:
    return broker_pb2.ClientAclBinding(
        resource_type=_RESOURCE_NAMES.get(binding.restype, binding.restype.name),
        resource_name=binding.name or "",
        pattern_type=binding.resource_pattern_type.name,
        principal=binding.principal or "",
        host=binding.host or "",
        operation=binding.operation.name,
        permission=binding.permission_type.name,
    )


def filter_message(acl_filter: AclBindingFilter) -> broker_pb2.ClientAclFilter:
    fields: dict[str, str] = {}
    if acl_filter.restype != ResourceType.ANY:
        fields["resource_type"] = _RESOURCE_NAMES.get(acl_filter.restype, acl_filter.restype.name)
    if acl_filter.resource_pattern_type != ResourcePatternType.ANY:
        fields["pattern_type"] = acl_filter.resource_pattern_type.name
    if acl_filter.operation != AclOperation.ANY:
        fields["operation"] = acl_filter.operation.name
    if acl_filter.permission_type != AclPermissionType.ANY:
        fields["permission"] = acl_filter.permission_type.name
    for field, value in (("resource_name", acl_filter.name), ("principal", acl_filter.principal), ("host", acl_filter.host)):
        if value is not None:
            fields[field] = value
    return broker_pb2.ClientAclFilter(**fields)


def binding_of(message: broker_pb2.ClientAclBinding) -> AclBinding:
    """A binding the broker described (names it does not know become UNKNOWN rather than failing)."""

    def member(kind: type[enum.IntEnum], name: str) -> Any:
        return kind.__members__.get(name, kind(0))

    restype = _RESOURCE_BY_NAME.get(message.resource_type) or member(ResourceType, message.resource_type)
    return AclBinding(
        restype,
        message.resource_name,
        member(ResourcePatternType, message.pattern_type),
        message.principal,
        message.host,
        member(AclOperation, message.operation),
        member(AclPermissionType, message.permission),
    )

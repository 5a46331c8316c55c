from google.protobuf import descriptor_pb2 as _descriptor_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor
FILE_META_FIELD_NUMBER: _ClassVar[int]
file_meta: _descriptor.FieldDescriptor
MESSAGE_META_FIELD_NUMBER: _ClassVar[int]
message_meta: _descriptor.FieldDescriptor
FIELD_META_FIELD_NUMBER: _ClassVar[int]
field_meta: _descriptor.FieldDescriptor
ENUM_META_FIELD_NUMBER: _ClassVar[int]
enum_meta: _descriptor.FieldDescriptor
ENUM_VALUE_META_FIELD_NUMBER: _ClassVar[int]
enum_value_meta: _descriptor.FieldDescriptor

class Meta(_message.Message):
    __slots__ = ("doc", "params", "tags", "rules")
    class ParamsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    DOC_FIELD_NUMBER: _ClassVar[int]
    PARAMS_FIELD_NUMBER: _ClassVar[int]
    TAGS_FIELD_NUMBER: _ClassVar[int]
    RULES_FIELD_NUMBER: _ClassVar[int]
    doc: str
    params: _containers.ScalarMap[str, str]
    tags: _containers.RepeatedScalarFieldContainer[str]
    rules: _containers.RepeatedCompositeFieldContainer[Rule]
    def __init__(self, doc: _Optional[str] = ..., params: _Optional[_Mapping[str, str]] = ..., tags: _Optional[_Iterable[str]] = ..., rules: _Optional[_Iterable[_Union[Rule, _Mapping]]] = ...) -> None: ...

class Rule(_message.Message):
    __slots__ = ("name", "doc", "expr", "sql")
    NAME_FIELD_NUMBER: _ClassVar[int]
    DOC_FIELD_NUMBER: _ClassVar[int]
    EXPR_FIELD_NUMBER: _ClassVar[int]
    SQL_FIELD_NUMBER: _ClassVar[int]
    name: str
    doc: str
    expr: str
    sql: str
    def __init__(self, name: _Optional[str] = ..., doc: _Optional[str] = ..., expr: _Optional[str] = ..., sql: _Optional[str] = ...) -> None: ...

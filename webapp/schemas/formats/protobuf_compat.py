"""Compatibility of two Protobuf schemas, by Confluent Schema Registry's rules (its ``protobuf.diff`` package).

The writer's schema (the "original") is compared with the reader's (the "update"), as Confluent's
``ProtobufSchema.isBackwardCompatible(previous)`` compares ``previous`` with itself: BACKWARD checks
(reader=new, writer=old), FORWARD the other way round, FULL both. Every change found is a
:class:`Difference` with Confluent's name for it; the changes Confluent accepts (:data:`COMPATIBLE`) are
dropped and the rest are the incompatibilities. The rules, briefly:

- messages are matched by name in each scope (file, then nested); removing one is MESSAGE_REMOVED,
  changing the package PACKAGE_CHANGED; adding or reordering messages and enums is compatible;
- fields are matched by number: a new name is compatible (FIELD_NAME_CHANGED); a changed type is
  incompatible unless both types are in one wire-compatible group (int32/int64/uint32/uint64/bool and
  enums; sint32/sint64; fixed32/sfixed32; fixed64/sfixed64; string/bytes; float; double): else
  FIELD_SCALAR_KIND_CHANGED, or FIELD_KIND_CHANGED between scalar, message and map;
- a field of a message type is compared with the other side's message of the same local name
  (FIELD_NAMED_TYPE_CHANGED when the names differ or that message changed incompatibly);
- singular <-> repeated is compatible for string, bytes and messages, not for numbers
  (FIELD_NUMERIC_LABEL_CHANGED); adding or removing a proto2 ``required`` field is incompatible;
- oneofs: moving one existing field into a new oneof is compatible, moving several
  (MULTIPLE_FIELDS_MOVED_TO_ONEOF) or into a oneof that already had fields (FIELD_MOVED_TO_EXISTING_ONEOF)
  is not; removing a field from a oneof is ONEOF_FIELD_REMOVED;
- enum constants may be added, removed or renamed (compatible, as in Confluent).

A syntax change (proto2 <-> proto3) is not a difference in Confluent's rules, so it is none here either.
Each pair of message types is compared once (recursive types too); the comparison is bounded by
:data:`MAX_COMPARISONS` message pairs, past which it reports COMPARISON_LIMIT_EXCEEDED.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from google.protobuf import descriptor_pb2

from webapp.schemas.formats.protobuf_parse import ProtobufSchema

FieldProto = descriptor_pb2.FieldDescriptorProto
MessageProto = descriptor_pb2.DescriptorProto
EnumProto = descriptor_pb2.EnumDescriptorProto

# Confluent's protobuf SchemaDiff.COMPATIBLE_CHANGES.
COMPATIBLE = frozenset(
    {
        "MESSAGE_ADDED",
        "MESSAGE_MOVED",
        "ENUM_ADDED",
        "ENUM_REMOVED",
        "ENUM_CONST_ADDED",
        "ENUM_CONST_CHANGED",
        "ENUM_CONST_REMOVED",
        "FIELD_ADDED",
        "FIELD_REMOVED",
        "FIELD_NAME_CHANGED",
        "FIELD_STRING_OR_BYTES_LABEL_CHANGED",
        "ONEOF_ADDED",
        "ONEOF_REMOVED",
        "ONEOF_FIELD_ADDED",
        "ONEOF_FIELD_MOVED_TO_TOP_LEVEL",
    }
)
# Message pairs one comparison may visit: a bound on the work a pathological schema can cause.
MAX_COMPARISONS = 10_000

# Wire-compatible scalar groups (protobuf's "Updating A Message Type" rules, as Confluent groups them).
_SCALAR_GROUP = {
    FieldProto.TYPE_INT32: "varint",
    FieldProto.TYPE_INT64: "varint",
    FieldProto.TYPE_UINT32: "varint",
    FieldProto.TYPE_UINT64: "varint",
    FieldProto.TYPE_BOOL: "varint",
    FieldProto.TYPE_ENUM: "varint",
    FieldProto.TYPE_SINT32: "zigzag",
    FieldProto.TYPE_SINT64: "zigzag",
    FieldProto.TYPE_STRING: "string_or_bytes",
    FieldProto.TYPE_BYTES: "string_or_bytes",
    FieldProto.TYPE_FIXED32: "fixed32",
    FieldProto.TYPE_SFIXED32: "fixed32",
    FieldProto.TYPE_FIXED64: "fixed64",
    FieldProto.TYPE_SFIXED64: "fixed64",
    FieldProto.TYPE_FLOAT: "float",
    FieldProto.TYPE_DOUBLE: "double",
}


@dataclass(frozen=True)
class Difference:
    """One change between two schemas: Confluent's name for it, where it is, and what changed."""

    code: str
    path: str
    detail: str

    @property
    def compatible(self) -> bool:
        return self.code in COMPATIBLE

    def __str__(self) -> str:
        return f"{self.code} at {self.path or 'the schema'}: {self.detail}"


@dataclass(frozen=True)
class _TypeInfo:
    proto: MessageProto | EnumProto
    package: str
    syntax: str
    # The name without the package: what Confluent compares ("Outer.Inner").
    local_name: str


@dataclass(frozen=True)
class _FieldType:
    """A field's type: kind "scalar" (with enums), "message" or "map"; ``name`` is the type's name as written."""

    kind: str
    name: str
    scalar_group: str = ""
    message: _TypeInfo | None = None
    key: _FieldType | None = None
    value: _FieldType | None = None


class _Side:
    """Every message and enum one schema can name, by full name (``.package.Outer.Inner``)."""

    def __init__(self, schema: ProtobufSchema) -> None:
        self.types: dict[str, _TypeInfo] = {}
        for file in schema.files.values():
            prefix = f".{file.package}" if file.package else ""
            self._index(file, prefix, "", file.message_type, file.enum_type)

    def _index(self, file: descriptor_pb2.FileDescriptorProto, prefix: str, local: str, messages: Iterable[MessageProto], enums: Iterable[EnumProto]) -> None:
        syntax = file.syntax or "proto2"
        for enum in enums:
            name = f"{local}{enum.name}"
            self.types[f"{prefix}.{name}"] = _TypeInfo(enum, file.package, syntax, name)
        for message in messages:
            name = f"{local}{message.name}"
            self.types[f"{prefix}.{name}"] = _TypeInfo(message, file.package, syntax, name)
            self._index(file, prefix, f"{name}.", message.nested_type, message.enum_type)

    def syntax(self, full_name: str) -> str:
        info = self.types.get(full_name)
        return info.syntax if info is not None else "proto3"

    def field_type(self, proto: FieldProto) -> _FieldType:
        if proto.type in (FieldProto.TYPE_MESSAGE, FieldProto.TYPE_GROUP):
            info = self.types.get(proto.type_name)
            if info is not None and isinstance(info.proto, MessageProto) and info.proto.options.map_entry:
                key, value = sorted(info.proto.field, key=lambda entry: entry.number)
                return _FieldType("map", "map", key=self.field_type(key), value=self.field_type(value))
            return _FieldType("message", proto.type_name.lstrip("."), message=info)
        if proto.type == FieldProto.TYPE_ENUM:
            return _FieldType("scalar", proto.type_name.lstrip("."), scalar_group="varint")
        name = FieldProto.Type.Name(proto.type).removeprefix("TYPE_").lower()
        return _FieldType("scalar", name, scalar_group=_SCALAR_GROUP[proto.type])


@dataclass
class _Budget:
    used: int = 0
    # Where the comparison stopped once it had compared MAX_COMPARISONS message pairs.
    exceeded: str = ""


@dataclass
class _Context:
    original: _Side
    update: _Side
    # An ordered set: a memoized pair's reasons, met again, are not repeated.
    found: dict[Difference, None] = field(default_factory=dict)
    # Message pairs being compared up the stack (a recursive type), pairs compared already, and the work done.
    active: set[tuple[str, str]] = field(default_factory=set)
    memo: dict[tuple[str, str], list[Difference]] = field(default_factory=dict)
    budget: _Budget = field(default_factory=_Budget)

    def add(self, code: str, path: str, detail: str) -> None:
        self.found[Difference(code, path, detail)] = None

    def extend(self, differences: Iterable[Difference]) -> None:
        self.found.update(dict.fromkeys(differences))

    def sub(self) -> _Context:
        return _Context(self.original, self.update, {}, self.active, self.memo, self.budget)


def differences(reader: ProtobufSchema, writer: ProtobufSchema) -> list[Difference]:
    """The incompatible changes from ``writer`` (the original) to ``reader`` (the update), each once, in order found."""
    return [difference for difference in all_differences(writer, reader) if not difference.compatible]


def all_differences(original: ProtobufSchema, update: ProtobufSchema) -> list[Difference]:
    """Every change, compatible or not, from ``original`` to ``update``."""
    ctx = _Context(_Side(original), _Side(update))
    if original.main.package != update.main.package:
        ctx.add("PACKAGE_CHANGED", "", f"package {original.main.package!r} -> {update.main.package!r}")
    _compare_scope(ctx, "", _prefix(original.main), _prefix(update.main), original.main, update.main)
    if ctx.budget.exceeded:
        detail = f"stopped after {MAX_COMPARISONS} message comparisons: too complex to prove compatible"
        ctx.add("COMPARISON_LIMIT_EXCEEDED", ctx.budget.exceeded, detail)
    return list(ctx.found)


def _prefix(file: descriptor_pb2.FileDescriptorProto) -> str:
    return f".{file.package}" if file.package else ""


def _compare_scope(
    ctx: _Context,
    path: str,
    original_prefix: str,
    update_prefix: str,
    original: descriptor_pb2.FileDescriptorProto | MessageProto,
    update: descriptor_pb2.FileDescriptorProto | MessageProto,
) -> None:
    """Messages and enums declared in one scope (a file, or a message's nested types), matched by name."""
    original_messages, update_messages = _messages(original), _messages(update)
    for name in sorted(original_messages.keys() | update_messages.keys()):
        where = f"{path}{name}"
        if name not in update_messages:
            ctx.add("MESSAGE_REMOVED", where, f"message {where} was removed")
        elif name not in original_messages:
            ctx.add("MESSAGE_ADDED", where, f"message {where} was added")
        else:
            (original_index, original_message), (update_index, update_message) = original_messages[name], update_messages[name]
            _compare_message(ctx, where, f"{original_prefix}.{name}", f"{update_prefix}.{name}", original_message, update_message)
            if original_index != update_index:
                ctx.add("MESSAGE_MOVED", where, f"message {where} moved from position {original_index} to {update_index}")
    original_enums, update_enums = _enums(original), _enums(update)
    for name in sorted(original_enums.keys() | update_enums.keys()):
        where = f"{path}{name}"
        if name not in update_enums:
            ctx.add("ENUM_REMOVED", where, f"enum {where} was removed")
        elif name not in original_enums:
            ctx.add("ENUM_ADDED", where, f"enum {where} was added")
        else:
            _compare_enum(ctx, where, original_enums[name], update_enums[name])


def _messages(scope: descriptor_pb2.FileDescriptorProto | MessageProto) -> dict[str, tuple[int, MessageProto]]:
    declared = scope.message_type if isinstance(scope, descriptor_pb2.FileDescriptorProto) else scope.nested_type
    # Map entries are how protoc spells `map<K, V>`: Confluent's parser never sees them as messages.
    kept = [message for message in declared if not message.options.map_entry]
    return {message.name: (index, message) for index, message in enumerate(kept)}


def _enums(scope: descriptor_pb2.FileDescriptorProto | MessageProto) -> dict[str, EnumProto]:
    return {enum.name: enum for enum in scope.enum_type}


def _compare_enum(ctx: _Context, path: str, original: EnumProto, update: EnumProto) -> None:
    original_values = {value.number: value.name for value in original.value}
    update_values = {value.number: value.name for value in update.value}
    for number in sorted(original_values.keys() | update_values.keys()):
        where = f"{path} = {number}"
        if number not in update_values:
            ctx.add("ENUM_CONST_REMOVED", where, f"constant {original_values[number]} was removed")
        elif number not in original_values:
            ctx.add("ENUM_CONST_ADDED", where, f"constant {update_values[number]} was added")
        elif original_values[number] != update_values[number]:
            ctx.add("ENUM_CONST_CHANGED", where, f"constant {original_values[number]} renamed {update_values[number]}")


def _oneof_members(message: MessageProto) -> dict[str, dict[int, FieldProto]]:
    """The real oneofs' fields by oneof name (proto3 `optional` makes a synthetic oneof: not a oneof here)."""
    members: dict[str, dict[int, FieldProto]] = {}
    for proto in message.field:
        if proto.HasField("oneof_index") and not proto.proto3_optional:
            members.setdefault(message.oneof_decl[proto.oneof_index].name, {})[proto.number] = proto
    return members


def _compare_message(ctx: _Context, path: str, original_name: str, update_name: str, original: MessageProto, update: MessageProto) -> None:
    key = (original_name, update_name)
    if key in ctx.memo:
        ctx.extend(ctx.memo[key])  # compared already: the same reasons, where first found
        return
    if key in ctx.active:
        return  # a pair being compared up the stack is taken as compatible, as in Confluent
    ctx.budget.used += 1
    if ctx.budget.used > MAX_COMPARISONS:
        ctx.budget.exceeded = ctx.budget.exceeded or path
        return
    ctx.active.add(key)
    sub = ctx.sub()
    try:
        _compare_fields(sub, path, original, update, (ctx.original.syntax(original_name), ctx.update.syntax(update_name)))
        _compare_scope(sub, f"{path}.", original_name, update_name, original, update)
    finally:
        ctx.active.discard(key)
    ctx.memo[key] = list(sub.found)
    ctx.extend(sub.found)


def _compare_fields(ctx: _Context, path: str, original: MessageProto, update: MessageProto, syntaxes: tuple[str, str]) -> None:
    """Every field by number across the message, whatever oneof holds it, as Confluent's current MessageSchemaDiff."""
    original_oneofs, update_oneofs = _oneof_members(original), _oneof_members(update)
    original_in_oneof = {number: name for name, fields in original_oneofs.items() for number in fields}
    update_in_oneof = {number: name for name, fields in update_oneofs.items() for number in fields}
    original_all = {proto.number: proto for proto in original.field}
    update_all = {proto.number: proto for proto in update.field}
    # A removed oneof none of whose fields survives anywhere was deleted whole: compatible, like removing fields.
    deleted_oneofs = {name for name, fields in original_oneofs.items() if name not in update_oneofs and not fields.keys() & update_all.keys()}

    for oneof_name, members in update_oneofs.items():
        origins = {f"oneof:{original_in_oneof[number]}" if number in original_in_oneof else f"field:{number}" for number in members if number in original_all}
        moved_from_top = [number for number in members if number in original_all and number not in original_in_oneof]
        if len(origins) > 1:
            where = f"{path}.{oneof_name}"
            if len(moved_from_top) > 1:
                ctx.add("MULTIPLE_FIELDS_MOVED_TO_ONEOF", where, f"fields {sorted(moved_from_top)} are now mutually exclusive in oneof {oneof_name}")
            else:
                ctx.add("FIELD_MOVED_TO_EXISTING_ONEOF", where, f"fields that were independent are now mutually exclusive in oneof {oneof_name}")

    for oneof_name in sorted(original_oneofs.keys() | update_oneofs.keys()):
        if oneof_name not in update_oneofs:
            ctx.add("ONEOF_REMOVED", f"{path}.{oneof_name}", f"oneof {oneof_name} was removed")
        elif oneof_name not in original_oneofs:
            ctx.add("ONEOF_ADDED", f"{path}.{oneof_name}", f"oneof {oneof_name} was added")

    for number in sorted(original_all.keys() | update_all.keys()):
        before, after = original_all.get(number), update_all.get(number)
        if after is None and before is not None:
            oneof = original_in_oneof.get(number)
            if oneof is None:
                code = "REQUIRED_FIELD_REMOVED" if before.label == FieldProto.LABEL_REQUIRED else "FIELD_REMOVED"
                ctx.add(code, _field_path(path, before), "field was removed")
            elif oneof not in deleted_oneofs:
                ctx.add("ONEOF_FIELD_REMOVED", _field_path(f"{path}.{oneof}", before), f"field was removed from oneof {oneof}")
        elif before is None and after is not None:
            oneof = update_in_oneof.get(number)
            if oneof is not None:
                ctx.add("ONEOF_FIELD_ADDED", _field_path(f"{path}.{oneof}", after), f"field was added to oneof {oneof}")
            else:
                code = "REQUIRED_FIELD_ADDED" if after.label == FieldProto.LABEL_REQUIRED else "FIELD_ADDED"
                ctx.add(code, _field_path(path, after), "field was added")
        elif before is not None and after is not None:
            oneof = update_in_oneof.get(number)
            where = _field_path(f"{path}.{oneof}" if oneof else path, after)
            if number in original_in_oneof and oneof is None:
                ctx.add("ONEOF_FIELD_MOVED_TO_TOP_LEVEL", where, f"field left oneof {original_in_oneof[number]}")
            _compare_field(ctx, where, before, after, syntaxes)


def _field_path(path: str, proto: FieldProto) -> str:
    return f"{path}.{proto.name} (field {proto.number})"


def _compare_field(ctx: _Context, path: str, original: FieldProto, update: FieldProto, syntaxes: tuple[str, str]) -> None:
    if original.name != update.name:
        ctx.add("FIELD_NAME_CHANGED", path, f"field renamed from {original.name} to {update.name}")
    labels = (_label(original, syntaxes[0]), _label(update, syntaxes[1]))
    _compare_types(ctx, path, ctx.original.field_type(original), ctx.update.field_type(update), labels)


def _label(proto: FieldProto, syntax: str) -> str:
    """The label as written: proto3's unlabelled singular field has none (and so never counts as a label change)."""
    if proto.label == FieldProto.LABEL_REPEATED:
        return "repeated"
    if proto.label == FieldProto.LABEL_REQUIRED:
        return "required"
    if syntax == "proto3" and not proto.proto3_optional:
        return ""
    return "optional"


def _compare_types(ctx: _Context, path: str, original: _FieldType, update: _FieldType, labels: tuple[str, str] = ("", "")) -> None:
    if original.kind != update.kind:
        ctx.add("FIELD_KIND_CHANGED", path, f"type {original.name} ({original.kind}) -> {update.name} ({update.kind})")
    elif original.kind == "scalar":
        if original.scalar_group != update.scalar_group:
            ctx.add("FIELD_SCALAR_KIND_CHANGED", path, f"type {original.name} -> {update.name}, not wire-compatible")
        elif all(labels) and labels[0] != labels[1]:
            code = "FIELD_STRING_OR_BYTES_LABEL_CHANGED" if original.scalar_group == "string_or_bytes" else "FIELD_NUMERIC_LABEL_CHANGED"
            ctx.add(code, path, f"{labels[0]} -> {labels[1]}")
    elif original.kind == "map":
        assert original.key and update.key and original.value and update.value
        _compare_types(ctx, f"{path} key", original.key, update.key)
        _compare_types(ctx, f"{path} value", original.value, update.value)
    else:
        _compare_message_types(ctx, path, original, update)


def _compare_message_types(ctx: _Context, path: str, original: _FieldType, update: _FieldType) -> None:
    if original.message is None or update.message is None or original.message.local_name != update.message.local_name:
        if _local(original) != _local(update):
            ctx.add("FIELD_NAMED_TYPE_CHANGED", path, f"type {original.name} -> {update.name}")
        return
    original_message, update_message = original.message.proto, update.message.proto
    assert isinstance(original_message, MessageProto) and isinstance(update_message, MessageProto)
    sub = ctx.sub()
    _compare_message(sub, original.message.local_name, f".{original.name}", f".{update.name}", original_message, update_message)
    ctx.extend(sub.found)
    if any(not difference.compatible for difference in sub.found):
        ctx.add("FIELD_NAMED_TYPE_CHANGED", path, f"message {original.name} changed incompatibly")


def _local(field_type: _FieldType) -> str:
    if field_type.message is not None:
        return field_type.message.local_name
    return field_type.name

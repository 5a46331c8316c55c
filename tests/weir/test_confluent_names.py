"""Every public name of confluent-kafka (top level, ``admin``, ``error``, ``serialization``, ``aio``,
and KafkaError's codes) exists in weir, except those listed below with the reason Weir leaves
them out. A confluent-kafka upgrade that adds a name fails here until weir has it or it is listed."""

from __future__ import annotations

import importlib
from types import ModuleType

import confluent_kafka
import pytest

import weir

# Names Weir deliberately does not offer, each with why.
NOT_OFFERED = {
    # Share groups (KIP-932): Weir's brokers have no share groups.
    "ShareConsumer",
    "DeserializingShareConsumer",
    "deserializing_share_consumer",
    "AcknowledgeType",
    "Messages",  # ShareConsumer's batch of records
    "ConcurrentModificationException",  # raised by ShareConsumer only
    "IllegalStateException",  # raised by ShareConsumer only
    "SHARE_ACKNOWLEDGE_TYPE_ACCEPT",  # cimpl's AcknowledgeType values
    "SHARE_ACKNOWLEDGE_TYPE_REJECT",
    "SHARE_ACKNOWLEDGE_TYPE_RELEASE",
    # throttle_cb's argument: configuration callbacks are helper "sdkconf"'s part of issue 16.
    "ThrottleEvent",
    # confluent-kafka's own plumbing: its modules' imports.
    "os",
    "Any",
    "Dict",
    "List",
    "Optional",
    "Set",
    "Tuple",
    "Union",
    "Callable",
    "Enum",
    "HeadersType",
    "concurrent",
    "string_type",
    "warnings",
    # confluent_kafka.avro's submodules: weir.avro is one module with their classes at its top.
    "cached_schema_registry_client",
    "serializer",
    "error",
    # Topic ids are UUID strings in weir (TopicDescription.topic_id), not a Uuid object.
    "Uuid",
}


def public_names(module: ModuleType) -> set[str]:
    return {name for name in dir(module) if not name.startswith("_")}


@pytest.mark.parametrize(
    "confluent_name, weir_name",
    [
        ("confluent_kafka", "weir"),
        ("confluent_kafka.admin", "weir.admin"),
        ("confluent_kafka.error", "weir.error"),
        ("confluent_kafka.serialization", "weir.serialization"),
        ("confluent_kafka.aio", "weir.aio"),
        ("confluent_kafka.cimpl", "weir.cimpl"),
        ("confluent_kafka.avro", "weir.avro"),
    ],
)
def test_every_public_name_of_confluent_kafka_is_in_weir(confluent_name: str, weir_name: str) -> None:
    confluent_module, weir_module = importlib.import_module(confluent_name), importlib.import_module(weir_name)
    missing = sorted(public_names(confluent_module) - public_names(weir_module) - NOT_OFFERED)
    # Submodules of confluent_kafka count when weir has the module, imported or not.
    missing = [name for name in missing if not _is_weir_module(f"{weir_name}.{name}")]
    assert missing == []


def test_cimpl_constants_have_confluent_kafkas_values() -> None:
    import confluent_kafka.cimpl

    import weir.cimpl

    constants = {name: value for name, value in vars(confluent_kafka.cimpl).items() if name.isupper() and isinstance(value, int) and name not in NOT_OFFERED}
    assert {name: getattr(weir.cimpl, name, None) for name in constants} == constants


def _is_weir_module(name: str) -> bool:
    try:
        importlib.import_module(name)
    except ImportError:
        return False
    return True


def test_kafka_error_has_every_code_of_confluent_kafka_with_the_same_number() -> None:
    names = {name for name in dir(confluent_kafka.KafkaError) if not name.startswith("__") and isinstance(getattr(confluent_kafka.KafkaError, name), int)}
    assert sorted(name for name in names if getattr(weir.KafkaError, name, None) != getattr(confluent_kafka.KafkaError, name)) == []
    assert weir.KafkaError.UNKNOWN_TOPIC_OR_PART == weir.KafkaError.UNKNOWN_TOPIC_OR_PARTITION == 3
    assert weir.KafkaError(weir.KafkaError._CONFLICT).name() == "_CONFLICT"
    assert weir.KafkaError(weir.KafkaError.SECURITY_DISABLED).str() == "Security features are disabled."


def test_enum_values_match_confluent_kafka() -> None:
    from confluent_kafka import admin as confluent_admin

    from weir import admin

    for name in ("AclOperation", "AclPermissionType", "ResourceType", "ResourcePatternType", "ConfigSource", "AlterConfigOpType", "ScramMechanism"):
        ours, theirs = getattr(admin, name), getattr(confluent_admin, name)
        assert {member.name: int(member.value) for member in ours} == {member.name: int(member.value) for member in theirs}, name
    assert {member.name: member.value for member in weir.IsolationLevel} == {member.name: member.value for member in confluent_kafka.IsolationLevel}
    assert {member.name: member.value for member in weir.ElectionType} == {member.name: member.value for member in confluent_kafka.ElectionType}


def test_partition_functions_pick_librdkafkas_partitions() -> None:
    keys = [b"", b"a", b"user_12345", bytes(range(40))]
    for function in ("murmur2", "consistent", "fnv1a"):
        assert [getattr(weir, function)(key, 7) for key in keys] == [getattr(confluent_kafka, function)(key, 7) for key in keys], function
    with pytest.raises(ValueError, match="partition_count"):
        weir.murmur2(b"key", 0)
    with pytest.raises(TypeError, match="key must be bytes"):
        weir.consistent("text", 3)  # type: ignore[arg-type]

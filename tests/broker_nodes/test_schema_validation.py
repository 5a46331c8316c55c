"""Broker-side schema validation: the per-record check and the schema id cache, without a broker."""

from __future__ import annotations

from types import MappingProxyType

import pytest

from broker_nodes.clock import ManualClock
from broker_nodes.requests.schema_validation import SchemaRules, SchemaValidationError, SubjectRule, check_records, refuse_invalid, schema_rules
from broker_nodes.schema_ids import SchemaIdCache, SchemaRegistryUnavailableError, controller_schema_lookup
from broker_nodes.server.errors import error_code_and_message
from broker_nodes.topic_registry import TopicMetadata
from weir.errors import ErrorCode
from weir.records import build_batch
from weir.topic_config import InvalidConfigError, validate_topic_configs

TENANT = "tn-a"
# (tenant, id) -> live subjects: id 1 is orders-value, id 2 orders-key, id 3 another topic's, id 9 tenant b's.
REGISTRY = {(TENANT, 1): ("orders-value",), (TENANT, 2): ("orders-key",), (TENANT, 3): ("payments-value",), ("tn-b", 9): ("orders-value",)}


def framed(schema_id: int, payload: bytes = b"\x02x") -> bytes:
    return b"\x00" + schema_id.to_bytes(4, "big") + payload


def batch(*pairs: tuple[bytes | None, bytes | None]) -> bytes:
    return build_batch([(1_700_000_000_000, key, value, None) for key, value in pairs])


class Registry:
    def __init__(self) -> None:
        self.calls: list[tuple[str, int]] = []
        self.subjects = dict(REGISTRY)

    def __call__(self, tenant_id: str, schema_id: int) -> tuple[str, ...]:
        self.calls.append((tenant_id, schema_id))
        return self.subjects.get((tenant_id, schema_id), ())


VALUE_ONLY = SchemaRules(key=None, value=SubjectRule("value", "TopicNameStrategy"))
BOTH = SchemaRules(key=SubjectRule("key", "TopicNameStrategy"), value=SubjectRule("value", "TopicNameStrategy"))


def check(records: bytes, rules: SchemaRules = VALUE_ONLY, tenant: str = TENANT) -> list[str]:
    cache = SchemaIdCache(Registry(), ManualClock().monotonic)
    errors = check_records(records, "orders", rules, lambda schema_id, max_age: cache.subjects(tenant, schema_id, max_age=max_age), cache.negative_ttl)
    return [f"{error.batch_index}: {error.message}" for error in errors]


def test_a_record_with_a_registered_id_for_the_topic_subject_passes() -> None:
    assert check(batch((b"k", framed(1)), (None, framed(1)))) == []


def test_a_value_without_the_magic_byte_is_refused_naming_the_record() -> None:
    assert check(batch((None, framed(1)), (None, b'{"json": 1}'))) == [
        "1: value of record 1: starts with byte 0x7b, not the schema registry's magic byte 0 followed by a 4-byte schema id"
    ]


def test_a_value_shorter_than_the_wire_header_is_refused() -> None:
    assert check(batch((None, b"\x00\x00"), (None, b""))) == [
        "0: value of record 0: starts with byte 0x00, not the schema registry's magic byte 0 followed by a 4-byte schema id",
        "1: value of record 1: starts with nothing, not the schema registry's magic byte 0 followed by a 4-byte schema id",
    ]


def test_an_unknown_id_is_refused() -> None:
    assert check(batch((None, framed(77)))) == ["0: value of record 0: schema id 77 is not registered"]


def test_another_tenants_id_is_refused_as_unknown() -> None:
    assert check(batch((None, framed(9)))) == ["0: value of record 0: schema id 9 is not registered"]
    assert check(batch((None, framed(9))), tenant="tn-b") == []


def test_an_id_of_another_subject_is_refused_naming_the_expected_subject() -> None:
    assert check(batch((None, framed(3)))) == ["0: value of record 0: schema id 3 is not registered under subject 'orders-value' (only under payments-value)"]


def test_null_values_and_keys_pass_as_tombstones() -> None:
    assert check(batch((None, None), (None, None)), BOTH) == []


def test_key_and_value_are_checked_against_their_own_subjects() -> None:
    assert check(batch((framed(2), framed(1))), BOTH) == []
    assert check(batch((framed(1), framed(2))), BOTH) == [
        "0: key of record 0: schema id 1 is not registered under subject 'orders-key' (only under orders-value)",
        "0: value of record 0: schema id 2 is not registered under subject 'orders-value' (only under orders-key)",
    ]
    # Key validation off: any key passes.
    assert check(batch((b"plain key", framed(1)))) == []


def test_record_name_strategies() -> None:
    subjects = frozenset({"orders-com.acme.Order"})
    assert SubjectRule("value", "TopicRecordNameStrategy").accepts("orders", subjects)
    assert not SubjectRule("value", "TopicRecordNameStrategy").accepts("orders", frozenset({"orders-value", "payments-com.acme.Order"}))
    assert SubjectRule("value", "RecordNameStrategy").accepts("orders", frozenset({"com.acme.Order"}))
    assert not SubjectRule("value", "TopicNameStrategy").accepts("orders", subjects)


def test_rules_come_from_the_topic_configs() -> None:
    assert schema_rules({}) is None
    assert schema_rules({"confluent.value.schema.validation": "false", "retention.ms": "1"}) is None
    assert schema_rules({"confluent.value.schema.validation": "TRUE"}) == VALUE_ONLY
    rules = schema_rules(
        {"confluent.key.schema.validation": "true", "confluent.key.subject.name.strategy": "io.confluent.kafka.serializers.subject.RecordNameStrategy"}
    )
    assert rules == SchemaRules(key=SubjectRule("key", "RecordNameStrategy"), value=None)


def test_the_configs_are_in_the_topic_config_table() -> None:
    assert validate_topic_configs({"confluent.value.schema.validation": "true", "confluent.value.subject.name.strategy": "TopicRecordNameStrategy"}) == {
        "confluent.value.schema.validation": True,
        "confluent.value.subject.name.strategy": "TopicRecordNameStrategy",
    }
    with pytest.raises(InvalidConfigError, match="must be one of"):
        validate_topic_configs({"confluent.key.subject.name.strategy": "TopicStrategy"})
    with pytest.raises(InvalidConfigError, match="BOOLEAN"):
        validate_topic_configs({"confluent.key.schema.validation": "yes"})


class Item:
    def __init__(self, topic: str, partition: int, records: bytes) -> None:
        self.topic, self.partition, self.records = topic, partition, records


def topics(name: str, configs: dict[str, str]) -> TopicMetadata:
    return TopicMetadata(name, "id", 3, 1, MappingProxyType(configs))


def test_refuse_invalid_checks_only_topics_with_validation_and_answers_invalid_record() -> None:
    registry = Registry()
    cache = SchemaIdCache(registry, ManualClock().monotonic)
    known = {
        f"{TENANT}~orders": topics(f"{TENANT}~orders", {"confluent.value.schema.validation": "true"}),
        f"{TENANT}~plain": topics(f"{TENANT}~plain", {}),
    }
    items = [Item("orders", 0, batch((None, framed(1)))), Item("orders", 1, batch((None, framed(1)), (None, b"bad"))), Item("plain", 0, batch((None, b"bad")))]
    refused = refuse_invalid(known.get, cache, lambda name: f"{TENANT}~{name}", items)
    assert list(refused) == [("orders", 1)]
    error = refused[("orders", 1)]
    assert isinstance(error, SchemaValidationError)
    assert [(entry.batch_index, entry.message[:15]) for entry in error.record_errors] == [(1, "value of record")]
    code, message = error_code_and_message(error)
    assert code == ErrorCode.INVALID_RECORD
    assert "1 record(s) of orders-1 failed schema validation; record 1: value of record 1: starts with byte 0x62" in message
    assert registry.calls == [(TENANT, 1)]  # one lookup, then the cache


def test_an_unreachable_registry_refuses_the_batch_with_a_retriable_error() -> None:
    cache = SchemaIdCache(controller_schema_lookup(None), ManualClock().monotonic)
    known = {f"{TENANT}~orders": topics(f"{TENANT}~orders", {"confluent.value.schema.validation": "true"})}
    refused = refuse_invalid(known.get, cache, lambda name: f"{TENANT}~{name}", [Item("orders", 0, batch((None, framed(1))))])
    error = refused[("orders", 0)]
    assert isinstance(error, SchemaRegistryUnavailableError) and error.retriable
    assert error_code_and_message(error)[0] == ErrorCode.REQUEST_TIMED_OUT


def test_cache_keeps_positive_entries_longer_than_negative_ones() -> None:
    clock = ManualClock()
    registry = Registry()
    cache = SchemaIdCache(registry, clock.monotonic, positive_ttl=300.0, negative_ttl=5.0)
    assert cache.subjects(TENANT, 1) == {"orders-value"}
    assert cache.subjects(TENANT, 77) == frozenset()
    registry.subjects[(TENANT, 77)] = ("orders-value",)
    clock.advance(4_000)
    assert cache.subjects(TENANT, 77) == frozenset()  # negative entry still fresh
    clock.advance(2_000)
    assert cache.subjects(TENANT, 77) == {"orders-value"}  # negative entry expired
    assert registry.calls.count((TENANT, 1)) == 1
    clock.advance(300_000)
    cache.subjects(TENANT, 1)
    assert registry.calls.count((TENANT, 1)) == 2


def test_cache_asks_again_for_a_subject_missing_from_an_older_positive_entry() -> None:
    clock = ManualClock()
    registry = Registry()
    cache = SchemaIdCache(registry, clock.monotonic)
    rules = VALUE_ONLY
    records = batch((None, framed(3)))

    def subjects_of(schema_id: int, max_age: float | None) -> frozenset[str]:
        return cache.subjects(TENANT, schema_id, max_age=max_age)

    assert len(check_records(records, "orders", rules, subjects_of, cache.negative_ttl)) == 1
    registry.subjects[(TENANT, 3)] = ("payments-value", "orders-value")
    clock.advance(6_000)
    assert check_records(records, "orders", rules, subjects_of, cache.negative_ttl) == []


def test_cache_is_bounded() -> None:
    registry = Registry()
    cache = SchemaIdCache(registry, ManualClock().monotonic, max_entries=2)
    for schema_id in (1, 2, 3):
        cache.subjects(TENANT, schema_id)
    assert len(cache) == 2
    cache.subjects(TENANT, 1)  # the oldest went first
    assert registry.calls.count((TENANT, 1)) == 2


def test_the_kafka_listener_answers_kip_467_record_errors_from_v8() -> None:
    from kio.schema.produce.v7 import response as v7
    from kio.schema.produce.v11 import response as v11

    from broker_nodes.kafka_protocol.handlers.produce import _partition
    from broker_nodes.requests.produce import ProducePartitionOutcome

    outcome = ProducePartitionOutcome("orders", 0, ErrorCode.INVALID_RECORD, "1 record(s) failed", record_errors=((1, "value of record 1: bad"),))
    answered = _partition(v11, outcome)
    assert [(entry.batch_index, entry.batch_index_error_message) for entry in answered.record_errors] == [(1, "value of record 1: bad")]
    assert answered.error_message == "1 record(s) failed" and int(answered.error_code) == ErrorCode.INVALID_RECORD
    assert int(_partition(v7, outcome).error_code) == ErrorCode.INVALID_RECORD  # before v8: the code alone


def test_the_grpc_door_answers_the_refused_records_and_stores_nothing(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """One in-process standalone broker (no controller): a record without the magic byte is refused
    before any lookup; a framed one cannot be checked without a controller (retriable)."""
    from tests.support.in_process_broker import InProcessBroker
    from tests.support.raw_client import RawBroker

    server = InProcessBroker(tmp_path / "data", {"offsets.topic.num.partitions": "1"}).start()
    client = RawBroker(f"127.0.0.1:{server.port}")
    try:
        client.create_topic("orders", 1, {"confluent.value.schema.validation": "true"})
        refused = client.produce("orders", 0, batch((None, framed(1)), (None, b"{}")))
        assert refused.error_code == ErrorCode.INVALID_RECORD
        assert [(entry.batch_index, entry.message[:30]) for entry in refused.record_errors] == [(1, "value of record 1: starts with")]
        unchecked = client.produce("orders", 0, batch((None, framed(1))))
        assert unchecked.error_code == ErrorCode.REQUEST_TIMED_OUT and "without a controller" in unchecked.error_message
        assert client.produce("orders", 0, batch((None, None))).error_code == ErrorCode.NO_ERROR  # a tombstone needs no schema
        assert client.read_all("orders", 0) == [(0, None)]
    finally:
        client.close()
        server.stop()

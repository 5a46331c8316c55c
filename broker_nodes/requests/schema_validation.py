"""Broker-side schema validation, like Confluent Server's: records of a topic with
``confluent.value.schema.validation`` (or ``confluent.key.schema.validation``) on must carry
an id of the producer's tenant's schema registry, registered for the record's subject.

A checked key or value must start with Confluent's wire format, the magic byte 0 and a 4-byte
big-endian schema id, and that id must be a live version of the subject the topic's
``confluent.{key,value}.subject.name.strategy`` names:

- TopicNameStrategy (the default): ``<topic>-key`` / ``<topic>-value``;
- TopicRecordNameStrategy: ``<topic>-<record name>``: any live subject of the id starting
  with ``<topic>-`` (other than ``<topic>-key`` / ``<topic>-value``);
- RecordNameStrategy: ``<record name>``: the id is live under some subject. The broker
  does not parse schemas, so it trusts the record name the producer's serializer derived.

A null key or value (a tombstone) is not checked. One bad record refuses the whole batch
(:class:`SchemaValidationError`, INVALID_RECORD with one entry per bad record, KIP-467's
``record_errors``); an id that could not be checked refuses it with a retriable error.
Topics without validation never reach this module: :func:`schema_rules` answers None for them
from their config overrides, so their produce path decodes no record.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol

from broker_nodes import names
from broker_nodes.schema_ids import SchemaIdCache, SchemaRegistryUnavailableError
from broker_nodes.storage.errors import InvalidRecordError
from broker_nodes.topic_registry import TopicMetadata
from weir.records import RecordFormatError, iter_records
from weir.topic_config import TOPIC_CONFIGS

MAGIC_BYTE = 0  # Confluent's wire format: this byte, then the schema id
WIRE_HEADER_SIZE = 5  # magic byte + 4-byte big-endian schema id
TOPIC_NAME_STRATEGY = "TopicNameStrategy"
RECORD_NAME_STRATEGY = "RecordNameStrategy"
TOPIC_RECORD_NAME_STRATEGY = "TopicRecordNameStrategy"
MAX_SUBJECTS_IN_ERROR = 3  # an id's other subjects named in a refusal

# (schema id, max_age or None) -> the subjects the id is live under for the record's tenant.
SubjectsOf = Callable[[int, float | None], frozenset[str]]


@dataclass(frozen=True, slots=True)
class RecordError:
    """One refused record: its index in the partition's records (KIP-467's batch_index) and why."""

    batch_index: int
    message: str


class SchemaValidationError(InvalidRecordError):
    """Records whose key or value fails the topic's schema validation (INVALID_RECORD); nothing is appended."""

    def __init__(self, topic: str, partition: int, record_errors: Iterable[RecordError]) -> None:
        self.record_errors = tuple(record_errors)
        first = self.record_errors[0].message if self.record_errors else "no record"
        count = len(self.record_errors)
        super().__init__(f"{count} record(s) of {topic}-{partition} failed schema validation; record {self.record_errors[0].batch_index}: {first}")
        self.topic = topic
        self.partition = partition


@dataclass(frozen=True, slots=True)
class SubjectRule:
    """How one part (``key`` or ``value``) of a topic's records is checked."""

    part: str
    strategy: str  # one of the short strategy names

    def expected(self, topic: str) -> str:
        """The subject as the error message names it."""
        if self.strategy == TOPIC_NAME_STRATEGY:
            return f"{topic}-{self.part}"
        if self.strategy == TOPIC_RECORD_NAME_STRATEGY:
            return f"{topic}-<record name>"
        return "<record name>"

    def accepts(self, topic: str, subjects: frozenset[str]) -> bool:
        """Whether one of ``subjects`` is this part's subject for ``topic``."""
        if self.strategy == TOPIC_NAME_STRATEGY:
            return f"{topic}-{self.part}" in subjects
        if self.strategy == TOPIC_RECORD_NAME_STRATEGY:
            prefix = f"{topic}-"
            return any(subject.startswith(prefix) and subject not in (f"{topic}-key", f"{topic}-value") for subject in subjects)
        return bool(subjects)


@dataclass(frozen=True, slots=True)
class SchemaRules:
    key: SubjectRule | None
    value: SubjectRule | None


def schema_rules(configs: Mapping[str, str]) -> SchemaRules | None:
    """The topic's checks from its config overrides; None when neither key nor value validation is on."""
    if not configs:
        return None
    key = _rule(configs, "key")
    value = _rule(configs, "value")
    if key is None and value is None:
        return None
    return SchemaRules(key, value)


def _rule(configs: Mapping[str, str], part: str) -> SubjectRule | None:
    enabled = configs.get(f"confluent.{part}.schema.validation")
    if enabled is None or not TOPIC_CONFIGS[f"confluent.{part}.schema.validation"].parse(enabled):
        return None
    strategy_name = f"confluent.{part}.subject.name.strategy"
    strategy = str(TOPIC_CONFIGS[strategy_name].parse(configs.get(strategy_name, TOPIC_CONFIGS[strategy_name].default)))
    return SubjectRule(part, strategy.rsplit(".", 1)[-1])


def check_records(records: bytes, topic: str, rules: SchemaRules, subjects_of: SubjectsOf, negative_ttl: float) -> list[RecordError]:
    """The records of ``records`` (RecordBatch v2 bytes) whose key or value fails ``rules``; ``topic`` is the plain name.

    Raises RecordFormatError for records that cannot be decoded, and
    SchemaRegistryUnavailableError when an id cannot be checked and no record is surely bad.
    """
    errors: list[RecordError] = []
    verdicts: dict[tuple[str, bytes], str | None] = {}  # (part, first 5 bytes) -> problem: one lookup per id and batch
    unavailable: SchemaRegistryUnavailableError | None = None
    for index, record in enumerate(iter_records(records)):
        for rule, data in ((rules.key, record.key), (rules.value, record.value)):
            if rule is None or data is None:
                continue
            header = (rule.part, data[:WIRE_HEADER_SIZE])
            if header in verdicts:
                problem = verdicts[header]
            else:
                try:
                    problem = verdicts[header] = _problem(rule, topic, data, subjects_of, negative_ttl)
                except SchemaRegistryUnavailableError as error:
                    unavailable = error  # the other records are still checked: a record surely bad refuses the batch for good
                    continue
            if problem is not None:
                errors.append(RecordError(index, f"{rule.part} of record {index}: {problem}"))
    if not errors and unavailable is not None:
        raise unavailable
    return errors


def _problem(rule: SubjectRule, topic: str, data: bytes, subjects_of: SubjectsOf, negative_ttl: float) -> str | None:
    if len(data) < WIRE_HEADER_SIZE or data[0] != MAGIC_BYTE:
        first = f"byte 0x{data[0]:02x}" if data else "nothing"
        return f"starts with {first}, not the schema registry's magic byte 0 followed by a 4-byte schema id"
    schema_id = int.from_bytes(data[1:WIRE_HEADER_SIZE], "big")
    subjects = subjects_of(schema_id, None)
    if subjects and not rule.accepts(topic, subjects):
        subjects = subjects_of(schema_id, negative_ttl)  # perhaps registered under the subject since
    if not subjects:
        return f"schema id {schema_id} is not registered"
    if not rule.accepts(topic, subjects):
        others = ", ".join(sorted(subjects)[:MAX_SUBJECTS_IN_ERROR])
        return f"schema id {schema_id} is not registered under subject {rule.expected(topic)!r} (only under {others})"
    return None


class _Produced(Protocol):
    """One partition's data of a Produce request (``produce.ProducePartition``)."""

    @property
    def topic(self) -> str: ...
    @property
    def partition(self) -> int: ...
    @property
    def records(self) -> bytes: ...


def refuse_invalid(
    topic_of: Callable[[str], TopicMetadata | None],
    cache: SchemaIdCache,
    qualify: Callable[[str], str],
    items: Iterable[_Produced],
) -> dict[tuple[str, int], Exception]:
    """The (plain topic, partition) of ``items`` to refuse, with the error each is answered.

    ``topic_of(qualified name)`` is the topic registry's lookup (None: no such topic, left to
    the append path); ``qualify`` maps the caller's plain names to stored ones. Costs one
    dict lookup per partition for topics without validation.
    """
    refused: dict[tuple[str, int], Exception] = {}
    for item in items:
        qualified = qualify(item.topic)
        metadata = topic_of(qualified)
        rules = schema_rules(metadata.configs) if metadata is not None else None
        if rules is None:
            continue
        tenant_id = names.split(qualified)[0]

        def subjects_of(schema_id: int, max_age: float | None, tenant_id: str = tenant_id) -> frozenset[str]:
            return cache.subjects(tenant_id, schema_id, max_age=max_age)

        try:
            errors = check_records(item.records, item.topic, rules, subjects_of, cache.negative_ttl)
        except (RecordFormatError, SchemaRegistryUnavailableError) as error:
            refused[(item.topic, item.partition)] = error
            continue
        if errors:
            refused[(item.topic, item.partition)] = SchemaValidationError(item.topic, item.partition, errors)
    return refused

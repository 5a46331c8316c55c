"""The declared table of topic configs: Kafka's keys, types, ranges and defaults.

One table serves the broker (it validates CreateTopics / AlterConfigs and builds each log's
settings from it), the SDK (client-side checks) and the control plane (issue 3's catalog),
so a config means the same thing everywhere. Values travel as strings, as in Kafka's
protocol; :func:`validate_topic_configs` parses them into typed values.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TypeAlias

LONG_MAX = 2**63 - 1
INT_MAX = 2**31 - 1

# A parsed config value: INT and LONG parse to int, DOUBLE to float, BOOLEAN to bool, STRING to str, LIST to a tuple of str.
ConfigValue: TypeAlias = int | float | bool | str | tuple[str, ...]


class InvalidConfigError(ValueError):
    """A config key that does not exist or a value of the wrong type or range (INVALID_CONFIG)."""

    retriable = False

    def __init__(self, name: str, value: object, reason: str) -> None:
        super().__init__(f"invalid value {value!r} for config {name!r}: {reason}" if value is not None else f"config {name!r}: {reason}")
        self.name = name
        self.value = value
        self.reason = reason


@dataclass(frozen=True)
class ConfigKey:
    """One topic config: ``type`` is Kafka's ConfigDef type name (INT, LONG, DOUBLE, BOOLEAN, STRING, LIST)."""

    name: str
    type: str
    default: str
    documentation: str
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[str, ...] = field(default=())
    # A LIST with choices may be empty (cleanup.policy since Kafka 4.0, KIP-1030); otherwise it names at least one.
    empty_allowed: bool = False

    def parse(self, raw: str) -> ConfigValue:
        """Parse and range-check ``raw``; raise InvalidConfigError naming the problem."""
        if not isinstance(raw, str):
            raw = str(raw)
        text = raw.strip()
        try:
            value = _PARSERS[self.type](text)
        except ValueError:
            raise InvalidConfigError(self.name, raw, f"expected a value of type {self.type}") from None
        if self.type in ("INT", "LONG", "DOUBLE") and isinstance(value, int | float):
            limit_max = INT_MAX if self.type == "INT" else (LONG_MAX if self.type == "LONG" else None)
            maximum = self.maximum if self.maximum is not None else limit_max
            if self.minimum is not None and value < self.minimum:
                raise InvalidConfigError(self.name, raw, f"must be at least {_number(self.minimum)}")
            if maximum is not None and value > maximum:
                raise InvalidConfigError(self.name, raw, f"must be at most {_number(maximum)}")
        if self.choices:
            members = value if isinstance(value, tuple) else (value,)
            if self.type == "LIST" and not members and not self.empty_allowed:
                raise InvalidConfigError(self.name, raw, f"must list at least one of {', '.join(self.choices)}")
            for member in members:
                if member not in self.choices:
                    raise InvalidConfigError(self.name, raw, f"must be one of {', '.join(self.choices)}")
        return value

    @property
    def default_value(self) -> ConfigValue:
        return self.parse(self.default)


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def _parse_boolean(text: str) -> bool:
    lowered = text.lower()
    if lowered == "true":
        return True
    if lowered == "false":
        return False
    raise ValueError(text)


def _parse_list(text: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in text.split(",") if part.strip())


_PARSERS: dict[str, Callable[[str], ConfigValue]] = {
    "INT": int,
    "LONG": int,
    "DOUBLE": float,
    "BOOLEAN": _parse_boolean,
    "STRING": str,
    "LIST": _parse_list,
}

# Confluent Server's broker-side schema validation: the subject name strategies, by the short
# names and the class names Confluent spells them with (both accepted).
SUBJECT_NAME_STRATEGIES = ("TopicNameStrategy", "RecordNameStrategy", "TopicRecordNameStrategy")
_STRATEGY_PACKAGE = "io.confluent.kafka.serializers.subject."


def _schema_validation_keys() -> list[ConfigKey]:
    """confluent.{key,value}.schema.validation and confluent.{key,value}.subject.name.strategy."""
    keys = []
    for part in ("key", "value"):
        keys.append(
            ConfigKey(
                f"confluent.{part}.schema.validation",
                "BOOLEAN",
                "false",
                f"Refuse a batch whose record {part}s are not in the schema registry's wire format with an id registered for the {part}'s subject.",
            )
        )
        keys.append(
            ConfigKey(
                f"confluent.{part}.subject.name.strategy",
                "STRING",
                "TopicNameStrategy",
                f"How the subject of a record's {part} is named when its schema is validated (TopicNameStrategy: <topic>-{part}).",
                choices=SUBJECT_NAME_STRATEGIES + tuple(_STRATEGY_PACKAGE + name for name in SUBJECT_NAME_STRATEGIES),
            )
        )
    return keys


DAY_MS = 24 * 60 * 60 * 1000
HOUR_MS = 60 * 60 * 1000

TOPIC_CONFIGS: dict[str, ConfigKey] = {
    key.name: key
    for key in [
        ConfigKey(
            "cleanup.policy",
            "LIST",
            "delete",
            "delete: drop old segments by retention; compact: keep the latest record per key; both: compact,delete; "
            "empty (Kafka 4, KIP-1030): neither, records stay until deleted by offset (delete_records).",
            choices=("delete", "compact"),
            empty_allowed=True,
        ),
        ConfigKey(
            "compression.type",
            "STRING",
            "producer",
            "Final compression of the topic's batches; 'producer' keeps what the producer sent.",
            choices=("producer", "uncompressed", "gzip", "snappy", "lz4", "zstd"),
        ),
        ConfigKey("delete.retention.ms", "LONG", str(DAY_MS), "How long tombstones are kept in a compacted topic after their segment is cleaned.", minimum=0),
        ConfigKey("file.delete.delay.ms", "LONG", "60000", "Delay before a deleted segment's files are removed from disk.", minimum=0),
        ConfigKey("flush.messages", "LONG", str(LONG_MAX), "fsync the log after this many appended records.", minimum=1),
        ConfigKey("flush.ms", "LONG", str(LONG_MAX), "fsync the log when this long has passed since the last fsync.", minimum=0),
        ConfigKey("index.interval.bytes", "INT", "4096", "Bytes of log between two entries of the offset index.", minimum=0),
        ConfigKey("max.compaction.lag.ms", "LONG", str(LONG_MAX), "Longest time a record stays ineligible for compaction.", minimum=1),
        ConfigKey("max.message.bytes", "INT", "1048588", "Largest record batch the topic accepts.", minimum=0),
        ConfigKey(
            "message.timestamp.type",
            "STRING",
            "CreateTime",
            "CreateTime keeps the producer's timestamps; LogAppendTime stamps batches with the broker's clock.",
            choices=("CreateTime", "LogAppendTime"),
        ),
        ConfigKey("message.timestamp.before.max.ms", "LONG", str(LONG_MAX), "How far in the past a CreateTime timestamp may lie.", minimum=0),
        ConfigKey(
            "message.timestamp.after.max.ms",
            "LONG",
            str(HOUR_MS),
            "How far in the future a CreateTime timestamp may lie (Kafka 4's default: one hour).",
            minimum=0,
        ),
        ConfigKey(
            "min.cleanable.dirty.ratio", "DOUBLE", "0.5", "Share of the log that must be uncompacted before the cleaner compacts it.", minimum=0.0, maximum=1.0
        ),
        ConfigKey("min.compaction.lag.ms", "LONG", "0", "Shortest time a record stays uncompacted.", minimum=0),
        ConfigKey("min.insync.replicas", "INT", "1", "In-sync replicas that must have a batch before acks=all succeeds.", minimum=1),
        ConfigKey("retention.bytes", "LONG", "-1", "Largest size a partition may grow to before old segments are deleted; -1 for no limit.", minimum=-1),
        ConfigKey("retention.ms", "LONG", str(7 * DAY_MS), "How long a segment is kept after its newest record; -1 for no limit.", minimum=-1),
        ConfigKey("segment.bytes", "INT", str(1024 * 1024 * 1024), "Size at which the active segment rolls.", minimum=1024),
        ConfigKey("segment.index.bytes", "INT", str(10 * 1024 * 1024), "Largest size of a segment's offset and time index.", minimum=64),
        ConfigKey("segment.jitter.ms", "LONG", "0", "Random delay subtracted from segment.ms so that segments do not all roll at once.", minimum=0),
        ConfigKey("segment.ms", "LONG", str(7 * DAY_MS), "Time after which the active segment rolls even if not full.", minimum=1),
        *_schema_validation_keys(),
        ConfigKey(
            "unclean.leader.election.enable",
            "BOOLEAN",
            "false",
            "Allow a replica outside the ISR to become leader (may lose data).",
        ),
    ]
}


def validate_topic_configs(raw: Mapping[str, str]) -> dict[str, ConfigValue]:
    """Parse the given overrides; raise InvalidConfigError for an unknown key or a bad value.

    Returns only the keys given, typed. Combine with :func:`effective_topic_configs` for the full set.
    """
    parsed: dict[str, ConfigValue] = {}
    for name, value in raw.items():
        key = TOPIC_CONFIGS.get(name)
        if key is None:
            raise InvalidConfigError(name, None, "unknown topic config")
        if value is None:
            raise InvalidConfigError(name, None, "a value is required")
        parsed[name] = key.parse(value)
    return parsed


def effective_topic_configs(overrides: Mapping[str, str]) -> dict[str, ConfigValue]:
    """Every topic config, typed: the defaults with ``overrides`` validated and applied."""
    values = {name: key.default_value for name, key in TOPIC_CONFIGS.items()}
    values.update(validate_topic_configs(overrides))
    return values

"""The settings of one partition log, typed, built from the topic config table."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from weir.topic_config import ConfigValue, effective_topic_configs

CLEANUP_POLICY_DELETE = "delete"
CLEANUP_POLICY_COMPACT = "compact"
TIMESTAMP_TYPE_CREATE_TIME = "CreateTime"
TIMESTAMP_TYPE_LOG_APPEND_TIME = "LogAppendTime"
# compression.type value that keeps whatever codec the producer chose.
COMPRESSION_TYPE_PRODUCER = "producer"
# compression.type value for "no codec"; Kafka spells it differently from the codec name "none".
COMPRESSION_TYPE_UNCOMPRESSED = "uncompressed"


@dataclass(frozen=True)
class LogConfig:
    """Kafka topic configs that the storage engine reads, under Python names.

    Immutable: a config change builds a new LogConfig and hands it to
    ``PartitionLog.update_config``.
    """

    segment_bytes: int
    segment_ms: int
    segment_jitter_ms: int
    segment_index_bytes: int
    index_interval_bytes: int
    retention_ms: int
    retention_bytes: int
    cleanup_policy: frozenset[str]
    delete_retention_ms: int
    min_compaction_lag_ms: int
    max_compaction_lag_ms: int
    min_cleanable_dirty_ratio: float
    flush_messages: int
    flush_ms: int
    max_message_bytes: int
    message_timestamp_type: str
    message_timestamp_before_max_ms: int
    message_timestamp_after_max_ms: int
    file_delete_delay_ms: int
    compression_type: str

    @classmethod
    def from_topic_configs(cls, values: Mapping[str, ConfigValue]) -> LogConfig:
        """Build from ``weir.topic_config.effective_topic_configs(...)``: typed values keyed by Kafka names."""
        return cls(
            segment_bytes=int(_scalar(values, "segment.bytes")),
            segment_ms=int(_scalar(values, "segment.ms")),
            segment_jitter_ms=int(_scalar(values, "segment.jitter.ms")),
            segment_index_bytes=int(_scalar(values, "segment.index.bytes")),
            index_interval_bytes=int(_scalar(values, "index.interval.bytes")),
            retention_ms=int(_scalar(values, "retention.ms")),
            retention_bytes=int(_scalar(values, "retention.bytes")),
            cleanup_policy=frozenset(_list(values, "cleanup.policy")),
            delete_retention_ms=int(_scalar(values, "delete.retention.ms")),
            min_compaction_lag_ms=int(_scalar(values, "min.compaction.lag.ms")),
            max_compaction_lag_ms=int(_scalar(values, "max.compaction.lag.ms")),
            min_cleanable_dirty_ratio=float(_scalar(values, "min.cleanable.dirty.ratio")),
            flush_messages=int(_scalar(values, "flush.messages")),
            flush_ms=int(_scalar(values, "flush.ms")),
            max_message_bytes=int(_scalar(values, "max.message.bytes")),
            message_timestamp_type=str(values["message.timestamp.type"]),
            message_timestamp_before_max_ms=int(_scalar(values, "message.timestamp.before.max.ms")),
            message_timestamp_after_max_ms=int(_scalar(values, "message.timestamp.after.max.ms")),
            file_delete_delay_ms=int(_scalar(values, "file.delete.delay.ms")),
            compression_type=str(values["compression.type"]),
        )

    @classmethod
    def default(cls) -> LogConfig:
        """Kafka's defaults for every topic config."""
        return cls.from_topic_configs(effective_topic_configs({}))

    @classmethod
    def from_overrides(cls, overrides: Mapping[str, str]) -> LogConfig:
        """Defaults with Kafka-named string ``overrides`` validated and applied (handy for tests and tools)."""
        return cls.from_topic_configs(effective_topic_configs(overrides))

    @property
    def deletes(self) -> bool:
        """True when retention deletes old segments (cleanup.policy contains delete)."""
        return CLEANUP_POLICY_DELETE in self.cleanup_policy

    @property
    def compacts(self) -> bool:
        """True when the cleaner compacts the log (cleanup.policy contains compact)."""
        return CLEANUP_POLICY_COMPACT in self.cleanup_policy

    @property
    def uses_log_append_time(self) -> bool:
        return self.message_timestamp_type == TIMESTAMP_TYPE_LOG_APPEND_TIME


def _scalar(values: Mapping[str, ConfigValue], name: str) -> int | float | str:
    """The parsed value of a number or string config (weir.topic_config's table declares its type)."""
    value = values[name]
    if isinstance(value, tuple):
        raise TypeError(f"topic config {name!r} is a list, expected a single value")
    return value


def _list(values: Mapping[str, ConfigValue], name: str) -> tuple[str, ...]:
    """The parsed value of a LIST config."""
    value = values[name]
    if not isinstance(value, tuple):
        raise TypeError(f"topic config {name!r} is {value!r}, expected a list")
    return value

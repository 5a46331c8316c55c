"""The options of ``spark.read.format("weir")``, parsed once into a :class:`SourceOptions`.

Names are those of Spark's Kafka source wherever one exists, so that a job written for
``format("kafka")`` ports by changing the format and the credentials:

=============================  =============================================================
``bootstrap.servers``          brokers to bootstrap from (``kafka.bootstrap.servers`` too)
``subscribe``                  comma-separated topic list; or
``subscribePattern``           a regular expression over the topics the caller can see; or
``assign``                     JSON ``{"orders": [0, 1]}``: exact partitions
``startingOffsets``            ``earliest`` / ``latest`` / JSON ``{"orders": {"0": 23, "1": -2}}``
                               (-2 earliest, -1 latest); batch default earliest, streaming latest
``endingOffsets``              batch only: ``latest`` (default) / JSON (-1 latest)
``failOnDataLoss``             true (default): a range whose records are gone fails the query
``minPartitions``              split large ranges so there are at least about this many tasks
``maxRecordsPerPartition``     split ranges so no task reads more than this many offsets
``maxOffsetsPerTrigger``       streaming: at most this many offsets per micro-batch
``includeHeaders``             false (default): add ``headers array<struct<key,value>>``
``kafkaConsumer.pollTimeoutMs`` a read that sees no record for this long fails (120 s)
``sasl.username`` / ``sasl.password``  a tenant's API key and secret (what weir.Consumer takes)
``weir.internal.token``        the control plane's internal credential: every tenant's topics
                               by qualified name (``tn-…~orders``) and the internal ``__`` topics
``ssl.ca.location``            PEM CA file: connect with TLS and verify the brokers
``kafka.<key>``                any other SDK (librdkafka-style) key, passed through as ``<key>``
=============================  =============================================================

Partitions an offsets JSON leaves out take the default (earliest for the start, latest for
the end); Spark's Kafka source refuses such a JSON instead, which breaks an incremental job
the day a topic grows. Unknown options are refused (Spark ignores them), so a misspelt
``startingOffset`` cannot silently read the whole topic.

Spark hands options over in a case-insensitive map with lower-cased keys; :func:`parse_options`
lower-cases too, so a plain dict in any case works the same (:func:`resolve_offsets`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from spark_pipelines.source_errors import InvalidOptionError
from weir.config import CONSUMER, ClientConfig
from weir.errors import KafkaException

EARLIEST = -2  # an offsets-JSON value: the partition's log start offset
LATEST = -1  # an offsets-JSON value: the partition's end offset (high watermark)
KAFKA_PREFIX = "kafka."  # Spark's convention for options passed through to the client
DEFAULT_POLL_TIMEOUT_MS = 120_000  # Spark's default (spark.network.timeout)
CLIENT_ID = "weir-spark-source"

# Options of the source itself, lower-cased as Spark hands them over.
_SOURCE_OPTIONS = frozenset(
    {
        "bootstrap.servers",
        "subscribe",
        "subscribepattern",
        "assign",
        "startingoffsets",
        "endingoffsets",
        "failondataloss",
        "minpartitions",
        "maxrecordsperpartition",
        "maxoffsetspertrigger",
        "includeheaders",
        "kafkaconsumer.polltimeoutms",
    }
)
# Client options given without the kafka. prefix: the credentials, as weir.Consumer names them.
_CLIENT_OPTIONS = frozenset({"sasl.username", "sasl.password", "weir.internal.token", "ssl.ca.location"})
# SDK keys the source sets itself: reading ranges depends on them.
_RESERVED_CLIENT_KEYS = {
    "auto.offset.reset": "use startingOffsets and failOnDataLoss",
    "enable.auto.commit": "the source commits nothing; Spark keeps offsets in its checkpoint",
    "enable.partition.eof": "the source needs end-of-partition events to finish a range",
    "group.id": "the source assigns partitions itself and uses no consumer group",
}


@dataclass(frozen=True)
class OffsetsSpec:
    """``earliest``, ``latest``, or specific offsets per partition (values may be EARLIEST / LATEST)."""

    kind: str  # "earliest", "latest" or "specific"
    specific: Mapping[str, Mapping[int, int]] = field(default_factory=dict)

    def offset_for(self, topic: str, partition: int, default: int) -> int:
        """The requested offset of one partition (EARLIEST / LATEST or absolute); ``default`` when not named."""
        if self.kind == "earliest":
            return EARLIEST
        if self.kind == "latest":
            return LATEST
        return self.specific.get(topic, {}).get(partition, default)


@dataclass(frozen=True)
class TopicSelection:
    """Exactly one of: topic names (``subscribe``), a pattern (``subscribePattern``), or exact partitions (``assign``)."""

    topics: tuple[str, ...] = ()
    pattern: re.Pattern[str] | None = None
    assigned: Mapping[str, tuple[int, ...]] = field(default_factory=dict)

    def describe(self) -> str:
        if self.pattern is not None:
            return f"subscribePattern {self.pattern.pattern!r}"
        if self.assigned:
            return f"assign {dict(self.assigned)}"
        return f"subscribe {','.join(self.topics)}"


@dataclass(frozen=True)
class SourceOptions:
    """Everything the source needs, validated; ``client_config`` is a weir.Consumer configuration."""

    client_config: Mapping[str, Any]
    selection: TopicSelection
    starting: OffsetsSpec
    ending: OffsetsSpec
    fail_on_data_loss: bool = True
    min_partitions: int | None = None
    max_records_per_partition: int | None = None
    max_offsets_per_trigger: int | None = None
    include_headers: bool = False
    poll_timeout_seconds: float = DEFAULT_POLL_TIMEOUT_MS / 1000.0

    @property
    def bootstrap_servers(self) -> str:
        return str(self.client_config["bootstrap.servers"])


def parse_options(raw: Mapping[str, str], *, streaming: bool) -> SourceOptions:
    """Validate ``raw`` (Spark's options) for a batch (``streaming`` False) or streaming read.

    Raises :class:`InvalidOptionError` naming the first option at fault.
    """
    options = {str(key).lower(): value for key, value in raw.items() if value is not None}
    unknown = sorted(key for key in options if key not in _SOURCE_OPTIONS and key not in _CLIENT_OPTIONS and not key.startswith(KAFKA_PREFIX))
    if unknown:
        raise InvalidOptionError(unknown[0], "unknown option of the weir source (options of the SDK are given as kafka.<key>)")
    selection = _parse_selection(options)
    starting = parse_offsets_spec("startingOffsets", options.get("startingoffsets", "latest" if streaming else "earliest"))
    if "endingoffsets" in options and streaming:
        raise InvalidOptionError("endingOffsets", "is for batch queries only; a stream runs on")
    ending = parse_offsets_spec("endingOffsets", options.get("endingoffsets", "latest"))
    if not streaming:
        _check_batch_bounds(starting, ending)
    _check_named_topics(selection, starting, "startingOffsets")
    _check_named_topics(selection, ending, "endingOffsets")
    if "maxoffsetspertrigger" in options and not streaming:
        raise InvalidOptionError("maxOffsetsPerTrigger", "is for streaming queries only")
    return SourceOptions(
        client_config=build_client_config(options),
        selection=selection,
        starting=starting,
        ending=ending,
        fail_on_data_loss=_parse_bool(options, "failondataloss", "failOnDataLoss", True),
        min_partitions=_parse_positive(options, "minpartitions", "minPartitions"),
        max_records_per_partition=_parse_positive(options, "maxrecordsperpartition", "maxRecordsPerPartition"),
        max_offsets_per_trigger=_parse_positive(options, "maxoffsetspertrigger", "maxOffsetsPerTrigger"),
        include_headers=_parse_bool(options, "includeheaders", "includeHeaders", False),
        poll_timeout_seconds=(_parse_positive(options, "kafkaconsumer.polltimeoutms", "kafkaConsumer.pollTimeoutMs") or DEFAULT_POLL_TIMEOUT_MS) / 1000.0,
    )


def build_client_config(options: Mapping[str, str]) -> dict[str, Any]:
    """The weir.Consumer configuration of lower-cased ``options``: bootstrap, credentials, TLS, kafka.* keys."""
    config: dict[str, Any] = {"client.id": CLIENT_ID}
    for key, value in options.items():
        if key.startswith(KAFKA_PREFIX):
            client_key = key[len(KAFKA_PREFIX) :]
            if client_key in _RESERVED_CLIENT_KEYS:
                raise InvalidOptionError(key, f"is set by the source itself ({_RESERVED_CLIENT_KEYS[client_key]})")
            if client_key in config and config[client_key] != value:
                raise InvalidOptionError(key, f"contradicts option {client_key!r}")
            config[client_key] = value
        elif key in _CLIENT_OPTIONS or key == "bootstrap.servers":
            if key in config and config[key] != value:
                raise InvalidOptionError(key, f"contradicts option 'kafka.{key}'")
            config[key] = value
    if not config.get("bootstrap.servers"):
        raise InvalidOptionError("bootstrap.servers", "must be set (host:port of one or more brokers)")
    has_key = "sasl.username" in config or "sasl.password" in config
    if has_key and not (config.get("sasl.username") and config.get("sasl.password")):
        raise InvalidOptionError("sasl.password" if config.get("sasl.username") else "sasl.username", "an API key needs both sasl.username and sasl.password")
    if has_key and config.get("weir.internal.token"):
        raise InvalidOptionError("weir.internal.token", "give either an API key (sasl.username / sasl.password) or the internal token, not both")
    if config.get("ssl.ca.location") and "security.protocol" not in config:
        config["security.protocol"] = "sasl_ssl" if has_key else "ssl"
    try:
        ClientConfig(config, CONSUMER)
    except KafkaException as error:
        raise InvalidOptionError("kafka.*", error.error.str()) from None
    return config


def parse_offsets_spec(option: str, raw: str) -> OffsetsSpec:
    """``earliest`` / ``latest`` / JSON ``{"topic": {"0": 23}}`` -> OffsetsSpec; InvalidOptionError when malformed."""
    text = str(raw).strip()
    if text.lower() in ("earliest", "latest"):
        return OffsetsSpec(text.lower())
    try:
        parsed = json.loads(text)
    except json.JSONDecodeError as error:
        raise InvalidOptionError(option, f'expected "earliest", "latest" or JSON like {{"topic": {{"0": 23}}}}, got {text!r} ({error.msg})') from None
    if not isinstance(parsed, dict) or not parsed:
        raise InvalidOptionError(option, 'the JSON must be a non-empty object {"topic": {"partition": offset}}')
    specific: dict[str, dict[int, int]] = {}
    for topic, partitions in parsed.items():
        if not isinstance(partitions, dict):
            raise InvalidOptionError(option, f'topic {topic!r}: expected an object {{"partition": offset}}, got {json.dumps(partitions)}')
        offsets: dict[int, int] = {}
        for partition, offset in partitions.items():
            number = _json_int(partition)
            if number is None or number < 0:
                raise InvalidOptionError(option, f"topic {topic!r}: partition {partition!r} is not a partition number")
            if isinstance(offset, bool) or not isinstance(offset, int) or offset < EARLIEST:
                raise InvalidOptionError(option, f"{topic} [{partition}]: offset {json.dumps(offset)} must be an offset >= 0, -2 (earliest) or -1 (latest)")
            offsets[number] = offset
        specific[topic] = offsets
    return OffsetsSpec("specific", specific)


def _json_int(text: str) -> int | None:
    try:
        return int(text) if str(text).strip().lstrip("-").isdigit() else None
    except ValueError:
        return None


def _check_batch_bounds(starting: OffsetsSpec, ending: OffsetsSpec) -> None:
    """Spark's rules for batch reads: a start cannot be latest, an end cannot be earliest."""
    if starting.kind == "latest" or any(offset == LATEST for offsets in starting.specific.values() for offset in offsets.values()):
        raise InvalidOptionError("startingOffsets", "latest (-1) is not allowed for batch queries: the range would be empty")
    if ending.kind == "earliest" or any(offset == EARLIEST for offsets in ending.specific.values() for offset in offsets.values()):
        raise InvalidOptionError("endingOffsets", "earliest (-2) is not allowed for batch queries: the range would be empty")


def _check_named_topics(selection: TopicSelection, spec: OffsetsSpec, option: str) -> None:
    for topic, partitions in spec.specific.items():
        if selection.topics and topic not in selection.topics:
            raise InvalidOptionError(option, f"topic {topic!r} is not among the subscribed topics ({','.join(selection.topics)})")
        if selection.pattern is not None and not selection.pattern.fullmatch(topic):
            raise InvalidOptionError(option, f"topic {topic!r} does not match subscribePattern {selection.pattern.pattern!r}")
        if selection.assigned:
            assigned = selection.assigned.get(topic)
            if assigned is None:
                raise InvalidOptionError(option, f"topic {topic!r} is not among the assigned topics")
            extra = sorted(set(partitions) - set(assigned))
            if extra:
                raise InvalidOptionError(option, f"{topic} [{extra[0]}] is not among the assigned partitions")


def _parse_selection(options: Mapping[str, str]) -> TopicSelection:
    given = [name for name in ("subscribe", "subscribepattern", "assign") if options.get(name)]
    if len(given) != 1:
        named = ", ".join(given) if given else "none"
        raise InvalidOptionError("subscribe", f"give exactly one of subscribe, subscribePattern or assign (given: {named})")
    if given[0] == "subscribe":
        topics = tuple(dict.fromkeys(name.strip() for name in options["subscribe"].split(",") if name.strip()))
        if not topics:
            raise InvalidOptionError("subscribe", "names no topic")
        return TopicSelection(topics=topics)
    if given[0] == "subscribepattern":
        try:
            return TopicSelection(pattern=re.compile(options["subscribepattern"]))
        except re.error as error:
            raise InvalidOptionError("subscribePattern", f"is not a regular expression: {error}") from None
    return TopicSelection(assigned=_parse_assign(options["assign"]))


def _parse_assign(raw: str) -> dict[str, tuple[int, ...]]:
    try:
        parsed = json.loads(raw)
    except json.JSONDecodeError as error:
        raise InvalidOptionError("assign", f'expected JSON like {{"topic": [0, 1]}}, got {raw!r} ({error.msg})') from None
    if not isinstance(parsed, dict) or not parsed:
        raise InvalidOptionError("assign", 'the JSON must be a non-empty object {"topic": [partitions]}')
    assigned = {}
    for topic, partitions in parsed.items():
        if not isinstance(partitions, list) or not partitions or any(isinstance(p, bool) or not isinstance(p, int) or p < 0 for p in partitions):
            raise InvalidOptionError("assign", f"topic {topic!r}: expected a non-empty list of partition numbers, got {json.dumps(partitions)}")
        assigned[topic] = tuple(sorted(set(partitions)))
    return assigned


def _parse_bool(options: Mapping[str, str], key: str, name: str, default: bool) -> bool:
    raw = options.get(key)
    if raw is None:
        return default
    text = str(raw).strip().lower()
    if text not in ("true", "false"):
        raise InvalidOptionError(name, f"expected true or false, got {raw!r}")
    return text == "true"


def _parse_positive(options: Mapping[str, str], key: str, name: str) -> int | None:
    raw = options.get(key)
    if raw is None:
        return None
    try:
        value = int(str(raw).strip())
    except ValueError:
        value = 0
    if value <= 0:
        raise InvalidOptionError(name, f"expected a positive integer, got {raw!r}")
    return value

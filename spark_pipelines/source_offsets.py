"""Planning-time offsets: which partitions a read covers and where each range starts and ends.

Planning asks the brokers through the SDK's ``AdminClient``: Metadata for the topics
(``list_topics``) and ListOffsets for every partition's log start (earliest) and end offset
(the high watermark, latest), batched per partition leader. The requested offsets
(``startingOffsets`` / ``endingOffsets``, or a streaming checkpoint) are then resolved against
those bounds by pure functions:

- EARLIEST / LATEST become the partition's bounds;
- an absolute start below the log start means records were deleted (retention) and an
  offset past the end means the topic was recreated smaller: with ``failOnDataLoss`` the
  read fails with :class:`DataLossError`, without it the offset is clamped into the bounds;
- a start after its end is a contradiction in the options and always fails.

:func:`resolve_offsets` is the public face for jobs that pin their own ranges (the usage
job reads up to the offsets it resolved, then starts there next time).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from log_formats.topic_names import is_internal_topic_name, split_qualified_name
from spark_pipelines.source_errors import (
    AuthenticationFailedError,
    AuthorizationFailedError,
    BrokersUnavailableError,
    DataLossError,
    InvalidOptionError,
    UnknownTopicError,
    WeirSourceError,
)
from spark_pipelines.source_options import EARLIEST, LATEST, OffsetsSpec, SourceOptions, TopicSelection, parse_offsets_spec, parse_options
from spark_pipelines.source_planning import OffsetRange
from weir.admin import AdminClient, IsolationLevel, OffsetSpec
from weir.errors import ErrorCode, KafkaError, KafkaException
from weir.message import TopicPartition

# Default deadline of each planning call (metadata, list offsets); a wrong bootstrap address fails after it.
LOOKUP_TIMEOUT_SECONDS = 30.0

PartitionKey = tuple[str, int]


@dataclass(frozen=True)
class PartitionBounds:
    """The offsets a partition holds now: ``[earliest, latest)``."""

    earliest: int
    latest: int


class OffsetLookup:
    """An AdminClient for one planning step; use as a context manager (closes the client)."""

    def __init__(self, client_config: Mapping[str, object]) -> None:
        self._bootstrap = str(client_config["bootstrap.servers"])
        # The caller's kafka.socket.timeout.ms bounds each call, else LOOKUP_TIMEOUT_SECONDS.
        timeout_ms = int(str(client_config.get("socket.timeout.ms", int(LOOKUP_TIMEOUT_SECONDS * 1000))))
        self._timeout = timeout_ms / 1000.0
        self._isolation = (
            IsolationLevel.READ_UNCOMMITTED if str(client_config.get("isolation.level", "")).lower() == "read_uncommitted" else IsolationLevel.READ_COMMITTED
        )
        admin_config = {key: value for key, value in client_config.items() if key != "isolation.level"}
        self._admin = AdminClient({**admin_config, "socket.timeout.ms": timeout_ms, "request.timeout.ms": timeout_ms})

    def __enter__(self) -> OffsetLookup:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._admin.close()

    def partitions(self, selection: TopicSelection) -> list[PartitionKey]:
        """Every (topic, partition) the selection covers, sorted; raises when a named topic or partition is missing."""
        if selection.pattern is not None:
            metadata = self._call(lambda: self._admin.list_topics(timeout=self._timeout), None)
            names = sorted(name for name in metadata.topics if not is_internal_topic_name(split_qualified_name(name)[1]) and selection.pattern.fullmatch(name))
            return [(name, partition) for name in names for partition in sorted(metadata.topics[name].partitions)]
        keys: list[PartitionKey] = []
        for topic in selection.topics or tuple(selection.assigned):
            existing = self.partition_ids(topic)
            wanted = selection.assigned.get(topic, existing) if selection.assigned else existing
            missing = sorted(set(wanted) - set(existing))
            if missing:
                raise UnknownTopicError(topic, f"has no partition {missing[0]} (it has {len(existing)})")
            keys += [(topic, partition) for partition in wanted]
        return sorted(keys)

    def partition_ids(self, topic: str) -> list[int]:
        """The partition numbers of ``topic``; UnknownTopicError / AuthorizationFailedError when it cannot be read."""
        metadata = self._call(lambda: self._admin.list_topics(topic, timeout=self._timeout), topic)
        described = metadata.topics.get(topic)
        if described is None:
            raise UnknownTopicError(topic, "does not exist (or is not visible with these credentials)")
        if described.error is not None:
            raise _translate(described.error, topic)
        return sorted(described.partitions)

    def bounds(self, keys: Iterable[PartitionKey]) -> dict[PartitionKey, PartitionBounds]:
        """Log start and end offset of every partition, asked of the partitions' leaders."""
        keys = list(keys)
        if not keys:
            return {}
        earliest = self._list_offsets(keys, OffsetSpec.earliest())
        latest = self._list_offsets(keys, OffsetSpec.latest())
        return {key: PartitionBounds(earliest[key], latest[key]) for key in keys}

    def _list_offsets(self, keys: list[PartitionKey], spec: OffsetSpec) -> dict[PartitionKey, int]:
        futures = self._call(
            lambda: self._admin.list_offsets(
                {TopicPartition(topic, partition): spec for topic, partition in keys}, isolation_level=self._isolation, request_timeout=self._timeout
            ),
            None,
        )
        offsets = {}
        for topic_partition, future in futures.items():
            try:
                offsets[(topic_partition.topic, topic_partition.partition)] = future.result(timeout=self._timeout + 5).offset
            except KafkaException as error:
                raise _translate(error.error, topic_partition.topic) from None
        return offsets

    def _call(self, call, topic: str | None):  # type: ignore[no-untyped-def]
        try:
            return call()
        except KafkaException as error:
            raise _translate(error.error, topic, self._bootstrap) from None


def _translate(error: KafkaError, topic: str | None, bootstrap: str = "") -> WeirSourceError:
    """The source's error for an SDK error met while planning."""
    code = error.code()
    if code in (KafkaError._AUTHENTICATION, ErrorCode.SASL_AUTHENTICATION_FAILED):  # type: ignore[attr-defined]
        return AuthenticationFailedError(error.str())
    if code in (ErrorCode.TOPIC_AUTHORIZATION_FAILED, ErrorCode.CLUSTER_AUTHORIZATION_FAILED) and topic is not None:  # type: ignore[attr-defined]
        return AuthorizationFailedError(topic, error.str())
    if code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION and topic is not None:  # type: ignore[attr-defined]
        return UnknownTopicError(topic, "does not exist (or is not visible with these credentials)")
    if code in (KafkaError._TRANSPORT, KafkaError._TIMED_OUT, KafkaError._ALL_BROKERS_DOWN):  # type: ignore[attr-defined]
        return BrokersUnavailableError(bootstrap or "the bootstrap servers", error.str())
    subject = f"topic {topic!r}: " if topic else ""
    return WeirSourceError(f"weir source: {subject}{error.name()}: {error.str()}")


def resolve_start(
    spec: OffsetsSpec, keys: Iterable[PartitionKey], bounds: Mapping[PartitionKey, PartitionBounds], *, fail_on_data_loss: bool, default: int = EARLIEST
) -> dict[PartitionKey, int]:
    """Absolute start offsets; partitions ``spec`` does not name start at ``default`` (EARLIEST / LATEST)."""
    return {key: _resolve(key, spec.offset_for(*key, default), bounds[key], fail_on_data_loss, "starting") for key in keys}


def resolve_end(
    spec: OffsetsSpec, keys: Iterable[PartitionKey], bounds: Mapping[PartitionKey, PartitionBounds], *, fail_on_data_loss: bool
) -> dict[PartitionKey, int]:
    """Absolute end offsets (exclusive); partitions ``spec`` does not name end at their latest offset."""
    return {key: _resolve(key, spec.offset_for(*key, LATEST), bounds[key], fail_on_data_loss, "ending") for key in keys}


def _resolve(key: PartitionKey, requested: int, bounds: PartitionBounds, fail_on_data_loss: bool, which: str) -> int:
    if requested == EARLIEST:
        return bounds.earliest
    if requested == LATEST:
        return bounds.latest
    if bounds.earliest <= requested <= bounds.latest:
        return requested
    if fail_on_data_loss:
        if requested < bounds.earliest:
            detail = f"{which} offset {requested} is below the log start offset {bounds.earliest} (records were deleted)"
        else:
            detail = f"{which} offset {requested} is past the end offset {bounds.latest} (was the topic recreated?)"
        raise DataLossError(key[0], key[1], detail)
    return min(max(requested, bounds.earliest), bounds.latest)


def offset_ranges(starts: Mapping[PartitionKey, int], ends: Mapping[PartitionKey, int]) -> list[OffsetRange]:
    """One range per partition of ``ends``; InvalidOptionError when a start is after its end."""
    ranges = []
    for key, until in sorted(ends.items()):
        start = starts[key]
        if start > until:
            raise InvalidOptionError("startingOffsets", f"{key[0]} [{key[1]}]: starting offset {start} is after the ending offset {until}")
        ranges.append(OffsetRange(key[0], key[1], start, until))
    return ranges


def batch_ranges(options: SourceOptions) -> list[OffsetRange]:
    """The ranges a batch read covers: startingOffsets to endingOffsets of every selected partition."""
    with OffsetLookup(options.client_config) as lookup:
        keys = lookup.partitions(options.selection)
        check_named_partitions(options, keys)
        bounds = lookup.bounds(keys)
    starts = resolve_start(options.starting, keys, bounds, fail_on_data_loss=options.fail_on_data_loss)
    ends = resolve_end(options.ending, keys, bounds, fail_on_data_loss=options.fail_on_data_loss)
    return offset_ranges(starts, ends)


def check_named_partitions(options: SourceOptions, keys: list[PartitionKey]) -> None:
    """An offsets JSON naming a partition the topic does not have is an error, not a silent no-op."""
    present = set(keys)
    for option, spec in (("startingOffsets", options.starting), ("endingOffsets", options.ending)):
        for topic, partitions in spec.specific.items():
            for partition in sorted(partitions):
                if (topic, partition) not in present:
                    raise UnknownTopicError(topic, f"{option} names partition {partition}, which {topic!r} does not have")


def to_json_offsets(offsets: Mapping[PartitionKey, int]) -> dict[str, dict[str, int]]:
    """``{(topic, partition): offset}`` -> Spark's offsets JSON shape ``{"topic": {"0": offset}}``, sorted."""
    result: dict[str, dict[str, int]] = {}
    for (topic, partition), offset in sorted(offsets.items()):
        result.setdefault(topic, {})[str(partition)] = offset
    return result


def from_json_offsets(offsets: Mapping[str, Mapping[str, int]]) -> dict[PartitionKey, int]:
    """The inverse of :func:`to_json_offsets`."""
    return {(topic, int(partition)): int(offset) for topic, partitions in offsets.items() for partition, offset in partitions.items()}


def resolve_offsets(options: Mapping[str, str], spec: str = "latest") -> dict[str, dict[int, int]]:
    """The current ``latest`` (end) or ``earliest`` (log start) offset of every partition the options select.

    ``options`` are the source's options (bootstrap, credentials, subscribe / assign /
    subscribePattern); offset options in it are ignored. The result, ``{topic: {partition:
    offset}}``, pins a job's range: pass it (as JSON) as ``endingOffsets`` now and as
    ``startingOffsets`` next time. Raises the source's errors (unknown topic, credentials).
    """
    if spec not in ("latest", "earliest"):
        raise InvalidOptionError("spec", f'expected "latest" or "earliest", got {spec!r}')
    selection_options = {key: value for key, value in options.items() if str(key).lower() not in ("startingoffsets", "endingoffsets", "maxoffsetspertrigger")}
    parsed = parse_options(selection_options, streaming=False)
    with OffsetLookup(parsed.client_config) as lookup:
        keys = lookup.partitions(parsed.selection)
        bounds = lookup.bounds(keys)
    resolved = resolve_start(parse_offsets_spec("spec", spec), keys, bounds, fail_on_data_loss=True)
    result: dict[str, dict[int, int]] = {}
    for (topic, partition), offset in sorted(resolved.items()):
        result.setdefault(topic, {})[partition] = offset
    return result

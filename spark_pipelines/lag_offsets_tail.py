"""Tailing ``__consumer_offsets`` (every partition) through the SDK at read_uncommitted, with the
transaction markers the consumer normally hides.

The SDK's Consumer returns data records only: control batches (transaction markers) are
skipped and a record does not carry its batch's producer id. :class:`_MarkerAwareConsumer`
notes, for every batch of every fetched chunk before the Consumer decodes it, its offsets,
producer id, transactional bit and, for a control batch, the marker
(``log_formats.control_records.read_marker_batch``). :meth:`OffsetsTail.poll` then replays, per
partition and in offset order, the data records returned and the markers below the
partition's position through an :class:`~spark_pipelines.lag_offsets_log.OffsetsLogReplica`,
which decides what becomes visible. The cursor (next offset per partition) moves with the
positions; the evaluator persists it.

A stored batch that cannot be decoded (_BAD_MSG) is skipped with a warning naming the
partition and its offsets, as the group coordinator's loader would not see its commits either.
"""

from __future__ import annotations

import bisect
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from log_formats.control_records import read_marker_batch
from spark_pipelines.lag_offsets_log import Commit, OffsetsLogReplica
from weir import Consumer, TopicPartition
from weir.consumer import consume_available
from weir.errors import BadBatchError
from weir.fetcher import FetchedChunk
from weir.message import OFFSET_BEGINNING
from weir.records import RecordFormatError, iter_batch_positions

logger = logging.getLogger(__name__)

OFFSETS_TOPIC = "__consumer_offsets"
CLIENT_ID = "weir-lag-monitor"
CONSUME_BATCH = 5000


class OffsetsTailError(RuntimeError):
    """``__consumer_offsets`` cannot be tailed (no metadata for it within the deadline)."""

    retriable = True


@dataclass(frozen=True, slots=True)
class _Batch:
    base_offset: int
    last_offset: int
    producer_id: int
    transactional: bool
    commit_marker: bool | None  # None: a data batch (or an unreadable control batch)


class _MarkerAwareConsumer(Consumer):
    """A Consumer that remembers each fetched batch's producer state and markers (see the module docstring)."""

    def __init__(self, config: Mapping[str, Any]) -> None:
        super().__init__(dict(config))
        self.batches: dict[int, dict[int, _Batch]] = {}

    def _decode(self, chunk: FetchedChunk) -> None:
        noted = self.batches.setdefault(chunk.state.partition, {})
        records = chunk.records
        try:
            for position, header in iter_batch_positions(records):
                if header.last_offset < chunk.min_offset:
                    continue
                marker = None
                if header.is_control:
                    try:
                        marker = read_marker_batch(records, position, header).commit
                    except RecordFormatError:
                        marker = None
                noted[header.base_offset] = _Batch(header.base_offset, header.last_offset, header.producer_id, header.is_transactional, marker)
        except RecordFormatError:
            pass  # a damaged chunk: the Consumer reports it as a bad batch below
        super()._decode(chunk)


class OffsetsTail:
    """One reader of every ``__consumer_offsets`` partition from a cursor; see the module docstring."""

    def __init__(self, client_config: Mapping[str, Any], cursor: Mapping[int, int], replica: OffsetsLogReplica, *, metadata_timeout: float = 30.0) -> None:
        config = {
            **client_config,
            "client.id": CLIENT_ID,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "isolation.level": "read_uncommitted",
            "fetch.wait.max.ms": 200,
        }
        self.replica = replica
        self.cursor: dict[int, int] = {int(partition): int(offset) for partition, offset in cursor.items()}
        self._consumer = _MarkerAwareConsumer(config)
        try:
            topic = self._consumer.list_topics(OFFSETS_TOPIC, timeout=metadata_timeout).topics.get(OFFSETS_TOPIC)
            if topic is None or topic.error is not None or not topic.partitions:
                raise OffsetsTailError(f"{OFFSETS_TOPIC} has no partitions the internal token can see ({getattr(topic, 'error', None)})")
            self.partitions = sorted(topic.partitions)
            self._consumer.assign([TopicPartition(OFFSETS_TOPIC, partition, self.cursor.get(partition, OFFSET_BEGINNING)) for partition in self.partitions])
        except BaseException:
            self._consumer.close()
            raise

    def poll(self, timeout: float) -> list[Commit]:
        """The commits that became visible, in log order per partition; the cursor moves past what was read."""
        messages = consume_available(self._consumer, CONSUME_BATCH, timeout)
        data: dict[int, list[tuple[int, bytes | None, bytes | None]]] = {}
        for message in messages:
            partition, offset, error = message.partition(), message.offset(), message.error()
            if partition is None or offset is None:
                continue
            if isinstance(error, BadBatchError):
                logger.warning(
                    "lag monitor: %s [%d] offsets %d..%d cannot be decoded; skipped (%s)",
                    OFFSETS_TOPIC,
                    partition,
                    error.first_offset,
                    error.last_offset,
                    error.str(),
                )
                self._consumer.seek(TopicPartition(OFFSETS_TOPIC, partition, error.last_offset + 1))
                continue
            if error is not None:
                continue
            data.setdefault(partition, []).append((offset, message.key(), message.value()))
        visible: list[Commit] = []
        touched = set(data) | {partition for partition, batches in self._consumer.batches.items() if batches}
        positions = (
            {tp.partition: tp.offset for tp in self._consumer.position([TopicPartition(OFFSETS_TOPIC, partition) for partition in touched])} if touched else {}
        )
        for partition in sorted(touched):
            position = positions.get(partition, -1)
            visible += self._replay(partition, data.get(partition, []), position)
        return visible

    def _replay(self, partition: int, records: list[tuple[int, bytes | None, bytes | None]], position: int) -> list[Commit]:
        batches = self._consumer.batches.get(partition, {})
        starts = sorted(batches)
        events: list[tuple[int, int, Any]] = [(offset, 1, (key, value)) for offset, key, value in records]
        limit = position if position >= 0 else (records[-1][0] + 1 if records else -1)
        for base in starts:
            batch = batches[base]
            if batch.commit_marker is not None and base < limit:
                events.append((base, 0, batch))
        events.sort(key=lambda event: (event[0], event[1]))
        visible: list[Commit] = []
        for offset, kind, payload in events:
            if kind == 0:
                visible += self.replica.marker(partition, payload.producer_id, commit=payload.commit_marker)
                continue
            data_batch = _batch_of(batches, starts, offset)
            key, value = payload
            visible += self.replica.record(
                partition,
                offset,
                key,
                value,
                producer_id=data_batch.producer_id if data_batch is not None else -1,
                transactional=data_batch is not None and data_batch.transactional,
            )
        if limit >= 0:
            self.cursor[partition] = max(self.cursor.get(partition, 0), limit)
            for base in starts:
                if batches[base].last_offset < limit:
                    del batches[base]
        return visible

    def close(self) -> None:
        self._consumer.close()


def _batch_of(batches: Mapping[int, _Batch], starts: list[int], offset: int) -> _Batch | None:
    index = bisect.bisect_right(starts, offset) - 1
    if index < 0:
        return None
    batch = batches[starts[index]]
    return batch if batch.last_offset >= offset else None

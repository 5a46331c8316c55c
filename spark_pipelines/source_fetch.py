"""Fetching one partition's raw batches for a range read, sized so that nothing past the range is fetched.

A Spark task reads one offset range of one partition (:mod:`spark_pipelines.source_reading`).
An SDK ``Consumer`` would prefetch ahead of the application (up to ``queued.max.messages.kbytes``,
a fetch in flight while the last is decoded) and turn every record into a ``Message``; both
cost the tenant: brokers meter every fetched byte, and the records past the range's end are
fetched, billed and thrown away. :class:`PartitionFetcher` instead sends one Fetch at a time
for one partition, through the SDK's :class:`~weir.cluster.Cluster` (bootstrap, credentials,
TLS, leader lookup and metadata refresh as every client does them), and returns the answer's
stored batch bytes as they are: decoding is the caller's, batch by batch.

How much to ask for (:func:`fetch_size`): brokers return whole batches up to
``partition_max_bytes`` (and always at least one), so a fetch never ends inside a batch. The
first fetch of a range asks for one byte, which returns exactly its first batch; from then on
the reader knows the bytes per offset of the densest batch it has seen (:func:`densest`: a
batch of many records carries its 61-byte header over more offsets than a batch of one) and
asks for the bytes of the offsets still missing at that density, times :data:`SIZE_MARGIN`
(< 1, so that a denser tail is fetched in a further small round trip rather than with a batch
past the end), at most ``fetch.max.bytes`` and :data:`MAX_FETCH_BYTES`. What is fetched
past the end is then at most the rest of the batch that holds the range's last offset (a
batch is the unit brokers store and serve).

Errors: a transport failure or a stale leader (NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH,
UNKNOWN_LEADER_EPOCH, LEADER_NOT_AVAILABLE, UNKNOWN_TOPIC_OR_PARTITION while metadata catches
up) marks the topic's metadata stale and is returned as the answer's retriable ``error``, for
the caller's stall deadline; any other error is returned as not retriable.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import grpc

from grpc_protos.weir.v1 import broker_pb2
from weir.cluster import Cluster, error_from_rpc
from weir.config import CONSUMER, ClientConfig
from weir.errors import ErrorCode, KafkaError, KafkaException
from weir.records import iter_batch_positions

# Bytes asked for = offsets missing x bytes per offset seen so far x this margin.
SIZE_MARGIN = 0.9
# Most bytes one fetch asks for (less when fetch.max.bytes is less): a task decodes a whole
# answer before handing Spark its rows, so this bounds the task's memory per fetch.
MAX_FETCH_BYTES = 8 * 1024 * 1024
_FIRST_FETCH_BYTES = 1  # one batch: the broker always returns at least one whole batch
_STALE_LEADER = frozenset(
    {
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ErrorCode.FENCED_LEADER_EPOCH,
        ErrorCode.UNKNOWN_LEADER_EPOCH,
        ErrorCode.LEADER_NOT_AVAILABLE,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    }
)


def fetch_size(missing_offsets: int, bytes_per_offset: float | None, max_bytes: int) -> int:
    """``partition_max_bytes`` of the next fetch of a range (see the module docstring); ``bytes_per_offset``
    is the densest batch's seen so far (None before the first)."""
    if bytes_per_offset is None:
        return _FIRST_FETCH_BYTES
    wanted = math.floor(missing_offsets * bytes_per_offset * SIZE_MARGIN)
    return max(_FIRST_FETCH_BYTES, min(wanted, max_bytes))


def densest(records: bytes, bytes_per_offset: float | None) -> float | None:
    """The fewest bytes per offset of ``bytes_per_offset`` and the whole batches of ``records`` (headers only)."""
    for _, header in iter_batch_positions(records):
        density = header.size / (header.last_offset_delta + 1)
        if bytes_per_offset is None or density < bytes_per_offset:
            bytes_per_offset = density
    return bytes_per_offset


@dataclass(frozen=True)
class FetchAnswer:
    """One partition's part of a Fetch answer: stored batches as they are, or ``error``."""

    records: bytes = b""
    high_watermark: int = -1
    last_stable_offset: int = -1
    log_start_offset: int = -1
    aborted: tuple[tuple[int, int], ...] = ()  # (producer id, first offset), read_committed only
    error: KafkaError | None = None

    def readable_end(self, read_committed: bool) -> int:
        """Where reading ends now: the last stable offset at read_committed, else the high watermark."""
        return self.last_stable_offset if read_committed and self.last_stable_offset >= 0 else self.high_watermark


class PartitionFetcher:
    """Fetches of one topic-partition, one at a time (see the module docstring)."""

    def __init__(self, client_config: Mapping[str, Any], topic: str, partition: int) -> None:
        self._config = ClientConfig(dict(client_config), CONSUMER)
        self._cluster = Cluster(self._config)
        self.topic = topic
        self.partition = partition
        self.read_committed = self._config["isolation.level"] == "read_committed"
        self.max_bytes = max(min(int(self._config["fetch.max.bytes"]), MAX_FETCH_BYTES), 1)
        self._max_wait_ms = int(self._config["fetch.wait.max.ms"])
        self._request_timeout = self._config["request.timeout.ms"] / 1000.0

    def __enter__(self) -> PartitionFetcher:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        self._cluster.close()

    def fetch(self, offset: int, partition_max_bytes: int) -> FetchAnswer:
        """One Fetch at ``offset`` of at most ``partition_max_bytes`` (one whole batch at least).

        Raises KafkaException only for errors that retrying cannot fix (credentials refused);
        everything else comes back as the answer's ``error``.
        """
        try:
            address = self._leader()
        except KafkaException as error:
            if error.error.code() == KafkaError._AUTHENTICATION:
                raise
            return FetchAnswer(error=error.error)
        if address is None:
            self._cluster.mark_stale(self.topic)
            info = self._cluster.topics.get(self.topic)
            if info is not None and info.error_code:
                return FetchAnswer(error=KafkaError(info.error_code, info.error_message or None))
            return FetchAnswer(error=KafkaError(ErrorCode.LEADER_NOT_AVAILABLE, f"{self.topic} [{self.partition}] has no leader the metadata names"))
        request = broker_pb2.FetchRequest(
            max_wait_ms=self._max_wait_ms,
            min_bytes=1,
            max_bytes=partition_max_bytes,
            isolation_level=broker_pb2.READ_COMMITTED if self.read_committed else broker_pb2.READ_UNCOMMITTED,
            topics=[
                broker_pb2.FetchTopic(
                    topic=self.topic,
                    partitions=[
                        broker_pb2.FetchPartition(
                            partition=self.partition,
                            fetch_offset=offset,
                            partition_max_bytes=partition_max_bytes,
                            current_leader_epoch=self._cluster.leader_epoch(self.topic, self.partition),
                        )
                    ],
                )
            ],
            replica_id=-1,
        )
        try:
            response = self._cluster.stub(address).Fetch(
                request, timeout=self._request_timeout + self._max_wait_ms / 1000.0, metadata=self._cluster.call_metadata
            )
        except grpc.RpcError as rpc_error:
            failure = error_from_rpc(rpc_error, f"Fetch from {address}")
            self._cluster.note_failure(address, failure)
            self._cluster.mark_stale(self.topic)
            if failure.code() == KafkaError._AUTHENTICATION:
                raise KafkaException(failure) from None
            return FetchAnswer(error=failure)
        self._cluster.note_answer(address)
        return self._answer(response)

    def _leader(self) -> str | None:
        self._cluster.maybe_refresh([self.topic], timeout=self._request_timeout)
        return self._cluster.leader_address(self.topic, self.partition)

    def _answer(self, response: broker_pb2.FetchResponse) -> FetchAnswer:
        for topic in response.topics:
            for answer in topic.partitions:
                if topic.topic != self.topic or answer.partition != self.partition:
                    continue
                error = None
                if answer.error_code:
                    error = KafkaError(answer.error_code, answer.error_message or None)
                    if answer.error_code in _STALE_LEADER:
                        self._cluster.mark_stale(self.topic)
                return FetchAnswer(
                    records=answer.records,
                    high_watermark=answer.high_watermark,
                    last_stable_offset=answer.last_stable_offset,
                    log_start_offset=answer.log_start_offset,
                    aborted=tuple((entry.producer_id, entry.first_offset) for entry in answer.aborted_transactions),
                    error=error,
                )
        self._cluster.mark_stale(self.topic)
        return FetchAnswer(error=KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"the broker's answer left out {self.topic} [{self.partition}]"))

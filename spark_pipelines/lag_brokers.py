"""What the lag evaluator asks the brokers directly, through the SDK: offsets of partitions, topics'
``retention.ms``, and the timestamp of the next unconsumed record.

All run acting as each tenant in turn with a tenant token (``weir.tenant.token``,
:mod:`weir.tenant_tokens`, as the control plane's dashboard does) minted from the job's internal
token, so topic names stay the tenant's plain names and one tenant's lookups never see
another's topics. The internal token itself is never sent with these lookups: brokers refuse it
together with a tenant, and a client acting as one tenant needs no more than that tenant.

- :class:`TenantAdmins`: one AdminClient per tenant kept across rounds (re-created before its
  tenant token expires), so a round costs one ListOffsets per leader and spec, not a connection;
  :meth:`TenantAdmins.partition_offsets` and :meth:`TenantAdmins.retention_ms`.
- :func:`partition_offsets`: per partition, the end offset (high watermark: what a consumer
  can read, as Kafka's lag tools count) and the log start offset, from one ListOffsets per
  leader and spec (AdminClient.list_offsets). A partition whose topic no longer exists
  (UNKNOWN_TOPIC_OR_PARTITION) is reported ``deleted``; one the brokers could not answer for
  (no leader, timeout) has unknown (None) offsets, and the job keeps its window.
- :func:`next_record_timestamps`: for each requested (partition, offset), the timestamp of the
  first record at or after the offset, read with one Consumer per tenant assigned to exactly
  those partitions; a partition is paused as soon as its record came in. Bounded by a
  deadline: what has not arrived by then is left out (the time lag is then unknown). A stored
  batch that cannot be decoded (_BAD_MSG) leaves the offsets it covers out too, with a warning
  naming tenant, topic, partition and offsets, and the reader moves on past it.
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from collections.abc import Iterable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from weir import Consumer, KafkaException, TopicPartition, tenant_tokens
from weir.admin import AdminClient, ConfigResource, OffsetSpec
from weir.consumer import consume_available
from weir.errors import BadBatchError, ErrorCode
from weir.message import TIMESTAMP_NOT_AVAILABLE

logger = logging.getLogger(__name__)

CLIENT_ID = "weir-lag-monitor"
CONSUME_BATCH = 500  # records taken per consume() while looking for first records
MAX_PARTITION_FETCH_BYTES = 64 * 1024  # only the first record of each partition is wanted
# Errors that mean the topic or partition is gone, so its windows are forgotten.
_DELETED_CODES = frozenset({ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode._UNKNOWN_TOPIC, ErrorCode._UNKNOWN_PARTITION})

PartitionKey = tuple[str, str, int]  # (tenant id, plain topic, partition)


@dataclass(frozen=True)
class PartitionOffsets:
    """What the brokers said of one partition; offsets None when they could not tell."""

    tenant_id: str
    topic: str
    partition: int
    end_offset: int | None
    log_start_offset: int | None
    deleted: bool = False


@dataclass(frozen=True)
class RecordTimestamp:
    """The first record at or after ``offset`` of a partition has this timestamp (epoch ms)."""

    tenant_id: str
    topic: str
    partition: int
    offset: int
    timestamp_ms: int


def tenant_config(client_config: Mapping[str, Any], tenant_id: str, timeout_seconds: float, *, now_ms: int | None = None) -> dict[str, Any]:
    """The SDK configuration acting as ``tenant_id``: ``client_config`` (bootstrap, internal
    token, TLS) with the internal token swapped for a tenant token of ``tenant_id`` (valid from
    ``now_ms``, default now, for at least ``timeout_seconds``) and per-request deadlines of
    ``timeout_seconds``."""
    if not tenant_id:
        raise ValueError("the lag job acts as a tenant: the tenant id must not be empty")
    timeout_ms = max(int(timeout_seconds * 1000), 10)
    internal_token = client_config.get("weir.internal.token")
    if not internal_token:
        raise ValueError("the lag job mints tenant tokens from the internal token, and its client configuration has none")
    lifetime_ms = min(max(tenant_tokens.DEFAULT_LIFETIME_MS, 2 * timeout_ms), tenant_tokens.MAX_LIFETIME_MS)
    token = tenant_tokens.mint(
        tenant_tokens.derive_key(internal_token), tenant_id, now_ms=time.time_ns() // 1_000_000 if now_ms is None else now_ms, lifetime_ms=lifetime_ms
    )
    return {
        **{key: value for key, value in client_config.items() if key != "weir.internal.token"},
        "client.id": CLIENT_ID,
        "weir.tenant.token": token,
        "request.timeout.ms": timeout_ms,
        "socket.timeout.ms": timeout_ms,
    }


def _by_tenant(keys: Iterable[PartitionKey]) -> dict[str, list[tuple[str, int]]]:
    grouped: dict[str, set[tuple[str, int]]] = defaultdict(set)
    for tenant_id, topic, partition in keys:
        grouped[tenant_id].add((topic, int(partition)))
    return {tenant_id: sorted(partitions) for tenant_id, partitions in sorted(grouped.items())}


def _outcome(future: Future, deadline: float) -> tuple[int | None, bool]:
    """(offset or None, deleted) of one list_offsets future."""
    try:
        return int(future.result(timeout=max(deadline - time.monotonic(), 0.001)).offset), False
    except KafkaException as error:
        return None, error.args[0].code() in _DELETED_CODES
    except TimeoutError:
        return None, False


def _partition_offsets(
    tenant_id: str, tp: TopicPartition, latest: Mapping[TopicPartition, Future], earliest: Mapping[TopicPartition, Future], deadline: float
) -> PartitionOffsets:
    """One partition's end offset and log start from its two list_offsets futures (deleted: both say so)."""
    end_offset, end_deleted = _outcome(latest[tp], deadline)
    log_start, start_deleted = _outcome(earliest[tp], deadline)
    deleted = end_deleted and start_deleted
    return PartitionOffsets(tenant_id, tp.topic, tp.partition, None if deleted else end_offset, None if deleted else log_start, deleted)


def _offsets_of(admin: AdminClient, tenant_id: str, partitions: list[tuple[str, int]], timeout_seconds: float) -> list[PartitionOffsets]:
    deadline = time.monotonic() + timeout_seconds
    topic_partitions = [TopicPartition(topic, partition) for topic, partition in partitions]
    latest = admin.list_offsets({tp: OffsetSpec.latest() for tp in topic_partitions}, request_timeout=timeout_seconds)
    earliest = admin.list_offsets({tp: OffsetSpec.earliest() for tp in topic_partitions}, request_timeout=timeout_seconds)
    return [_partition_offsets(tenant_id, tp, latest, earliest, deadline) for tp in topic_partitions]


def partition_offsets(client_config: Mapping[str, Any], keys: Iterable[PartitionKey], *, timeout_seconds: float) -> list[PartitionOffsets]:
    """End and log start offsets of every partition in ``keys`` (see the module docstring), sorted; one AdminClient per tenant for this call."""
    results: list[PartitionOffsets] = []
    for tenant_id, partitions in _by_tenant(keys).items():
        admin = AdminClient(tenant_config(client_config, tenant_id, timeout_seconds))
        try:
            results += _offsets_of(admin, tenant_id, partitions, timeout_seconds)
        finally:
            admin.close()
    return results


class TenantAdmins:
    """AdminClients per tenant kept between rounds; each is re-created when its token is half-way to expiry."""

    def __init__(self, client_config: Mapping[str, Any], *, timeout_seconds: float, clock: Any = time.monotonic) -> None:
        self._client_config = dict(client_config)
        self._timeout = timeout_seconds
        self._clock = clock
        self._admins: dict[str, tuple[float, AdminClient]] = {}
        lifetime_ms = min(max(tenant_tokens.DEFAULT_LIFETIME_MS, 2 * int(timeout_seconds * 1000)), tenant_tokens.MAX_LIFETIME_MS)
        self._max_age = lifetime_ms / 2000.0

    def _admin(self, tenant_id: str) -> AdminClient:
        now = self._clock()
        held = self._admins.get(tenant_id)
        if held is not None and now - held[0] < self._max_age:
            return held[1]
        if held is not None:
            held[1].close()
        admin = AdminClient(tenant_config(self._client_config, tenant_id, self._timeout))
        self._admins[tenant_id] = (now, admin)
        return admin

    def partition_offsets(self, keys: Iterable[PartitionKey]) -> list[PartitionOffsets]:
        """End and log start offsets of every partition in ``keys``: per tenant, one ListOffsets per
        leader and spec, every tenant's requests in flight together before any answer is awaited."""
        asked: list[tuple[str, list[TopicPartition], dict[TopicPartition, Future], dict[TopicPartition, Future]]] = []
        results: list[PartitionOffsets] = []
        for tenant_id, partitions in _by_tenant(keys).items():
            topic_partitions = [TopicPartition(topic, partition) for topic, partition in partitions]
            try:
                admin = self._admin(tenant_id)
                latest = admin.list_offsets({tp: OffsetSpec.latest() for tp in topic_partitions}, request_timeout=self._timeout)
                earliest = admin.list_offsets({tp: OffsetSpec.earliest() for tp in topic_partitions}, request_timeout=self._timeout)
            except KafkaException as error:
                logger.warning("lag monitor: offsets of tenant %s could not be asked: %s", tenant_id, error)
                results += [PartitionOffsets(tenant_id, tp.topic, tp.partition, None, None) for tp in topic_partitions]
                continue
            asked.append((tenant_id, topic_partitions, latest, earliest))
        deadline = time.monotonic() + self._timeout
        for tenant_id, topic_partitions, latest, earliest in asked:
            results += [_partition_offsets(tenant_id, tp, latest, earliest, deadline) for tp in topic_partitions]
        return results

    def retention_ms(self, topics: Iterable[tuple[str, str]]) -> dict[tuple[str, str], int | None]:
        """``retention.ms`` of each (tenant id, topic); None where the brokers did not say (-1: no time limit)."""
        grouped: dict[str, set[str]] = defaultdict(set)
        for tenant_id, topic in topics:
            grouped[tenant_id].add(topic)
        result: dict[tuple[str, str], int | None] = {}
        for tenant_id, names in sorted(grouped.items()):
            resources = [ConfigResource("topic", name) for name in sorted(names)]
            try:
                futures = self._admin(tenant_id).describe_configs(resources, request_timeout=self._timeout)
            except KafkaException:
                futures = {}
            for resource in resources:
                value: int | None = None
                future = futures.get(resource)
                if future is not None:
                    try:
                        entry = future.result(timeout=self._timeout).get("retention.ms")
                        value = int(entry.value) if entry is not None and entry.value is not None else None
                    except (KafkaException, TimeoutError, ValueError):
                        value = None
                result[(tenant_id, resource.name)] = value
        return result

    def close(self) -> None:
        for _, admin in self._admins.values():
            admin.close()
        self._admins.clear()


def next_record_timestamps(client_config: Mapping[str, Any], requests: Iterable[tuple[str, str, int, int]], *, timeout_seconds: float) -> list[RecordTimestamp]:
    """For each (tenant id, topic, partition, offset): the timestamp of the first record at or
    after the offset, as far as the brokers hand them over within ``timeout_seconds`` in all.

    Several offsets of one partition are answered in increasing order by one reader: once the
    first record at or after one offset is found, it answers every requested offset up to its
    own, and the reader seeks to the next offset still unanswered.
    """
    wanted_by_tenant: dict[str, dict[tuple[str, int], set[int]]] = defaultdict(lambda: defaultdict(set))
    for tenant_id, topic, partition, offset in requests:
        wanted_by_tenant[tenant_id][(topic, int(partition))].add(int(offset))
    deadline = time.monotonic() + timeout_seconds
    found: list[RecordTimestamp] = []
    for tenant_id, wanted in sorted(wanted_by_tenant.items()):
        if deadline - time.monotonic() <= 0:
            break
        found += _first_records(client_config, tenant_id, {key: sorted(offsets) for key, offsets in wanted.items()}, deadline, timeout_seconds)
    return found


def _first_records(
    client_config: Mapping[str, Any], tenant_id: str, wanted: dict[tuple[str, int], list[int]], deadline: float, timeout_seconds: float
) -> list[RecordTimestamp]:
    config = {
        **tenant_config(client_config, tenant_id, timeout_seconds),
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",  # a requested offset deleted meanwhile: the log start is next
        "max.partition.fetch.bytes": MAX_PARTITION_FETCH_BYTES,
        "fetch.wait.max.ms": 100,
    }
    consumer = Consumer(config)
    found: list[RecordTimestamp] = []
    pending = {key: list(offsets) for key, offsets in wanted.items()}
    try:
        consumer.assign([TopicPartition(topic, partition, offsets[0]) for (topic, partition), offsets in sorted(pending.items())])
        while pending:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            for message in consume_available(consumer, CONSUME_BATCH, min(remaining, 1.0)):
                offset = message.offset()
                key = (message.topic(), message.partition())
                offsets = pending.get(key)  # type: ignore[arg-type]
                error = message.error()
                if isinstance(error, BadBatchError) and offsets:
                    _skip_bad_batch(consumer, tenant_id, key, offsets, error)  # type: ignore[arg-type]
                    if not offsets:
                        del pending[key]  # type: ignore[arg-type]
                    continue
                if error is not None or offsets is None or offset is None or offset < offsets[0]:
                    continue
                timestamp_type, timestamp_ms = message.timestamp()
                while offsets and offsets[0] <= offset:
                    requested = offsets.pop(0)
                    if timestamp_type != TIMESTAMP_NOT_AVAILABLE:
                        found.append(RecordTimestamp(tenant_id, key[0], key[1], requested, timestamp_ms))  # type: ignore[arg-type]
                topic_partition = TopicPartition(key[0], key[1])  # type: ignore[arg-type]
                if offsets:
                    consumer.seek(TopicPartition(key[0], key[1], offsets[0]))  # type: ignore[arg-type]
                else:
                    del pending[key]  # type: ignore[arg-type]
                    consumer.pause([topic_partition])
    finally:
        consumer.close()
    return found


def _skip_bad_batch(consumer: Consumer, tenant_id: str, key: tuple[str, int], offsets: list[int], error: BadBatchError) -> None:
    """A stored batch of this partition cannot be decoded: the requested offsets it covers have
    no known first record (their time lag stays unknown), said once in the job's log naming the
    partition and offsets; the reader moves past it to the next requested offset, or pauses the
    partition, so the other partitions and tenants still get the whole deadline."""
    topic, partition = key
    unknown = [requested for requested in offsets if requested <= error.last_offset]
    del offsets[: len(unknown)]
    logger.warning(
        "lag job: tenant %s, %s [%d]: offsets %d..%d are in a stored batch that cannot be decoded; the time lag at offset(s) %s is unknown (%s)",
        tenant_id,
        topic,
        partition,
        error.first_offset,
        error.last_offset,
        ", ".join(map(str, unknown)),
        error.str(),
    )
    if offsets:
        consumer.seek(TopicPartition(topic, partition, offsets[0]))
    else:
        consumer.pause([TopicPartition(topic, partition)])

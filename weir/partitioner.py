"""Choosing the partition of a produced record, as librdkafka's partitioners do.

Every partitioner of librdkafka (``partitioner``), each placing a key exactly where
librdkafka (and, for murmur2, Kafka's Java client; for fnv1a, Sarama) places it:

- ``consistent_random`` (the default): CRC-32 of the key; null or empty keys sticky.
- ``consistent``: CRC-32 of the key; a null key hashes as the empty key (partition 0).
- ``murmur2_random``: ``(murmur2(key) & 0x7fffffff) % partitions``; null keys sticky.
- ``murmur2``: the same, a null key hashed as the empty key (one fixed partition).
- ``fnv1a_random`` / ``fnv1a``: FNV-1a of the key (absolute value, Sarama's hash).
- ``random``: every record on the sticky partition, key or not.

Sticky partitioning (KIP-480): keyless records stay on one partition until the batch they
are filling is sent, then move to another partition chosen at random, so that keyless
traffic forms few large batches instead of many small ones. The producer asks
:meth:`StickyPartitions.partition` for the current choice and calls
:meth:`StickyPartitions.batch_sent` when that partition's batch left. With
``sticky.partitioning.linger.ms=0`` there is no stickiness: each keyless record gets a random
partition, as librdkafka does.
"""

from __future__ import annotations

import random
import struct
import zlib
from collections.abc import Callable

_SEED = 0x9747B28C
_MULTIPLIER = 0x5BD1E995
_MASK = 0xFFFFFFFF


def murmur2(data: bytes) -> int:
    """Kafka's ``Utils.murmur2``: a signed 32-bit hash of ``data``."""
    length = len(data)
    h = (_SEED ^ length) & _MASK
    word_count = length // 4
    for (k,) in struct.iter_unpack("<I", data[: word_count * 4]):
        k = (k * _MULTIPLIER) & _MASK
        k ^= k >> 24
        k = (k * _MULTIPLIER) & _MASK
        h = ((h * _MULTIPLIER) & _MASK) ^ k
    tail = length & 3
    base = length & ~3
    if tail == 3:
        h ^= data[base + 2] << 16
    if tail >= 2:
        h ^= data[base + 1] << 8
    if tail >= 1:
        h ^= data[base]
        h = (h * _MULTIPLIER) & _MASK
    h ^= h >> 13
    h = (h * _MULTIPLIER) & _MASK
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def murmur2_partition(key: bytes, partition_count: int) -> int:
    """The partition Kafka's Java client chooses for ``key``: positive murmur2 modulo the count."""
    return (murmur2(key) & 0x7FFFFFFF) % partition_count


def consistent_partition(key: bytes, partition_count: int) -> int:
    """librdkafka's ``consistent`` partitioner: CRC-32 of the key modulo the count."""
    return zlib.crc32(key) % partition_count


_FNV_OFFSET = 0x811C9DC5
_FNV_PRIME = 0x01000193


def fnv1a(data: bytes) -> int:
    """librdkafka's ``rd_fnv1a``: 32-bit FNV-1a, then the absolute value as a signed int (Sarama's hash)."""
    h = _FNV_OFFSET
    for byte in data:
        h = ((h ^ byte) * _FNV_PRIME) & _MASK
    if h & 0x80000000:
        h = (-(h - (1 << 32))) & _MASK  # abs() of the int32; INT32_MIN stays 0x80000000, as in C
    return h


def fnv1a_partition(key: bytes, partition_count: int) -> int:
    """librdkafka's ``fnv1a`` partitioner: FNV-1a of the key modulo the count."""
    return fnv1a(key) % partition_count


class StickyPartitions:
    """The current sticky partition of every topic, for keyless records.

    Not thread-safe: the producer calls it under its accumulator lock.
    """

    __slots__ = ("_current", "_choose", "_per_record")

    def __init__(self, choose: Callable[[int], int] | None = None, *, per_record: bool = False) -> None:
        self._current: dict[str, int] = {}
        # Injected so tests can make the random choice deterministic.
        self._choose = choose or random.randrange
        # sticky.partitioning.linger.ms=0: a random partition for every record.
        self._per_record = per_record

    @property
    def per_record(self) -> bool:
        """Whether every keyless record gets a partition of its own (sticky.partitioning.linger.ms=0)."""
        return self._per_record

    def current(self, topic: str) -> int | None:
        """The topic's sticky partition if one is chosen and kept for the next keyless record (None per record)."""
        return None if self._per_record else self._current.get(topic)

    def partition(self, topic: str, partition_count: int) -> int:
        """The topic's sticky partition, choosing one when there is none or the count shrank."""
        if self._per_record:
            return self._choose(partition_count)
        current = self._current.get(topic)
        if current is None or current >= partition_count:
            current = self._choose(partition_count)
            self._current[topic] = current
        return current

    def batch_sent(self, topic: str, partition: int, partition_count: int) -> None:
        """The batch that ``partition`` was filling left: move to another partition."""
        if self._current.get(topic) != partition:
            return
        if partition_count <= 1:
            self._current[topic] = 0
            return
        # A random partition other than the one just used, uniformly.
        choice = self._choose(partition_count - 1)
        self._current[topic] = choice if choice < partition else choice + 1


_HASHES: dict[str, Callable[[bytes, int], int] | None] = {
    "consistent_random": consistent_partition,
    "consistent": consistent_partition,
    "murmur2_random": murmur2_partition,
    "murmur2": murmur2_partition,
    "fnv1a_random": fnv1a_partition,
    "fnv1a": fnv1a_partition,
    "random": None,
}
# Partitioners that hash a null key as the empty key instead of going sticky (librdkafka's).
_HASH_NULL_KEY = frozenset({"consistent", "murmur2", "fnv1a"})
# The hash kinds of weir._records_native (its key_partition() and StickyAppender): 0 keys ignored.
_NATIVE_HASHES: dict[Callable[[bytes, int], int], int] = {consistent_partition: 1, murmur2_partition: 2, fnv1a_partition: 3}


class Partitioner:
    """Maps a record's key to a partition under one of librdkafka's partitioner names.

    ``partition(topic, key, count)`` returns a partition; keyless records (and every record
    under ``random``) go to the topic's sticky partition. Not thread-safe (see StickyPartitions).
    """

    NAMES = tuple(_HASHES)

    __slots__ = ("name", "sticky", "_hash_key", "_hash_missing_key", "_empty_is_missing")

    def __init__(self, name: str = "consistent_random", sticky: StickyPartitions | None = None) -> None:
        if name not in _HASHES:
            raise ValueError(f"unknown partitioner {name!r}; expected one of {', '.join(self.NAMES)}")
        self.name = name
        self.sticky = sticky or StickyPartitions()
        self._hash_key = _HASHES[name]
        self._hash_missing_key = name in _HASH_NULL_KEY
        # librdkafka's consistent_random treats an empty key as no key.
        self._empty_is_missing = name == "consistent_random"

    @property
    def native_hash(self) -> tuple[int, bool, bool]:
        """(hash kind, whether a missing key is hashed as b"", whether an empty key is missing) for
        weir._records_native.StickyAppender, which then chooses the partitions keyed_partition does."""
        kind = 0 if self._hash_key is None else _NATIVE_HASHES[self._hash_key]
        return kind, self._hash_missing_key, self._empty_is_missing

    @property
    def null_key_is_sticky(self) -> bool:
        """Whether a record without a key always goes to the sticky partition (keyed_partition(None, n) == -1)."""
        return self._hash_key is None or not self._hash_missing_key

    def keyed_partition(self, key: bytes | None, partition_count: int) -> int:
        """The partition the key decides, or -1 when the record goes to the sticky partition.

        Safe without a lock: it reads no sticky state.
        """
        hash_key = self._hash_key
        if hash_key is None:
            return -1
        if key is None or (self._empty_is_missing and not key):
            return hash_key(b"", partition_count) if self._hash_missing_key else -1
        return hash_key(key, partition_count)

    def partition(self, topic: str, key: bytes | None, partition_count: int) -> int:
        """The record's partition, the sticky one included (callers hold the producer's lock)."""
        chosen = self.keyed_partition(key, partition_count)
        return chosen if chosen >= 0 else self.sticky.partition(topic, partition_count)

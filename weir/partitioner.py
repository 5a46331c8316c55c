"""Choosing the partition of a produced record, compatible with Kafka's and librdkafka's.

- ``murmur2``: ``(murmur2(key) & 0x7fffffff) % partitions`` exactly as Kafka's Java client,
  so the same key lands on the same partition whichever client produced it. A missing key
  hashes as the empty key (one fixed partition), as librdkafka's ``murmur2``.
- ``murmur2_random`` (the default): murmur2 for keyed records, sticky for keyless ones.
- ``consistent_random``: CRC-32 of the key (librdkafka's ``consistent``), sticky without a key.
- ``random``: every record sticky, key or not.

Sticky partitioning (KIP-480): keyless records stay on one partition until the batch they
are filling is sent, then move to another partition chosen at random, so that keyless
traffic forms few large batches instead of many small ones. The producer asks
:meth:`StickyPartitions.partition` for the current choice and calls
:meth:`StickyPartitions.batch_sent` when that partition's batch left.
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


class StickyPartitions:
    """The current sticky partition of every topic, for keyless records.

    Not thread-safe: the producer calls it under its accumulator lock.
    """

    __slots__ = ("_current", "_choose")

    def __init__(self, choose: Callable[[int], int] | None = None) -> None:
        self._current: dict[str, int] = {}
        # Injected so tests can make the random choice deterministic.
        self._choose = choose or random.randrange

    def partition(self, topic: str, partition_count: int) -> int:
        """The topic's sticky partition, choosing one when there is none or the count shrank."""
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


class Partitioner:
    """Maps a record's key to a partition under one of librdkafka's partitioner names.

    ``partition(topic, key, count)`` returns a partition; keyless records (and every record
    under ``random``) go to the topic's sticky partition. Not thread-safe (see StickyPartitions).
    """

    NAMES = ("murmur2_random", "murmur2", "random", "consistent_random")

    __slots__ = ("name", "sticky", "_hash_key", "_hash_missing_key")

    def __init__(self, name: str = "murmur2_random", sticky: StickyPartitions | None = None) -> None:
        if name not in self.NAMES:
            raise ValueError(f"unknown partitioner {name!r}; expected one of {', '.join(self.NAMES)}")
        self.name = name
        self.sticky = sticky or StickyPartitions()
        self._hash_key: Callable[[bytes, int], int] | None = {
            "murmur2_random": murmur2_partition,
            "murmur2": murmur2_partition,
            "consistent_random": consistent_partition,
            "random": None,
        }[name]
        self._hash_missing_key = name == "murmur2"

    def keyed_partition(self, key: bytes | None, partition_count: int) -> int:
        """The partition the key decides, or -1 when the record goes to the sticky partition.

        Safe without a lock: it reads no sticky state.
        """
        if self._hash_key is not None:
            if key is not None:
                return self._hash_key(key, partition_count)
            if self._hash_missing_key:
                return murmur2_partition(b"", partition_count)
        return -1

    def partition(self, topic: str, key: bytes | None, partition_count: int) -> int:
        """The record's partition, the sticky one included (callers hold the producer's lock)."""
        if self._hash_key is not None:
            if key is not None:
                return self._hash_key(key, partition_count)
            if self._hash_missing_key:
                return murmur2_partition(b"", partition_count)
        return self.sticky.partition(topic, partition_count)

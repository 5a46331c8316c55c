"""confluent-kafka's top-level partition functions: ``murmur2(key, partition_count)``,
``consistent(key, partition_count)`` and ``fnv1a(key, partition_count)`` give the partition
librdkafka's partitioner of that name picks for a key (hashes in :mod:`weir.partitioner`), and
``version()`` / ``libversion()``."""

from __future__ import annotations

from collections.abc import Callable
from importlib import metadata

from weir import partitioner

__all__ = ["consistent", "fnv1a", "libversion", "murmur2", "version"]


def _checked(choose: Callable[[bytes, int], int], key: object, partition_count: object) -> int:
    if not isinstance(key, bytes):
        raise TypeError(f"key must be bytes, got {type(key).__name__}")
    if not isinstance(partition_count, int) or isinstance(partition_count, bool):
        raise TypeError(f"partition_count must be an int, got {type(partition_count).__name__}")
    if partition_count <= 0:
        raise ValueError(f"partition_count must be > 0, got {partition_count}")
    return choose(key, partition_count)


def murmur2(key: bytes, partition_count: int) -> int:
    """The partition of ``key`` by murmur2 (Kafka's Java client, librdkafka's murmur2 partitioner)."""
    return _checked(partitioner.murmur2_partition, key, partition_count)


def consistent(key: bytes, partition_count: int) -> int:
    """The partition of ``key`` by CRC-32 (librdkafka's consistent partitioner)."""
    return _checked(partitioner.consistent_partition, key, partition_count)


def fnv1a(key: bytes, partition_count: int) -> int:
    """The partition of ``key`` by FNV-1a (librdkafka's fnv1a partitioner)."""
    return _checked(partitioner.fnv1a_partition, key, partition_count)


def _version_string() -> str:
    try:
        return metadata.version("weir")
    except metadata.PackageNotFoundError:
        return "0.0.0"


def _version_int(text: str) -> int:
    """librdkafka's packing: 0xMMmmrrxx (major, minor, revision, 0xff for a release)."""
    numbers = [int(part) if part.isdigit() else 0 for part in text.split(".")[:3]] + [0, 0, 0]
    return (numbers[0] << 24) | (numbers[1] << 16) | (numbers[2] << 8) | 0xFF


def version() -> tuple[str, int]:
    """The SDK's version as confluent-kafka reports its own: (string, packed int)."""
    text = _version_string()
    return text, _version_int(text)


def libversion() -> tuple[str, int]:
    """confluent-kafka reports librdkafka's version here; Weir has no librdkafka: the SDK's version."""
    return version()

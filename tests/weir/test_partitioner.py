"""Partition choice: Kafka's murmur2 vectors, key placement and sticky partitioning."""

from __future__ import annotations

import zlib

import pytest

from weir.partitioner import Partitioner, StickyPartitions, consistent_partition, fnv1a, murmur2, murmur2_partition

# Kafka's UtilsTest.testMurmur2.
KAFKA_VECTORS = [
    (b"21", -973932308),
    (b"foobar", -790332482),
    (b"a-little-bit-long-string", -985981536),
    (b"a-little-bit-longer-string", -1486304829),
    (b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971),
    (b"abc", 479470107),
]


@pytest.mark.parametrize(("key", "expected"), KAFKA_VECTORS)
def test_murmur2_matches_kafka_java_client(key: bytes, expected: int) -> None:
    assert murmur2(key) == expected


def test_murmur2_partition_uses_positive_hash_modulo_count() -> None:
    # -973932308 & 0x7fffffff = 1173551340; 1173551340 % 7 = 3
    assert murmur2_partition(b"21", 7) == 3


def test_consistent_partition_is_crc32_modulo_count() -> None:
    assert consistent_partition(b"hello", 5) == zlib.crc32(b"hello") % 5


def test_keyed_partition_of_keyless_record_under_murmur2_random_is_sticky() -> None:
    assert Partitioner("murmur2_random").keyed_partition(None, 4) == -1


def test_keyed_partition_of_keyless_record_under_murmur2_hashes_empty_key() -> None:
    assert Partitioner("murmur2").keyed_partition(None, 4) == murmur2_partition(b"", 4)


def test_random_partitioner_ignores_keys() -> None:
    assert Partitioner("random").keyed_partition(b"key", 4) == -1


def test_consistent_random_hashes_keys_with_crc32() -> None:
    assert Partitioner("consistent_random").keyed_partition(b"key", 9) == zlib.crc32(b"key") % 9


def test_unknown_partitioner_name_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown partitioner"):
        Partitioner("fnv1a_sorted")


def test_sticky_partition_stays_until_its_batch_is_sent() -> None:
    choices = iter([2, 0])
    sticky = StickyPartitions(choose=lambda count: next(choices))
    assert [sticky.partition("t", 4) for _ in range(3)] == [2, 2, 2]
    sticky.batch_sent("t", 2, 4)
    # choose(3) returned 0, which is below the old partition: partition 0.
    assert sticky.partition("t", 4) == 0


def test_sticky_partition_moves_to_a_different_partition() -> None:
    sticky = StickyPartitions(choose=lambda count: count - 1)
    first = sticky.partition("t", 3)
    assert first == 2
    sticky.batch_sent("t", first, 3)
    # choose(2) returns 1, which is below 2 and so kept as partition 1.
    assert sticky.partition("t", 3) == 1


def test_batch_sent_for_another_partition_keeps_the_sticky_one() -> None:
    sticky = StickyPartitions(choose=lambda count: 1)
    assert sticky.partition("t", 4) == 1
    sticky.batch_sent("t", 3, 4)
    assert sticky.partition("t", 4) == 1


def test_sticky_partitions_are_per_topic() -> None:
    choices = iter([0, 3])
    sticky = StickyPartitions(choose=lambda count: next(choices))
    assert sticky.partition("a", 4) == 0
    assert sticky.partition("b", 4) == 3


def test_fnv1a_is_sarama_compatible() -> None:
    # FNV-1a of "hello" is 0x4F9F2CAB (positive as an int32, so kept as is).
    assert fnv1a(b"hello") == 0x4F9F2CAB
    # The offset basis is negative as an int32: the hash of nothing is its absolute value.
    assert fnv1a(b"") == (1 << 32) - 0x811C9DC5


def test_consistent_random_sends_null_and_empty_keys_to_the_sticky_partition() -> None:
    partitioner = Partitioner("consistent_random")
    assert partitioner.keyed_partition(None, 4) == -1
    assert partitioner.keyed_partition(b"", 4) == -1


def test_consistent_hashes_a_null_key_as_empty() -> None:
    assert Partitioner("consistent").keyed_partition(None, 4) == 0  # CRC-32 of nothing is 0


def test_without_sticky_linger_every_keyless_record_is_chosen_anew() -> None:
    choices = iter([1, 3, 0])
    sticky = StickyPartitions(choose=lambda count: next(choices), per_record=True)
    assert [sticky.partition("t", 4) for _ in range(3)] == [1, 3, 0]

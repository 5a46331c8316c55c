"""Record values for the benchmarks, identical for every system measured.

Values are random upper-case letters, as in Kafka's own ProducerPerformance tool, but drawn
from a pool of distinct values instead of one value repeated: a batch of identical records
compresses to almost nothing and would flatter lz4 beyond what real data gets.
"""

from __future__ import annotations

import random
import struct

# Distinct values cycled through; large enough that one compressed batch sees real variety.
POOL_SIZE = 1024
# The end-to-end scenario puts the due time (monotonic nanoseconds, big-endian) in front.
TIMESTAMP = struct.Struct(">q")


def value_pool(record_size: int, seed: int = 20240601) -> list[bytes]:
    """``POOL_SIZE`` distinct values of exactly ``record_size`` bytes (at least TIMESTAMP.size)."""
    if record_size < TIMESTAMP.size:
        raise ValueError(f"record size must be at least {TIMESTAMP.size} bytes, got {record_size}")
    generator = random.Random(seed)
    letters = bytes(range(ord("A"), ord("Z") + 1))
    return [bytes(generator.choices(letters, k=record_size)) for _ in range(POOL_SIZE)]


def stamped_value(filler: bytes, due_ns: int) -> bytes:
    """``filler`` with its first eight bytes replaced by ``due_ns``; same length as ``filler``."""
    return TIMESTAMP.pack(due_ns) + filler[TIMESTAMP.size :]


def read_stamp(value: bytes) -> int:
    """The due time a stamped value carries."""
    return TIMESTAMP.unpack_from(value)[0]

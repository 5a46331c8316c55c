"""Decompression bombs in every codec: batches of at most a few MiB (within max.request.size)
whose records section expands to 1 GiB or more (128 MiB for xerial snappy, whose ratio is
bounded, and 4 GiB claimed by a raw snappy length preamble). Each is built in O(output) memory.
"""

from __future__ import annotations

import struct
import time
import zlib

import cramjam
import lz4.frame
import zstandard

from weir import records

GIB = 1024**3
ZEROS = b"\0" * (1 << 20)


def streamed(compressor, chunk_count: int, finish) -> bytes:
    """Compress ``chunk_count`` MiB of zeros without holding them: the bomb is built in O(output)."""
    parts = [compressor(ZEROS) for _ in range(chunk_count)]
    parts.append(finish())
    return b"".join(parts)


def gzip_bomb() -> bytes:
    # One gzip member of 1 GiB in about 1 MiB. A full flush resets deflate's state, so every MiB
    # after the first compresses to the same bytes: compress two, repeat the second. (The
    # trailer's CRC and length are then wrong, but a reader must stop long before the trailer.)
    deflater = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    first = deflater.compress(ZEROS) + deflater.flush(zlib.Z_FULL_FLUSH)
    repeated = deflater.compress(ZEROS) + deflater.flush(zlib.Z_FULL_FLUSH)
    return first + repeated * 1023 + deflater.flush()


def zstd_bomb() -> bytes:
    # No content size in the frame header: the broker cannot refuse it from the header alone.
    compressor = zstandard.ZstdCompressor(write_content_size=False).compressobj()
    return streamed(compressor.compress, 1024, compressor.flush)  # 1 GiB in well under 1 MiB


def zstd_declared_bomb() -> bytes:
    compressor = zstandard.ZstdCompressor(write_content_size=True)
    writer = compressor.compressobj(size=GIB)
    return streamed(writer.compress, 1024, writer.flush)


def lz4_bomb() -> bytes:
    compressor = lz4.frame.LZ4FrameCompressor(content_checksum=False)
    head = compressor.begin()
    return head + streamed(compressor.compress, 1024, compressor.flush)  # 1 GiB in about 4 MiB


def snappy_declared_bomb() -> bytes:
    # Raw snappy whose length preamble claims 4 GiB - 1: a reader that sizes its output from it
    # allocates 4 GiB before finding out the data is a few bytes.
    preamble = bytearray()
    value = 2**32 - 1
    while value >= 0x80:
        preamble.append((value & 0x7F) | 0x80)
        value >>= 7
    preamble.append(value)
    return bytes(preamble) + bytes(cramjam.snappy.compress_raw(ZEROS))[5:]


def snappy_xerial_bomb() -> bytes:
    # xerial framing, one 8 MiB block of zeros repeated: 128 MiB in about 6 MiB (snappy expands
    # at most about 21 times, so this is as far as a batch within max.request.size can go).
    block = bytes(cramjam.snappy.compress_raw(ZEROS * 8))
    framed = struct.pack(">i", len(block)) + block
    return b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1) + framed * 16


BOMBS = {
    "gzip": (records.COMPRESSION_GZIP, gzip_bomb),
    "zstd": (records.COMPRESSION_ZSTD, zstd_bomb),
    "zstd_declared_size": (records.COMPRESSION_ZSTD, zstd_declared_bomb),
    "lz4": (records.COMPRESSION_LZ4, lz4_bomb),
    "snappy_declared_size": (records.COMPRESSION_SNAPPY, snappy_declared_bomb),
    "snappy_xerial": (records.COMPRESSION_SNAPPY, snappy_xerial_bomb),
}


def batch_with_section(codec: int, section: bytes) -> bytes:
    """A batch whose header and CRC are right and whose records section is ``section``."""
    stamp = int(time.time() * 1000)
    batch = bytearray(records.build_batch([(stamp, None, b"x", None)], codec)[: records.HEADER_SIZE] + section)
    struct.pack_into(">i", batch, records.BATCH_LENGTH_OFFSET, len(batch) - records.LOG_OVERHEAD)
    struct.pack_into(">I", batch, records.CRC_OFFSET, records.crc32c(bytes(batch[records.ATTRIBUTES_OFFSET :])))
    return bytes(batch)

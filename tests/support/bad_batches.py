"""A bad batch already on disk, as an older Weir (which checked only CRCs) or a flipped bit
left it: readers' tests write one into a stopped broker's active segment and start it again.

The batch has a correct CRC and header (offsets follow the log), so that recovery keeps it
and Fetch serves it; only its lz4 payload cannot be decompressed.
"""

from __future__ import annotations

import struct
import time
from pathlib import Path

from log_formats.log_files import LOG_SUFFIX, parse_segment_file_name, partition_directory_name
from tests.support.processes import BrokerProcess
from weir import records


def batch_at(base_offset: int, values: list[bytes], *, timestamp: int | None = None, codec: int = records.COMPRESSION_NONE) -> bytes:
    """A valid batch of ``values`` whose offsets start at ``base_offset`` (leader epoch 0)."""
    stamp = int(time.time() * 1000) if timestamp is None else timestamp
    return records.build_batch(((stamp, None, value, None) for value in values), codec, base_offset=base_offset, partition_leader_epoch=0)


def undecodable_batch_at(base_offset: int, count: int) -> bytes:
    """A batch of ``count`` records at ``base_offset`` whose lz4 payload is garbage but whose CRC is right."""
    batch = bytearray(batch_at(base_offset, [b"lost-%d" % index for index in range(count)], codec=records.COMPRESSION_LZ4))
    payload_end = len(batch)
    batch[payload_end - 8 : payload_end] = b"\xde\xad\xbe\xef\xde\xad\xbe\xef"
    struct.pack_into(">I", batch, records.CRC_OFFSET, records.crc32c(bytes(batch[records.ATTRIBUTES_OFFSET :])))
    return bytes(batch)


def append_to_stopped_log(broker: BrokerProcess, storage_topic: str, partition: int, data: bytes) -> None:
    """Append ``data`` to the active segment of a stopped broker's partition (``storage_topic`` is
    the name on disk: tenant-prefixed for a managed broker's tenant topics)."""
    assert not broker.is_running(), "the broker must be stopped first"
    directory = broker.data_dir / partition_directory_name(storage_topic, partition)
    if not directory.is_dir():
        # A tenant's topic: its directory carries the tenant prefix, which the caller need not know.
        [directory] = [path for path in broker.data_dir.iterdir() if path.name.endswith("~" + partition_directory_name(storage_topic, partition))]
    segments = sorted((parsed[0], path) for path in directory.iterdir() if (parsed := parse_segment_file_name(path.name)) and parsed[1] == LOG_SUFFIX)
    active: Path = segments[-1][1]
    with open(active, "ab") as file:
        file.write(data)

"""Transaction markers: the control records that end a transaction in a partition, as Kafka encodes them.

A marker is a batch with the transactional and control attribute bits set, the producer's id
and epoch in the header, no sequence (-1), and exactly one record (Kafka's EndTransactionMarker):

- key: version int16 (0), type int16 (0 = ABORT, 1 = COMMIT);
- value: version int16 (0), coordinator epoch int32.

The broker writes markers (``PartitionLog.append_marker``), replicas and recovery read them
back to finish the producer's transaction, and ``weir-dump-log`` prints them; all of them use
this module so that the encoding is defined once. Kafka readers accept a marker value longer
than these six bytes (later versions may add fields), and so does ``decode_marker``.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from weir.records import (
    NO_SEQUENCE,
    BatchHeader,
    RecordBatchBuilder,
    RecordFormatError,
    batch_records_bytes,
    decode_records,
)

# Control record types (the key's second field) Kafka defines for transaction markers.
CONTROL_TYPE_ABORT = 0
CONTROL_TYPE_COMMIT = 1
# The only control key version and marker value version Kafka writes.
CONTROL_KEY_VERSION = 0
END_TRANSACTION_MARKER_VERSION = 0

_CONTROL_KEY = struct.Struct(">hh")  # version, type
_MARKER_VALUE = struct.Struct(">hi")  # version, coordinator epoch


@dataclass(frozen=True, slots=True)
class EndTransactionMarker:
    """What one marker says: whether the transaction committed, and which coordinator epoch wrote it."""

    commit: bool
    coordinator_epoch: int

    @property
    def type_name(self) -> str:
        return "COMMIT" if self.commit else "ABORT"


def encode_marker_batch(
    producer_id: int,
    producer_epoch: int,
    marker: EndTransactionMarker,
    *,
    timestamp_ms: int,
    partition_leader_epoch: int,
) -> bytes:
    """One control batch holding ``marker`` for ``producer_id``; its base offset is 0 until the log assigns one."""
    builder = RecordBatchBuilder(
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=NO_SEQUENCE,
        transactional=True,
        control=True,
        partition_leader_epoch=partition_leader_epoch,
    )
    control_type = CONTROL_TYPE_COMMIT if marker.commit else CONTROL_TYPE_ABORT
    key = _CONTROL_KEY.pack(CONTROL_KEY_VERSION, control_type)
    value = _MARKER_VALUE.pack(END_TRANSACTION_MARKER_VERSION, marker.coordinator_epoch)
    builder.append(timestamp_ms, key, value)
    return builder.build()


def decode_marker(key: bytes | None, value: bytes | None) -> EndTransactionMarker:
    """The marker in one control record; RecordFormatError for any other control record or a malformed one."""
    if key is None or len(key) < _CONTROL_KEY.size:
        raise RecordFormatError("control record key is shorter than 4 bytes")
    _, control_type = _CONTROL_KEY.unpack_from(key, 0)
    if control_type not in (CONTROL_TYPE_ABORT, CONTROL_TYPE_COMMIT):
        raise RecordFormatError(f"control record type {control_type} is not a transaction marker")
    if value is None or len(value) < _MARKER_VALUE.size:
        raise RecordFormatError("transaction marker value is shorter than 6 bytes")
    _, coordinator_epoch = _MARKER_VALUE.unpack_from(value, 0)
    return EndTransactionMarker(control_type == CONTROL_TYPE_COMMIT, coordinator_epoch)


def read_marker_batch(buffer: bytes | bytearray | memoryview, position: int, header: BatchHeader) -> EndTransactionMarker:
    """The marker of the control batch ``header`` stored at ``position`` of ``buffer``.

    Raises RecordFormatError when the batch is not a control batch or holds no marker.
    """
    if not header.is_control:
        raise RecordFormatError(f"batch at offset {header.base_offset} is not a control batch", position)
    records = decode_records(batch_records_bytes(buffer, position, header), header)
    if len(records) != 1:
        raise RecordFormatError(f"control batch at offset {header.base_offset} holds {len(records)} records, not 1", position)
    _, _, key, value, _ = records[0]
    return decode_marker(key, value)

"""Binary ``__usage`` rows decoded a whole Arrow batch at a time with numpy: what the usage job's
``mapInArrow`` runs in its Python workers (no Spark import here, so workers load only numpy and pyarrow).

A binary row (``log_formats.usage_records``: format byte ``0x01``, fixed-width big-endian fields at
:data:`~log_formats.usage_records.BINARY_LAYOUT`, then the three strings) has its fields at fixed
places, so a batch of rows is decoded without a loop over rows: the values' bytes are one buffer
and their starts the Arrow binary array's offsets buffer; every header is gathered into one
``rows x 100`` byte matrix, each field is a column slice of it viewed as big-endian integers, and
each string field is gathered into a new Arrow binary array (its offsets the running sum of the
lengths).

:func:`decode_usage_batch` takes ``source_partition``, ``source_offset`` and ``value`` and returns
:data:`DECODED_COLUMNS` (Spark DDL :data:`DECODED_SCHEMA_DDL`): the position, whether the value is
binary, every fixed-width field and string (null where the row is not binary, or too short, or
the field belongs to the other kind), the kind code, the value's size and the size its header
says, whether its strings are ASCII (then they are UTF-8; others are checked by Spark), and
``undecoded_value``: the value itself where Spark still needs it, that is JSON rows (decoded by
``from_json``) and binary rows that may be unusable (named with their bytes); null otherwise, so
that most values do not travel back from Python. The texts of the problems are built by
:func:`spark_pipelines.transforms.usage.parse_usage_records` from these columns.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from log_formats.usage_records import BINARY_FORMAT, BINARY_HEADER_SIZE, BINARY_LAYOUT, KIND_CODES, KIND_FIELDS, STRING_FIELDS_IN_ORDER

# Fixed-width integer fields of every binary row, with their Spark type and numpy big-endian type.
_COMMON_FIELDS = {"node_id": "BIGINT", "sequence": "BIGINT", "window_start_ms": "BIGINT", "window_end_ms": "BIGINT", "partition": "INT"}
KIND_CODE_COLUMN = "kind_code"
BINARY_COLUMN = "binary"
SIZE_COLUMN = "binary_size"  # octet length of a binary value
EXPECTED_SIZE_COLUMN = "binary_expected_size"  # the size its header says (null when shorter than the header)
ASCII_COLUMN = "strings_ascii"  # every byte of the three strings is ASCII: they are valid UTF-8
UNDECODED_COLUMN = "undecoded_value"
COUNTER_FIELDS = tuple(name for names in KIND_FIELDS.values() for name in names)
DECODED_COLUMNS = (
    "source_partition",
    "source_offset",
    BINARY_COLUMN,
    UNDECODED_COLUMN,
    KIND_CODE_COLUMN,
    *_COMMON_FIELDS,
    *COUNTER_FIELDS,
    *STRING_FIELDS_IN_ORDER,
    SIZE_COLUMN,
    EXPECTED_SIZE_COLUMN,
    ASCII_COLUMN,
)
DECODED_SCHEMA_DDL = ", ".join(
    [
        "source_partition INT",
        "source_offset BIGINT",
        f"{BINARY_COLUMN} BOOLEAN",
        f"{UNDECODED_COLUMN} BINARY",
        f"{KIND_CODE_COLUMN} INT",
        *(f"`{name}` {sql_type}" for name, sql_type in _COMMON_FIELDS.items()),
        *(f"{name} BIGINT" for name in COUNTER_FIELDS),
        *(f"{name} BINARY" for name in STRING_FIELDS_IN_ORDER),
        f"{SIZE_COLUMN} INT",
        f"{EXPECTED_SIZE_COLUMN} INT",
        f"{ASCII_COLUMN} BOOLEAN",
    ]
)
_NUMPY_TYPES = {1: ">u1", 2: ">u2", 4: ">i4", 8: ">i8"}  # the header's integers: 1- and 2-byte ones unsigned
_ARROW_TYPES = {"BIGINT": pa.int64(), "INT": pa.int32()}


def decode_usage_batches(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """``mapInArrow``'s function: :func:`decode_usage_batch` of every batch."""
    for batch in batches:
        yield decode_usage_batch(batch)


def decode_usage_batch(batch: pa.RecordBatch) -> pa.RecordBatch:
    """The :data:`DECODED_COLUMNS` of a batch of ``source_partition``, ``source_offset``, ``value`` (see the module docstring)."""
    values = batch.column("value")
    count = len(values)
    offsets, data = _offsets_and_data(values)
    starts, sizes = offsets[:-1], np.diff(offsets)
    present = pc.is_valid(values).to_numpy(zero_copy_only=False)
    first_bytes = data[np.minimum(starts, max(len(data) - 1, 0))] if len(data) else np.zeros(count, np.uint8)
    binary = present & (sizes > 0) & (first_bytes == BINARY_FORMAT)
    framed = binary & (sizes >= BINARY_HEADER_SIZE)  # a whole header to read
    rows = np.flatnonzero(framed)
    # Every header at once: rows of a 100-byte sliding window over the batch's bytes, taken at the rows' starts.
    header = np.lib.stride_tricks.sliding_window_view(data, BINARY_HEADER_SIZE)[starts[rows]] if len(rows) else np.zeros((0, BINARY_HEADER_SIZE), np.uint8)
    integers = {name: _scatter(_header_integer(header, name), rows, count) for name in BINARY_LAYOUT if name != "format"}
    lengths = [integers[f"{name}_length"] for name in STRING_FIELDS_IN_ORDER]
    expected = BINARY_HEADER_SIZE + lengths[0] + lengths[1] + lengths[2]
    whole = framed & (sizes == expected)  # the strings are where the header says
    string_start = starts + BINARY_HEADER_SIZE
    strings = {}
    ascii_strings = whole.copy()
    for name, length in zip(STRING_FIELDS_IN_ORDER, lengths, strict=True):
        strings[name], ascii_strings = _gather_bytes(data, string_start, np.where(whole, length, 0), whole, ascii_strings)
        string_start = string_start + length
    kind = integers["kind"]
    known_kind = np.isin(kind, list(KIND_CODES.values()))
    in_order = integers["window_end_ms"] >= integers["window_start_ms"]
    # Spark needs the value of a JSON row (to decode it) and of a binary row that may be unusable (to name it).
    undecoded = present & ~(whole & known_kind & in_order & ascii_strings)
    columns: dict[str, pa.Array] = {
        "source_partition": batch.column("source_partition"),
        "source_offset": batch.column("source_offset"),
        BINARY_COLUMN: pa.array(binary),
        UNDECODED_COLUMN: _gather_bytes(data, starts, np.where(undecoded, sizes, 0), undecoded)[0],
        KIND_CODE_COLUMN: pa.array(kind.astype(np.int32), mask=~framed),
    }
    for name, sql_type in _COMMON_FIELDS.items():
        columns[name] = pa.array(integers[name], mask=~framed).cast(_ARROW_TYPES[sql_type])
    for row_kind, names in KIND_FIELDS.items():
        of_kind = framed & (kind == KIND_CODES[row_kind])
        for slot, name in enumerate(names):
            columns[name] = pa.array(integers[f"slot{slot}"], mask=~of_kind)
    columns.update(strings)
    columns[SIZE_COLUMN] = pa.array(sizes.astype(np.int32), mask=~binary)
    columns[EXPECTED_SIZE_COLUMN] = pa.array(expected.astype(np.int32), mask=~framed)
    columns[ASCII_COLUMN] = pa.array(ascii_strings)
    return pa.RecordBatch.from_arrays([columns[name] for name in DECODED_COLUMNS], names=list(DECODED_COLUMNS))


def _offsets_and_data(values: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """The start of every value (and the end of the last) in the data buffer, as int64, and that buffer as bytes."""
    _validity, offsets_buffer, data_buffer = values.buffers()
    offset_type = np.int64 if pa.types.is_large_binary(values.type) else np.int32
    offsets = np.frombuffer(offsets_buffer, dtype=offset_type, count=len(values) + 1, offset=values.offset * np.dtype(offset_type).itemsize)
    data = np.frombuffer(data_buffer, dtype=np.uint8) if data_buffer is not None else np.zeros(0, np.uint8)
    return offsets.astype(np.int64), data


def _header_integer(header: np.ndarray, field: str) -> np.ndarray:
    """``field`` (``BINARY_LAYOUT``) of every header row of ``header`` as int64."""
    offset, size = BINARY_LAYOUT[field]
    return np.ascontiguousarray(header[:, offset : offset + size]).view(_NUMPY_TYPES[size]).reshape(-1).astype(np.int64)


def _scatter(values: np.ndarray, rows: np.ndarray, count: int) -> np.ndarray:
    """``values`` of ``rows`` placed in an array of ``count`` (0 elsewhere)."""
    every = np.zeros(count, np.int64)
    every[rows] = values
    return every


def _gather_bytes(
    data: np.ndarray, starts: np.ndarray, lengths: np.ndarray, valid: np.ndarray, ascii_rows: np.ndarray | None = None
) -> tuple[pa.Array, np.ndarray]:
    """A binary array of ``data[starts[i] : starts[i] + lengths[i]]`` (null where not ``valid``), and
    ``ascii_rows`` (all true when not given) false where the row's bytes are not all ASCII."""
    ends = np.cumsum(lengths)
    offsets = np.zeros(len(lengths) + 1, np.int32)
    offsets[1:] = ends
    total = int(ends[-1]) if len(ends) else 0
    # Position k of the output comes from data[k + (start - output start)] of its row.
    positions = np.repeat(starts - offsets[:-1], lengths) + np.arange(total)
    gathered = data[positions] if total else np.zeros(0, np.uint8)
    validity = pa.py_buffer(np.packbits(valid, bitorder="little"))
    array = pa.Array.from_buffers(
        pa.binary(), len(lengths), [validity, pa.py_buffer(offsets), pa.py_buffer(gathered)], null_count=int(len(valid) - valid.sum())
    )
    ascii_rows = np.ones(len(lengths), bool) if ascii_rows is None else ascii_rows
    high = gathered >= 0x80
    if high.any():  # rare: count the non-ASCII bytes of each row
        running = np.zeros(total + 1, np.int64)
        np.cumsum(high, out=running[1:])
        ascii_rows = ascii_rows & (running[offsets[1:]] == running[offsets[:-1]])
    return array, ascii_rows

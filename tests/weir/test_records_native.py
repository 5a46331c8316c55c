"""weir._records_native against the pure-Python codec, its reference: the same bytes, values and
errors (type, message, position) on random records and on corrupt records sections.

Run under ``python -X dev`` too: a C bug that reads past a buffer shows up there as a crash.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from broker_nodes.storage import batch_validation
from weir import records
from weir.message import TIMESTAMP_CREATE_TIME, Message, decode_messages
from weir.records import HEADER_SIZE, RecordBatchBuilder, RecordFormatError

native = pytest.importorskip("weir._records_native", reason="the native record codec was not built (no C compiler at install)")

INT64_MAX = 2**63 - 1
SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

# Lengths around the one-, two- and three-byte varint boundaries (63/64, 8191/8192).
binary_field = st.one_of(st.none(), st.binary(max_size=70), st.integers(8188, 8196).map(lambda size: bytes(range(256)) * (size // 256) + bytes(size % 256)))
header_strategy = st.tuples(st.text(max_size=12), st.one_of(st.none(), st.binary(max_size=70)))
record_strategy = st.tuples(
    st.one_of(st.integers(-100, 10_000), st.integers(-(2**61), 2**61)),  # timestamp delta: small, or a ten-byte varint
    binary_field,
    binary_field,
    st.one_of(st.none(), st.lists(header_strategy, max_size=3)),
)
base_timestamp_strategy = st.one_of(st.just(1_700_000_000_000), st.integers(-(2**61), 2**61))


@contextmanager
def pure_python() -> Iterator[None]:
    saved = records._native
    records._native = None
    try:
        yield
    finally:
        records._native = saved


def build(rows: list[Any], base_timestamp: int, **options: Any) -> bytes:
    builder = RecordBatchBuilder(**options)
    for timestamp_delta, key, value, headers in rows:
        builder.append(base_timestamp + timestamp_delta, key, value, headers)
    return builder.build()


def outcome(function: Callable[[], Any]) -> Any:
    """What a call returns, or its error as (type, message, position)."""
    try:
        return ("value", function())
    except RecordFormatError as error:
        return ("error", type(error), str(error), error.position)


def mutate(section: bytes, data: st.DataObject) -> bytes:
    """A corrupt records section: truncated, with bytes overwritten, inserted or removed."""
    corrupt = bytearray(section)
    for _ in range(data.draw(st.integers(1, 3))):
        kind = data.draw(st.sampled_from(["truncate", "overwrite", "insert", "delete"]))
        spot = data.draw(st.integers(0, max(len(corrupt) - 1, 0)))
        if kind == "truncate":
            del corrupt[spot:]
        elif kind == "overwrite" and corrupt:
            corrupt[spot] = data.draw(st.sampled_from([0x00, 0x01, 0x03, 0x7F, 0x80, 0xFF, data.draw(st.integers(0, 255))]))
        elif kind == "insert":
            corrupt[spot:spot] = data.draw(st.binary(min_size=1, max_size=11))
        elif corrupt:
            del corrupt[spot]
    return bytes(corrupt)


# ------------------------------------------------------------------ (3) the builder's record encoding


@SETTINGS
@given(rows=st.lists(record_strategy, min_size=1, max_size=8), base_timestamp=base_timestamp_strategy)
def test_native_builder_writes_the_bytes_of_the_python_builder(rows, base_timestamp):
    batch = build(rows, base_timestamp)
    with pure_python():
        assert build(rows, base_timestamp) == batch


@SETTINGS
@given(offset_delta=st.integers(0, INT64_MAX), timestamp_delta=st.integers(-(2**63), INT64_MAX), key=binary_field, value=binary_field)
def test_native_record_encoding_covers_every_int64_varint(offset_delta, timestamp_delta, key, value):
    builder = RecordBatchBuilder(base_timestamp=0)
    with pure_python():
        builder.append(timestamp_delta, key, value, None, offset_delta=offset_delta)
    assert native.encode_record(offset_delta, timestamp_delta, key, value, None) == bytes(builder._records)


def test_native_encoding_leaves_other_types_to_python():
    assert native.encode_record(0, 2**64, b"k", b"v", None) is None  # beyond int64
    assert native.encode_record(0, 0, "text", b"v", None) is None  # Python's own TypeError follows
    assert native.encode_record(0, 0, b"k", b"v", [["list", b"pair"]]) is None
    with pytest.raises(UnicodeEncodeError):  # as str.encode("utf-8") raises
        native.encode_record(0, 0, b"k", b"v", [("\udc80", b"x")])
    with pytest.raises(TypeError):
        RecordBatchBuilder().append(0, "text", b"v")  # type: ignore[arg-type]


# ------------------------------------------------------------------ (2) decode_records


def decode_both(section: bytes, header: records.BatchHeader, min_offset: int = 0) -> tuple[Any, Any]:
    native_outcome = outcome(lambda: records.decode_records(section, header, min_offset))
    python_outcome = outcome(lambda: records.decode_records_python(section, header, min_offset))
    return native_outcome, python_outcome


@SETTINGS
@given(
    rows=st.lists(record_strategy, min_size=1, max_size=8),
    base_timestamp=base_timestamp_strategy,
    log_append=st.booleans(),
    min_offset=st.integers(-5, 20),
    base_offset=st.integers(0, 2**40),
)
def test_native_decoding_gives_the_values_of_python(rows, base_timestamp, log_append, min_offset, base_offset):
    batch = build(rows, base_timestamp, timestamp_type=int(log_append), base_offset=base_offset)
    header = records.read_batch_header(batch)
    native_outcome, python_outcome = decode_both(batch[HEADER_SIZE:], header, base_offset + min_offset)
    assert native_outcome == python_outcome
    assert native_outcome[0] == "value"


@SETTINGS
@given(rows=st.lists(record_strategy, min_size=1, max_size=6), count_change=st.sampled_from([0, 0, 0, -1, 1, 5]), data=st.data())
def test_native_decoding_refuses_corrupt_sections_as_python_does(rows, count_change, data):
    batch = build(rows, 1_700_000_000_000)
    header = records.read_batch_header(batch)
    header = header._replace(records_count=header.records_count + count_change)
    section = mutate(batch[HEADER_SIZE:], data)
    native_outcome, python_outcome = decode_both(section, header)
    assert native_outcome == python_outcome


@SETTINGS
@given(section=st.binary(max_size=60), count=st.integers(0, 5))
def test_native_decoding_of_random_bytes_matches_python(section, count):
    header = records.read_batch_header(build([(0, None, b"v", None)], 0))
    native_outcome, python_outcome = decode_both(section, header._replace(records_count=count))
    assert native_outcome == python_outcome


NULL_HEADER = records.read_batch_header(build([(0, None, b"v", None)], 0))._replace(records_count=1)


@pytest.mark.parametrize(
    ("section", "message", "position"),
    [
        (b"\x80", "records section ends inside a record (batch at byte 0)", 0),  # truncated varint
        (b"\x08\x00\x00\x00\x01\x02", "records section ends inside a record (batch at byte 0)", 0),  # value past the end
        (b"\x40\x00\x00\x00", "record of 32 bytes runs past the end of the batch (batch at byte 0)", 0),
        (b"\x0e\x00\x00\x00\xfd\xff\x03\x01\x00", "negative key length -32767 (batch at byte 0)", 0),  # three-byte -32767
        (b"\x0e\x00\x00\x00\x01\xfb\xff\x03\x00", "negative value length -32766 (batch at byte 0)", 0),
        (b"\x0c\x00\x00\x00\x01\x01\x02\x02\x00\x05\x00", "negative header value length -3 (batch at byte 0)", 0),
        (b"\x0a\x00\x00\x00\x01\x01\x02\x01\x00\x00", "negative header key length -1 (batch at byte 0)", 0),
        (b"\x06\x00\x00\x00" + b"\xff" * 11, "varint is longer than 10 bytes (batch at byte 14)", 14),
    ],
)
def test_corrupt_records_raise_the_same_error_natively_and_in_python(section, message, position):
    for decode in (records.decode_records, records.decode_records_python):
        with pytest.raises(RecordFormatError) as caught:
            decode(section, NULL_HEADER)
        assert (str(caught.value), caught.value.position) == (message, position)


def test_fewer_records_than_the_header_says_is_an_error_both_ways():
    batch = build([(0, b"k", b"v", None)] * 3, 0)
    header = records.read_batch_header(batch)._replace(records_count=4)
    native_outcome, python_outcome = decode_both(batch[HEADER_SIZE:], header)
    assert native_outcome == python_outcome == ("error", RecordFormatError, "records section ends inside a record (batch at byte 0)", 0)


# ------------------------------------------------------------------ (1) the broker's record walk


def walk_outcome(walk: Callable[..., tuple[int, int]], section: bytes, count: int, require_keys: bool) -> Any:
    try:
        return ("value", walk(section, count, require_keys=require_keys))
    except batch_validation._RecordsProblem as problem:
        return ("problem", problem.reason, problem.record_index, problem.corrupt)


def walk_both(section: bytes, count: int, require_keys: bool) -> tuple[Any, Any]:
    native_walk = walk_outcome(batch_validation.walk_records, section, count, require_keys)
    python_walk = walk_outcome(batch_validation.walk_records_python, section, count, require_keys)
    return native_walk, python_walk


@SETTINGS
@given(rows=st.lists(record_strategy, min_size=1, max_size=8), base_timestamp=base_timestamp_strategy, require_keys=st.booleans())
def test_native_walk_gives_the_timestamp_deltas_of_python(rows, base_timestamp, require_keys):
    batch = build(rows, base_timestamp)
    native_walk, python_walk = walk_both(batch[HEADER_SIZE:], len(rows), require_keys)
    assert native_walk == python_walk
    # The C walk itself, called directly so that WEIR_PURE_PYTHON=1 (which turns the dispatch off) still tests it.
    direct = native.walk_records(batch[HEADER_SIZE:], len(rows), require_keys)
    assert (("problem", *direct) if len(direct) == 3 else ("value", direct)) == python_walk


@SETTINGS
@given(rows=st.lists(record_strategy, min_size=1, max_size=6), count_change=st.sampled_from([0, 0, 0, -1, 1, 5]), require_keys=st.booleans(), data=st.data())
def test_native_walk_refuses_corrupt_sections_as_python_does(rows, count_change, require_keys, data):
    batch = build(rows, 1_700_000_000_000)
    section = mutate(batch[HEADER_SIZE:], data)
    native_walk, python_walk = walk_both(section, len(rows) + count_change, require_keys)
    assert native_walk == python_walk


@SETTINGS
@given(section=st.binary(max_size=60), count=st.integers(1, 5), require_keys=st.booleans())
def test_native_walk_of_random_bytes_matches_python(section, count, require_keys):
    native_walk, python_walk = walk_both(section, count, require_keys)
    assert native_walk == python_walk


def test_native_walk_names_a_non_utf8_header_key_and_a_count_mismatch():
    good = build([(0, b"k", b"v", [("ok", b"x")])], 0)[HEADER_SIZE:]
    bad_key = good.replace(b"ok", b"\xff\xfe")
    assert walk_both(bad_key, 1, False)[0] == ("problem", "a header key is not UTF-8", 0, False)
    assert walk_both(good, 2, False)[0] == ("problem", "the header says 2 records but the records section holds 1", 1, False)


# ------------------------------------------------------------------ switching the native codec off


def test_weir_pure_python_forces_the_python_codec():
    code = "import weir.records as r; print(r.native_codec_active())"
    environment = {**os.environ, "WEIR_PURE_PYTHON": "1"}
    forced = subprocess.run([sys.executable, "-c", code], env=environment, capture_output=True, text=True, timeout=60, check=True)
    assert forced.stdout.strip() == "False"
    assert records.native_codec_active() is (os.environ.get("WEIR_PURE_PYTHON", "") in ("", "0"))


# ------------------------------------------------------------------ (4) decode_messages: records straight to Messages


def message_fields(message: Message) -> tuple[Any, ...]:
    """Everything a consumed Message holds, through its public accessors."""
    return (
        type(message),
        message.topic(),
        message.partition(),
        message.offset(),
        message.timestamp(),
        message.key(),
        message.value(),
        message.headers(),
        message.error(),
        message.latency(),
        message.leader_epoch(),
    )


def decode_messages_both(section: bytes, header: records.BatchHeader, min_offset: int = 0, leader_epoch: int | None = 7) -> tuple[Any, Any]:
    def decode() -> list[tuple[Any, ...]]:
        return [message_fields(message) for message in decode_messages(section, header, min_offset, "orders", 3, leader_epoch)]

    native_outcome = outcome(decode)
    with pure_python():
        python_outcome = outcome(decode)
    return native_outcome, python_outcome


@SETTINGS
@given(
    rows=st.lists(record_strategy, min_size=1, max_size=8),
    base_timestamp=base_timestamp_strategy,
    log_append=st.booleans(),
    min_offset=st.integers(-5, 20),
    leader_epoch=st.sampled_from([None, 0, 12]),
)
def test_native_messages_hold_what_python_messages_hold(rows, base_timestamp, log_append, min_offset, leader_epoch):
    batch = build(rows, base_timestamp, timestamp_type=int(log_append), base_offset=1000)
    header = records.read_batch_header(batch)
    native_outcome, python_outcome = decode_messages_both(batch[HEADER_SIZE:], header, 1000 + min_offset, leader_epoch)
    assert native_outcome == python_outcome
    assert native_outcome[0] == "value"
    assert len(native_outcome[1]) == len([row for index, row in enumerate(rows) if index >= min_offset])


@SETTINGS
@given(rows=st.lists(record_strategy, min_size=1, max_size=6), count_change=st.sampled_from([0, 0, -1, 1, 5]), data=st.data())
def test_native_messages_refuse_corrupt_sections_as_python_does(rows, count_change, data):
    batch = build(rows, 1_700_000_000_000)
    header = records.read_batch_header(batch)
    header = header._replace(records_count=header.records_count + count_change)
    native_outcome, python_outcome = decode_messages_both(mutate(batch[HEADER_SIZE:], data), header)
    assert native_outcome == python_outcome


def test_native_messages_are_whole_messages_that_can_be_changed():
    batch = build([(0, b"k", b"v", [("h", b"1")]), (5, None, b"w", None)], 1_700_000_000_000)
    first, second = decode_messages(batch[HEADER_SIZE:], records.read_batch_header(batch), 0, "orders", 3, None)
    assert (first.timestamp(), second.timestamp()) == ((TIMESTAMP_CREATE_TIME, 1_700_000_000_000), (TIMESTAMP_CREATE_TIME, 1_700_000_000_005))
    first.set_value(b"changed")
    first.set_headers(None)
    assert (first.value(), first.headers(), first.key(), len(first)) == (b"changed", None, b"k", 7)
    assert repr(second) == "Message(topic='orders', partition=3, offset=1)"


def test_native_message_construction_refuses_a_class_without_the_slots():
    class Plain:
        pass

    with pytest.raises(TypeError, match="__slots__"):
        native.init_message(Plain)
    native.init_message(Message)  # restores the real class for the rest of the run

"""The body of a Produce response (v3-v11) encoded directly, bytes identical to kio's for the answers it takes.

Why: a producer with ``linger.ms=0`` sends one Produce request per record, and building kio's
response objects and running its generic writer over them was about a third of the broker's
Python time per such request. This encoder writes the same bytes with ``struct`` in one pass.
It takes the answers without KIP-467 record errors and without KIP-951 leader hints (which add
nested entities and tagged fields); for those :func:`encode_produce_body` answers None and the
handler builds kio's objects as before. ``tests/kafka_protocol/test_produce_response.py`` checks
every version against kio's encoding.

Byte layout (Kafka's ``ProduceResponse.json``; v9+ are "flexible": compact arrays and strings,
a tagged-field section at the end of every entity, here always empty):

- responses: array of topic: name (string), partition_responses: array of partition:
  index int32, error_code int16, base_offset int64, log_append_time_ms int64 (-1: none),
  log_start_offset int64 (v5+), record_errors array (v8+, empty here), error_message
  nullable string (v8+), tagged fields (v9+);
  then the topic's tagged fields (v9+);
- throttle_time_ms int32; tagged fields (v9+).

Arrays are int32-counted (v3-v8) or uvarint(count + 1) (v9+); strings int16-sized (null: -1) or
uvarint(size + 1) (null: 0), sizes in UTF-8 bytes. Pure functions; thread-safe.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence

from broker_nodes.requests.produce import ProducePartitionOutcome
from weir.records import encode_unsigned_varint

FIRST_FLEXIBLE_VERSION = 9
LOG_START_OFFSET_FROM = 5  # the version that added log_start_offset
RECORD_ERRORS_FROM = 8  # the version that added record_errors and error_message
LEADER_HINTS_FROM = 10  # the version that added current_leader and node_endpoints (tagged fields)
NO_TAGGED_FIELDS = b"\x00"  # a flexible entity's empty tagged-field section: uvarint 0
NO_LOG_APPEND_TIME = -1

_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_PARTITION_V3 = struct.Struct(">ihqq")  # index, error_code, base_offset, log_append_time_ms
_PARTITION_V5 = struct.Struct(">ihqqq")  # ... and log_start_offset
_EMPTY_LEGACY_ARRAY = _INT32.pack(0)
_EMPTY_COMPACT_ARRAY = encode_unsigned_varint(1)
_NULL_LEGACY_STRING = _INT16.pack(-1)
_NULL_COMPACT_STRING = encode_unsigned_varint(0)


def encode_produce_body(version: int, topics: Mapping[str, Sequence[ProducePartitionOutcome]], throttle_ms: int) -> bytes | None:
    """The response body of Produce ``version`` (3-11) answering ``topics`` in order; None when an
    answer carries record errors or a leader hint (the caller then encodes it with kio)."""
    flexible = version >= FIRST_FLEXIBLE_VERSION
    parts: list[bytes] = [_array_size(len(topics), flexible)]
    for name, outcomes in topics.items():
        parts.append(_string(name, flexible))
        parts.append(_array_size(len(outcomes), flexible))
        for outcome in outcomes:
            if outcome.record_errors or (outcome.current_leader is not None and version >= LEADER_HINTS_FROM):
                return None
            parts.append(_partition(version, outcome, flexible))
        if flexible:
            parts.append(NO_TAGGED_FIELDS)
    parts.append(_INT32.pack(max(throttle_ms, 0)))
    if flexible:
        parts.append(NO_TAGGED_FIELDS)
    return b"".join(parts)


def _partition(version: int, outcome: ProducePartitionOutcome, flexible: bool) -> bytes:
    append_time = outcome.log_append_time_ms if outcome.log_append_time_ms >= 0 else NO_LOG_APPEND_TIME
    if version < LOG_START_OFFSET_FROM:
        return _PARTITION_V3.pack(outcome.partition, outcome.error_code, outcome.base_offset, append_time)
    fixed = _PARTITION_V5.pack(outcome.partition, outcome.error_code, outcome.base_offset, append_time, outcome.log_start_offset)
    if version < RECORD_ERRORS_FROM:
        return fixed
    message = _nullable_string(outcome.error_message or None, flexible)
    if flexible:
        return fixed + _EMPTY_COMPACT_ARRAY + message + NO_TAGGED_FIELDS
    return fixed + _EMPTY_LEGACY_ARRAY + message


def _array_size(count: int, flexible: bool) -> bytes:
    return encode_unsigned_varint(count + 1) if flexible else _INT32.pack(count)


def _string(text: str, flexible: bool) -> bytes:
    data = text.encode()
    return (encode_unsigned_varint(len(data) + 1) if flexible else _INT16.pack(len(data))) + data


def _nullable_string(text: str | None, flexible: bool) -> bytes:
    if text is None:
        return _NULL_COMPACT_STRING if flexible else _NULL_LEGACY_STRING
    return _string(text, flexible)

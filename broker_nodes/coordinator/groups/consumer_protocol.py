"""Kafka's consumer protocol: the bytes classic members put in JoinGroup metadata (a subscription)
and SyncGroup assignments, read with kio's schemas.

The bytes are a version (int16) and the message of that version; a version newer than kio knows
is read as the newest one it knows (newer versions only add fields at the end, as Kafka's
consumer protocol promises). kio is imported on first use, not when the broker starts: importing
it costs about a second of CPU, which a broker that never coordinates a classic group need not
pay. Thread-safe (the readers are built once and only read afterwards).
"""

from __future__ import annotations

import functools
import importlib
import struct
from typing import Any, Literal

VERSION = struct.Struct(">h")
KNOWN_VERSIONS = 4  # v0-v3 of both messages
Kind = Literal["subscription", "assignment"]


@functools.cache
def _reader(kind: Kind, version: int) -> Any:
    from kio.serial import entity_reader

    module = importlib.import_module(f"kio.schema.consumer_protocol_{kind}.v{version}")
    return entity_reader(getattr(module, f"ConsumerProtocol{kind.capitalize()}"))


def decode(kind: Kind, data: bytes) -> Any | None:
    """The kio object of a consumer-protocol message; None when the bytes are not one."""
    if len(data) < VERSION.size:
        return None
    (version,) = VERSION.unpack_from(data)
    if version < 0:
        return None
    try:
        decoded, _ = _reader(kind, min(version, KNOWN_VERSIONS - 1))(memoryview(data), VERSION.size)
    except Exception:  # kio raises several types for malformed bytes; any of them means "not a message we can read"
        return None
    return decoded

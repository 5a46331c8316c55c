"""Kafka's frames and request/response headers, decoded and encoded with kio.

Byte layout (Kafka's protocol guide): every request and response is one frame, a big-endian
int32 size followed by that many bytes. A request's bytes start with its header (v1: int16 api
key, int16 api version, int32 correlation id, nullable int16-length client id; v2, for an API's
flexible versions, adds tagged fields) and then the request body of that API and version. A
response is the header (v0: the correlation id; v1, flexible versions except ApiVersions', adds
tagged fields) and the body. kio's schema classes say which header each version uses.

The api key, version and correlation id sit at fixed offsets in every header version, so
:func:`peek_request` reads them without kio, which lets the listener refuse an unknown API or
version (and answer ApiVersions' v0 fallback) without decoding anything else.

Stateless functions; thread-safe. kio's readers and writers are built once per schema class.
"""

from __future__ import annotations

import functools
import io
import struct
from typing import Any, NamedTuple

from kio.index import load_request_schema
from kio.serial import entity_reader, entity_writer
from kio.serial.errors import DecodeError

SIZE_PREFIX_BYTES = 4
FRAME_SIZE = struct.Struct(">i")  # the big-endian int32 size before every frame
_RESPONSE_KEYS = struct.Struct(">ii")  # a response frame's size, then its header's correlation id
_REQUEST_KEYS = struct.Struct(">hhi")  # api key, api version, correlation id: the first 8 bytes of every request header


class FrameError(Exception):
    """A frame the listener cannot read; the connection is closed (Kafka answers nothing to such bytes)."""

    retriable = False


class FrameSizeError(FrameError):
    """A size prefix that is negative or larger than the listener accepts (``socket.request.max.bytes``)."""

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(f"request frame of {size} bytes refused: the most this listener accepts is {limit} (socket.request.max.bytes)")
        self.size = size
        self.limit = limit


class MalformedRequestError(FrameError):
    """A frame whose header or body does not decode as the API and version it names."""


# NamedTuples rather than frozen dataclasses: built once or twice per request, and a frozen
# dataclass's __init__ (object.__setattr__ per field) was about 3 % of the broker's time on small requests.


class RequestKeys(NamedTuple):
    """The fixed leading fields of a request header."""

    api_key: int
    api_version: int
    correlation_id: int


class DecodedRequest(NamedTuple):
    """One request frame decoded: its header fields and the kio request object."""

    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    body: Any


def frame_size(prefix: bytes, limit: int) -> int:
    """The size a 4-byte prefix announces; FrameSizeError when negative or above ``limit`` (checked before any allocation)."""
    (size,) = FRAME_SIZE.unpack(prefix)
    if size < 0 or size > limit:
        raise FrameSizeError(size, limit)
    return int(size)


def peek_request(frame: bytes) -> RequestKeys:
    """The api key, version and correlation id of a request frame; MalformedRequestError when it is too short."""
    if len(frame) < _REQUEST_KEYS.size:
        raise MalformedRequestError(f"a request frame of {len(frame)} bytes is shorter than a request header ({_REQUEST_KEYS.size} bytes at least)")
    api_key, api_version, correlation_id = _REQUEST_KEYS.unpack_from(frame)
    return RequestKeys(api_key, api_version, correlation_id)


# kio's reader and writer of each schema class, built on first use (a dict store is atomic under the GIL; a race builds one twice).
_readers: dict[object, Any] = {}
_writers: dict[object, Any] = {}


def _reader(schema: Any) -> Any:
    reader = _readers.get(schema)
    if reader is None:
        reader = _readers[schema] = entity_reader(schema)
    return reader


def _writer(schema: Any) -> Any:
    writer = _writers.get(schema)
    if writer is None:
        writer = _writers[schema] = entity_writer(schema)
    return writer


# Cached: kio resolves a schema through its index and pkgutil.resolve_name on every call, which
# the broker's profile showed at about 3 % of its time under one-record Produce requests.
@functools.cache
def _request_schema(api_key: int, api_version: int) -> Any:
    return load_request_schema(api_key, api_version)


def decode_request(frame: bytes, keys: RequestKeys) -> DecodedRequest:
    """Decode a request frame of an API and version kio knows (the caller checked them with :func:`peek_request`).

    Raises MalformedRequestError when the bytes do not decode. Bytes after the body are ignored,
    as Kafka's brokers do.
    """
    schema = _request_schema(keys.api_key, keys.api_version)
    try:
        header, header_size = _reader(schema.__header_schema__)(frame, 0)
        body, _ = _reader(schema)(frame, header_size)
    except (DecodeError, ValueError, IndexError, OverflowError) as error:
        raise MalformedRequestError(f"api key {keys.api_key} v{keys.api_version} (correlation id {keys.correlation_id}) does not decode: {error}") from None
    return DecodedRequest(keys.api_key, keys.api_version, keys.correlation_id, header.client_id, body)


def encode_response(correlation_id: int, response: Any) -> bytes:
    """The whole response frame (size prefix, header of the version's kind, body) of a kio response object."""
    header_schema = type(response).__header_schema__
    buffer = io.BytesIO()
    buffer.write(b"\x00\x00\x00\x00")
    _writer(header_schema)(buffer, header_schema(correlation_id=correlation_id))
    _writer(type(response))(buffer, response)
    frame = buffer.getbuffer()
    FRAME_SIZE.pack_into(frame, 0, len(frame) - SIZE_PREFIX_BYTES)
    del frame  # release the export so the buffer's bytes can be taken
    return buffer.getvalue()


_NO_TAGGED_FIELDS = b"\x00"  # response header v1's empty tagged-field section


def encode_response_body(correlation_id: int, body: bytes, *, flexible_header: bool) -> bytes:
    """The whole response frame of a body encoded without kio: size prefix, header v0 (the
    correlation id) or v1 (and an empty tagged-field section), body."""
    header = _RESPONSE_KEYS.pack(SIZE_PREFIX_BYTES + len(body) + (1 if flexible_header else 0), correlation_id)
    return header + _NO_TAGGED_FIELDS + body if flexible_header else header + body


def encode_raw(payload: bytes) -> bytes:
    """A bare size-prefixed frame (the SASL tokens of a SaslHandshake v0 exchange, which have no header)."""
    return FRAME_SIZE.pack(len(payload)) + payload


def encode_request(correlation_id: int, request: Any, client_id: str | None = "weir") -> bytes:
    """The whole request frame of a kio request object (for tests and tools that speak to a listener)."""
    header_schema = type(request).__header_schema__
    buffer = io.BytesIO()
    header = header_schema(
        request_api_key=type(request).__api_key__, request_api_version=type(request).__version__, correlation_id=correlation_id, client_id=client_id
    )
    _writer(header_schema)(buffer, header)
    _writer(type(request))(buffer, request)
    return encode_raw(buffer.getvalue())


def decode_response(frame: bytes, response_schema: Any) -> tuple[int, Any]:
    """The correlation id and kio response object of a response frame without its size prefix (for tests and tools)."""
    header, header_size = _reader(response_schema.__header_schema__)(frame, 0)
    body, _ = _reader(response_schema)(frame, header_size)
    return int(header.correlation_id), body

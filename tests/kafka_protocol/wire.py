"""A raw Kafka-protocol client for listener tests: frames over a plain socket, encoded and decoded with kio.

Every wait is bounded by the socket's timeout; :func:`closed_by_peer` tells a closed connection
from one that merely has nothing to say.
"""

from __future__ import annotations

import socket
import struct
from typing import Any

from kio.index import load_response_schema

from broker_nodes.kafka_protocol.framing import decode_response, encode_request

TIMEOUT_SECONDS = 10.0


def connect(port: int, host: str = "127.0.0.1", timeout: float = TIMEOUT_SECONDS) -> socket.socket:
    connection = socket.create_connection((host, port), timeout=timeout)
    connection.settimeout(timeout)
    return connection


def read_exactly(connection: socket.socket, size: int) -> bytes:
    data = bytearray()
    while len(data) < size:
        chunk = connection.recv(size - len(data))
        if not chunk:
            raise ConnectionError(f"the broker closed the connection after {len(data)} of {size} bytes")
        data += chunk
    return bytes(data)


def read_frame(connection: socket.socket) -> bytes:
    (size,) = struct.unpack(">i", read_exactly(connection, 4))
    return read_exactly(connection, size)


def call(connection: socket.socket, request: Any, correlation_id: int = 1) -> Any:
    """Send a kio request and return the kio response of the same version (its correlation id checked)."""
    connection.sendall(encode_request(correlation_id, request))
    response_schema = load_response_schema(type(request).__api_key__, type(request).__version__)
    answered_id, response = decode_response(read_frame(connection), response_schema)
    assert answered_id == correlation_id
    return response


def raw_request(api_key: int, version: int, correlation_id: int, body: bytes = b"", client_id: bytes = b"raw") -> bytes:
    """A request frame with a v1 header and any body bytes (for versions and keys kio cannot encode)."""
    payload = struct.pack(">hhih", api_key, version, correlation_id, len(client_id)) + client_id + body
    return struct.pack(">i", len(payload)) + payload


def closed_by_peer(connection: socket.socket) -> bool:
    """Whether the broker closed the connection (EOF or reset) within the socket's timeout; False when it is still open."""
    try:
        return connection.recv(1) == b""
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False

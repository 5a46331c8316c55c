"""weir.schema_registry's pure parts: Confluent's framing and Protobuf message indexes (checked
against confluent-kafka's own encoder), the client's configuration, its caches, and its HTTP
retries and failover against a tiny HTTP server in a thread of this process."""

from __future__ import annotations

import http.server
import io
import json
import socket
import sys
import threading
from collections.abc import Iterator

import pytest
from confluent_kafka.schema_registry._sync.protobuf import ProtobufSerializer as ConfluentProtobufSerializer
from confluent_kafka.schema_registry.common.protobuf import _create_index_array
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from weir.schema_registry import SchemaRegistryClient, SchemaRegistryError
from weir.schema_registry.cache import LruCache
from weir.schema_registry.conf import parse_client_conf
from weir.schema_registry.protobuf import message_indexes
from weir.schema_registry.serde import SERIALIZER_DEFAULTS, take_conf
from weir.schema_registry.wire import decode_message_indexes, encode_message_indexes, frame, unframe
from weir.serialization import SerializationError


@pytest.mark.parametrize("indexes", [[0], [1], [0, 2], [3, 1, 4], [70, 0, 200]])
def test_message_indexes_are_confluent_kafkas_bytes_and_read_back(indexes: list[int]) -> None:
    theirs = io.BytesIO()
    ConfluentProtobufSerializer._encode_varints(theirs, indexes)
    assert encode_message_indexes(indexes) == theirs.getvalue()
    read, rest = decode_message_indexes(memoryview(encode_message_indexes(indexes) + b"payload"))
    assert (read, bytes(rest)) == (indexes, b"payload")


def test_a_nested_messages_indexes_are_its_path_in_the_file() -> None:
    file = descriptor_pb2.FileDescriptorProto(name="acme/nested.proto", package="acme", syntax="proto3")
    file.message_type.add(name="First")
    outer = file.message_type.add(name="Outer")
    outer.nested_type.add(name="A")
    outer.nested_type.add(name="B").nested_type.add(name="Deep")
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    for name, expected in (("acme.First", [0]), ("acme.Outer", [1]), ("acme.Outer.B", [1, 1]), ("acme.Outer.B.Deep", [1, 1, 0])):
        descriptor = message_factory.GetMessageClass(pool.FindMessageTypeByName(name)).DESCRIPTOR
        assert message_indexes(descriptor) == expected == _create_index_array(descriptor)


def test_framing_is_magic_byte_zero_and_a_big_endian_id() -> None:
    assert frame(258, b"x") == b"\x00\x00\x00\x01\x02x"
    schema_id, rest = unframe(frame(2**32 - 1, b"abc"))
    assert (schema_id, bytes(rest)) == (2**32 - 1, b"abc")
    with pytest.raises(SerializationError, match="Unexpected magic byte 7"):
        unframe(b"\x07\x00\x00\x00\x01")
    with pytest.raises(SerializationError, match="total data size is 3 bytes"):
        unframe(b"\x00\x00\x01")
    with pytest.raises(SerializationError, match="end before their last varint"):
        decode_message_indexes(memoryview(b"\x04\x02"))
    with pytest.raises(SerializationError, match="at most 1024"):
        decode_message_indexes(memoryview(encode_message_indexes([0] * 2000)))


def test_the_configuration_is_read_as_confluent_kafka_reads_it() -> None:
    conf = parse_client_conf({"url": "http://key:s%3Acret@127.0.0.1:8000/schema-registry/, http://other:9/sr"})
    assert conf.base_urls == ("http://127.0.0.1:8000/schema-registry", "http://other:9/sr")
    assert conf.auth == ("key", "s:cret")
    conf = parse_client_conf({"url": "http://h/sr", "basic.auth.credentials.source": "USER_INFO", "basic.auth.user.info": "k:a:b", "cache.capacity": 5})
    assert (conf.auth, conf.cache_capacity, conf.max_retries, conf.timeout) == (("k", "a:b"), 5, 3, 30.0)
    for bad, message in (
        ({}, "Missing required configuration property url"),
        ({"url": "ftp://h"}, "Invalid url"),
        ({"url": "http://h", "colour": 1}, "Unrecognized properties: colour"),
        ({"url": "http://h", "basic.auth.user.info": "nocolon"}, "basic.auth.user.info must be in the form"),
        ({"url": "http://k:s@h", "basic.auth.user.info": "k:s"}, "userinfo credentials in the URL"),
        ({"url": "http://h", "basic.auth.credentials.source": "URL"}, "needs the credentials in the url"),
        ({"url": "http://h", "basic.auth.credentials.source": "SASL_INHERIT"}, "must be one of USER_INFO, URL"),
        ({"url": "http://h", "ssl.key.location": "k.pem"}, "ssl.certificate.location required"),
        ({"url": "http://h", "cache.capacity": -1}, "cache.capacity must not be negative"),
    ):
        with pytest.raises(ValueError, match=message):
            parse_client_conf(bad)
    with pytest.raises(TypeError, match="timeout must be a number"):
        parse_client_conf({"url": "http://h", "timeout": "5"})


def test_serializer_configuration_refuses_unknown_keys_and_contradictions() -> None:
    assert take_conf({"normalize.schemas": True}, SERIALIZER_DEFAULTS)["normalize.schemas"] is True
    with pytest.raises(ValueError, match="Unrecognized properties: auto.register.schema"):
        take_conf({"auto.register.schema": False}, SERIALIZER_DEFAULTS)
    with pytest.raises(ValueError, match="cannot enable both use.latest.version and auto.register.schemas"):
        take_conf({"use.latest.version": True}, SERIALIZER_DEFAULTS)
    with pytest.raises(ValueError, match="auto.register.schemas must be a boolean"):
        take_conf({"auto.register.schemas": "false"}, SERIALIZER_DEFAULTS)
    with pytest.raises(ValueError, match="subject.name.strategy must be callable"):
        take_conf({"subject.name.strategy": "topic"}, SERIALIZER_DEFAULTS)


def test_the_cache_evicts_the_least_recently_used_and_expires_by_its_clock() -> None:
    now = [0.0]
    cache: LruCache[str, int] = LruCache(2, ttl=10, clock=lambda: now[0])
    cache.set("a", 1)
    cache.set("b", 2)
    assert cache.get("a") == 1  # "b" is now the least recently used
    cache.set("c", 3)
    assert (cache.get("a"), cache.get("b"), cache.get("c")) == (1, None, 3)
    now[0] = 10.0
    assert cache.get("a") is None and len(cache) == 1
    cache.discard_where(lambda key: key == "c")
    assert len(cache) == 0
    unbounded_in_time: LruCache[str, int] = LruCache(0)
    unbounded_in_time.set("a", 1)
    assert unbounded_in_time.get("a") is None  # capacity 0 keeps nothing


def test_a_missing_format_library_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    from weir.schema_registry.avro import AvroSerializer
    from weir.schema_registry.json_schema import JSONSerializer

    monkeypatch.setitem(sys.modules, "fastavro", None)
    monkeypatch.setitem(sys.modules, "jsonschema", None)
    client = SchemaRegistryClient({"url": "http://127.0.0.1:9"})
    with pytest.raises(ImportError, match=r"pip install 'weir\[avro\]'"):
        AvroSerializer(client, '"string"')
    with pytest.raises(ImportError, match=r"pip install 'weir\[json\]'"):
        JSONSerializer('{"type": "object"}', client)


class _Scripted(http.server.BaseHTTPRequestHandler):
    """Answers each request with the next (status, body) of the server's script."""

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        status, body = self.server.script.pop(0)  # type: ignore[attr-defined]
        self.server.seen.append((self.path, self.headers.get("Authorization")))  # type: ignore[attr-defined]
        payload = body.encode() if isinstance(body, str) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass


@pytest.fixture
def scripted_server() -> Iterator[http.server.HTTPServer]:
    server = http.server.HTTPServer(("127.0.0.1", 0), _Scripted)
    server.script = []  # type: ignore[attr-defined]
    server.seen = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_retries_back_off_then_fail_over_and_errors_carry_the_registrys_code(scripted_server: http.server.HTTPServer) -> None:
    port = scripted_server.server_address[1]
    waits: list[float] = []
    client = SchemaRegistryClient(
        {
            "url": f"http://127.0.0.1:{_closed_port()}/sr,http://127.0.0.1:{port}/sr",
            "basic.auth.user.info": "key:secret",
            "retries.wait.ms": 100,
            "retries.max.wait.ms": 150,
        },
        sleep=waits.append,
    )
    scripted_server.script.extend([(503, "busy"), (429, "slow down"), (200, ["orders-value"])])  # type: ignore[attr-defined]
    assert client.get_subjects() == ["orders-value"]
    assert waits == [0.1, 0.15]  # doubled, capped by retries.max.wait.ms
    path, authorization = scripted_server.seen[0]  # type: ignore[attr-defined]
    assert path.startswith("/sr/subjects?") and authorization == "Basic a2V5OnNlY3JldA=="

    scripted_server.script.append((404, {"error_code": 40403, "message": "Schema 5 not found"}))  # type: ignore[attr-defined]
    with pytest.raises(SchemaRegistryError) as missing:
        client.get_schema(5)
    assert (missing.value.http_status_code, missing.value.error_code, missing.value.error_message) == (404, 40403, "Schema 5 not found")
    scripted_server.script.append((502, "<html>bad gateway</html>"))  # type: ignore[attr-defined]
    client_without_retries = SchemaRegistryClient({"url": f"http://127.0.0.1:{port}", "max.retries": 0})
    with pytest.raises(SchemaRegistryError, match="bad gateway") as gateway:
        client_without_retries.get_schema_types()
    assert (gateway.value.http_status_code, gateway.value.error_code) == (502, -1)
    with pytest.raises(SchemaRegistryError, match="could not be reached") as unreachable:
        SchemaRegistryClient({"url": f"http://127.0.0.1:{_closed_port()}"}).get_subjects()
    assert unreachable.value.http_status_code == -1

"""Every partitioner places keys where librdkafka's own places them (confluent-kafka from PyPI).

No Weir broker: librdkafka's in-process mock cluster (created through librdkafka's C API,
which names its topics' partition counts) answers librdkafka producers, one per partitioner,
and their delivery reports say which partition librdkafka chose for each key. The mock
cluster is one thread of this process, shared by the module and destroyed after it.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from collections.abc import Iterator
from pathlib import Path

import pytest

from weir.partitioner import Partitioner

confluent_kafka = pytest.importorskip("confluent_kafka")

PARTITION_COUNTS = (1, 3, 7, 16)
KEYS = [b"", b"a", b"21", b"foobar", b"\x00\xff\x80", "ключ-μ".encode(), b"a-little-bit-longer-string"] + [f"user-{n}".encode() for n in range(40)]
# Partitioners whose choice for a null key is a hash (the *_random ones and random pick at random).
NULL_KEY_HASHED = ("consistent", "murmur2", "fnv1a")


def _librdkafka_library() -> ctypes.CDLL:
    """The librdkafka confluent-kafka's wheel bundles (its mock cluster API is not exposed in Python)."""
    libs = Path(confluent_kafka.__file__).parent.parent / "confluent_kafka.libs"
    found = sorted(libs.glob("librdkafka*.so*")) if libs.is_dir() else []
    path = str(found[0]) if found else ctypes.util.find_library("rdkafka")
    if path is None:
        pytest.skip("librdkafka's shared library is not found")
    library = ctypes.CDLL(path)
    library.rd_kafka_conf_new.restype = ctypes.c_void_p
    library.rd_kafka_new.restype = ctypes.c_void_p
    library.rd_kafka_new.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]
    library.rd_kafka_destroy.argtypes = [ctypes.c_void_p]
    library.rd_kafka_mock_cluster_new.restype = ctypes.c_void_p
    library.rd_kafka_mock_cluster_new.argtypes = [ctypes.c_void_p, ctypes.c_int]
    library.rd_kafka_mock_cluster_bootstraps.restype = ctypes.c_char_p
    library.rd_kafka_mock_cluster_bootstraps.argtypes = [ctypes.c_void_p]
    library.rd_kafka_mock_topic_create.restype = ctypes.c_int
    library.rd_kafka_mock_topic_create.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_int]
    library.rd_kafka_mock_cluster_destroy.argtypes = [ctypes.c_void_p]
    return library


@pytest.fixture(scope="module")
def mock_cluster() -> Iterator[str]:
    """The bootstrap address of a librdkafka mock cluster with one topic per partition count."""
    library = _librdkafka_library()
    error = ctypes.create_string_buffer(512)
    handle = library.rd_kafka_new(0, library.rd_kafka_conf_new(), error, len(error))  # 0: RD_KAFKA_PRODUCER
    assert handle, error.value
    cluster = library.rd_kafka_mock_cluster_new(handle, 1)
    assert cluster
    for count in PARTITION_COUNTS:
        assert library.rd_kafka_mock_topic_create(cluster, f"p{count}".encode(), count, 1) == 0
    yield library.rd_kafka_mock_cluster_bootstraps(cluster).decode()
    library.rd_kafka_mock_cluster_destroy(cluster)
    library.rd_kafka_destroy(handle)


def _librdkafka_partitions(bootstrap: str, partitioner: str, topic: str, keys: list[bytes | None]) -> list[int]:
    chosen: dict[int, int] = {}
    producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "partitioner": partitioner, "linger.ms": 0})
    for index, key in enumerate(keys):
        producer.produce(topic, b"v", key=key, on_delivery=lambda err, msg, index=index: chosen.__setitem__(index, -1 if err else msg.partition()))
    assert producer.flush(10) == 0
    return [chosen[index] for index in range(len(keys))]


@pytest.mark.parametrize("name", ["consistent_random", "consistent", "murmur2_random", "murmur2", "fnv1a_random", "fnv1a"])
def test_keys_land_where_librdkafka_puts_them(mock_cluster: str, name: str) -> None:
    keys: list[bytes | None] = [key for key in KEYS if key or name != "consistent_random"]  # an empty key is random there
    if name in NULL_KEY_HASHED:
        keys.append(None)
    partitioner = Partitioner(name)
    for count in PARTITION_COUNTS:
        expected = _librdkafka_partitions(mock_cluster, name, f"p{count}", keys)
        assert [partitioner.partition(f"p{count}", key, count) for key in keys] == expected, (name, count)


def test_default_partitioner_is_librdkafkas(mock_cluster: str) -> None:
    from weir.config import PRODUCER, ClientConfig

    name = ClientConfig({"bootstrap.servers": "127.0.0.1:1"}, PRODUCER)["partitioner"]
    keys: list[bytes | None] = [key for key in KEYS if key]
    librdkafka_default = confluent_kafka.Producer({"bootstrap.servers": mock_cluster})
    chosen: dict[int, int] = {}
    for index, key in enumerate(keys):
        librdkafka_default.produce("p7", b"v", key=key, on_delivery=lambda err, msg, index=index: chosen.__setitem__(index, msg.partition()))
    assert librdkafka_default.flush(10) == 0
    assert [Partitioner(name).partition("p7", key, 7) for key in keys] == [chosen[index] for index in range(len(keys))]

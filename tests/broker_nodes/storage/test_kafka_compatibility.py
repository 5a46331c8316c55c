"""A third-party Kafka parser (kafka-python) reads our segment files."""

from __future__ import annotations

from kafka.record.memory_records import MemoryRecords

from tests.broker_nodes.storage.conftest import START_MS, make_batch
from weir.records import COMPRESSION_GZIP, COMPRESSION_LZ4, COMPRESSION_NONE, COMPRESSION_SNAPPY, COMPRESSION_ZSTD

CODECS = [COMPRESSION_NONE, COMPRESSION_GZIP, COMPRESSION_SNAPPY, COMPRESSION_LZ4, COMPRESSION_ZSTD]


def test_kafka_python_reads_every_record_of_a_segment_file(open_log) -> None:
    log = open_log()
    expected = []
    for index, codec in enumerate(CODECS):
        keys = [b"key-%d-%d" % (index, number) for number in range(3)]
        values = [b"value-%d-%d" % (index, number) * 5 for number in range(3)]
        log.append_as_leader(make_batch(values, keys=keys, codec=codec, timestamp=START_MS + index), 4)
        expected.extend((log.log_end_offset - 3 + number, keys[number], values[number], START_MS + index) for number in range(3))
    log.flush()
    data = log.segments[0].log_path.read_bytes()
    records = MemoryRecords(data)
    seen = []
    codecs = []
    while records.has_next():
        batch = records.next_batch()
        assert batch.validate_crc()
        codecs.append(batch.compression_type)
        for record in batch:
            seen.append((record.offset, record.key, record.value, record.timestamp))
    assert seen == expected
    assert codecs == CODECS

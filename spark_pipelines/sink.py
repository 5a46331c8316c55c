"""The Weir sink: ``df.write.format("weir")`` and ``df.writeStream.format("weir")``, as Spark's Kafka sink.

Usage::

    df.selectExpr("CAST(id AS STRING) AS key", "payload AS value")
        .write.format("weir")
        .option("bootstrap.servers", "127.0.0.1:9092")
        .option("sasl.username", key).option("sasl.password", secret)
        .option("topic", "orders")
        .mode("append").save()

Columns, as Spark's Kafka sink reads them: ``value`` (binary or string, required; null writes
a tombstone), ``key`` (binary or string, optional), ``topic`` (string; the ``topic`` option,
when given, wins over it), ``partition`` (int, optional: else the producer's partitioner) and
``headers`` (``array<struct<key:string,value:binary>>``, optional). Other columns are refused.

Every task writes its rows with one idempotent producer (``enable.idempotence``: a retried
send is not stored twice), waits for every acknowledgement, and fails with
:class:`WeirSinkError` naming the topic and the broker's error when one is refused. The
connection options are the source's (``bootstrap.servers``, ``sasl.username`` /
``sasl.password``, ``weir.internal.token``, ``ssl.ca.location``, any ``kafka.<key>`` producer
setting).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from pyspark.sql import Row
from pyspark.sql.datasource import DataSourceStreamWriter, DataSourceWriter, WriterCommitMessage
from pyspark.sql.types import StructType

from spark_pipelines.source_errors import InvalidOptionError, WeirSourceError
from weir.config import PRODUCER, ClientConfig
from weir.errors import KafkaException

CLIENT_ID = "weir-spark-sink"
KAFKA_PREFIX = "kafka."
CONNECTION_OPTIONS = frozenset({"bootstrap.servers", "sasl.username", "sasl.password", "weir.internal.token", "ssl.ca.location"})
SINK_COLUMNS = ("key", "value", "topic", "partition", "headers")
FLUSH_TIMEOUT_SECONDS = 60.0


class WeirSinkError(WeirSourceError):
    """Records a task wrote were refused or not acknowledged in time."""

    def __init__(self, topic: str, detail: str) -> None:
        super().__init__(f"writing to topic {topic!r} failed: {detail}")
        self.topic = topic
        self.detail = detail


@dataclass(frozen=True)
class SinkOptions:
    config: dict[str, Any]
    topic: str | None


def parse_sink_options(options: Mapping[str, str], schema: StructType) -> SinkOptions:
    """The producer configuration and default topic of the options; InvalidOptionError naming
    the option (or column) that is wrong."""
    lowered = {str(key).lower(): str(value) for key, value in options.items()}
    config: dict[str, Any] = {"client.id": CLIENT_ID, "enable.idempotence": True}
    for key, value in lowered.items():
        if key.startswith(KAFKA_PREFIX):
            config[key[len(KAFKA_PREFIX) :]] = value
        elif key in CONNECTION_OPTIONS:
            config[key] = value
    if not config.get("bootstrap.servers"):
        raise InvalidOptionError("bootstrap.servers", "must be set (host:port of one or more brokers)")
    if config.get("ssl.ca.location") and "security.protocol" not in config:
        config["security.protocol"] = "sasl_ssl" if config.get("sasl.username") else "ssl"
    try:
        ClientConfig(config, PRODUCER)
    except KafkaException as error:
        raise InvalidOptionError("kafka.*", error.error.str()) from None
    names = [field.name.lower() for field in schema.fields]
    unknown = sorted(set(names) - set(SINK_COLUMNS))
    if unknown:
        raise InvalidOptionError("columns", f"the sink writes columns {', '.join(SINK_COLUMNS)}; also got {', '.join(unknown)}")
    if "value" not in names:
        raise InvalidOptionError("columns", "a 'value' column is required")
    topic = lowered.get("topic") or None
    if topic is None and "topic" not in names:
        raise InvalidOptionError("topic", "give the 'topic' option or a 'topic' column")
    return SinkOptions(config, topic)


def _bytes(value: object) -> bytes | None:
    if value is None or isinstance(value, bytes):
        return value
    if isinstance(value, bytearray):
        return bytes(value)
    return str(value).encode()


def write_rows(options: SinkOptions, rows: Iterator[Row]) -> WriterCommitMessage:
    """Produce every row with one idempotent producer and wait for all acknowledgements."""
    from weir import Producer  # imported in the task: the SDK starts no threads on the driver

    producer = Producer(options.config)
    failures: list[tuple[str, str]] = []
    topic = options.topic or ""
    try:
        for row in rows:
            values = row.asDict()
            topic = options.topic or values.get("topic") or ""
            if not topic:
                raise WeirSinkError("", "a row has no topic (null 'topic' column and no 'topic' option)")
            extra: dict[str, Any] = {}
            if values.get("partition") is not None:
                extra["partition"] = int(values["partition"])
            if values.get("headers"):
                extra["headers"] = [(header["key"], _bytes(header["value"])) for header in values["headers"]]
            sent_topic = topic
            while True:
                try:
                    producer.produce(
                        topic,
                        value=_bytes(values.get("value")),
                        key=_bytes(values.get("key")),
                        on_delivery=lambda error, _message, name=sent_topic: failures.append((name, str(error))) if error else None,
                        **extra,
                    )
                    break
                except BufferError:
                    producer.poll(0.1)
            producer.poll(0)
            if failures:
                break
        remaining = producer.flush(FLUSH_TIMEOUT_SECONDS)
    except KafkaException as error:
        raise WeirSinkError(topic, error.error.str()) from None
    if failures:
        raise WeirSinkError(*failures[0])
    if remaining:
        raise WeirSinkError(topic, f"{remaining} records not acknowledged within {FLUSH_TIMEOUT_SECONDS:.0f} s")
    return WriterCommitMessage()


class WeirBatchWriter(DataSourceWriter):
    def __init__(self, options: SinkOptions) -> None:
        self.options = options

    def write(self, iterator: Iterator[Row]) -> WriterCommitMessage:
        return write_rows(self.options, iterator)


class WeirStreamWriter(DataSourceStreamWriter):
    """Each micro-batch's rows are produced by its tasks; nothing to commit beyond the acknowledgements (at least once)."""

    def __init__(self, options: SinkOptions) -> None:
        self.options = options

    def write(self, iterator: Iterator[Row]) -> WriterCommitMessage:
        return write_rows(self.options, iterator)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:  # noqa: N803 - Spark's name
        pass

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:  # noqa: N803 - Spark's name
        pass

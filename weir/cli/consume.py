"""``weir consume TOPIC``: records to stdout one per line, as kafka-console-consumer prints them.

Without ``--group`` and ``--from-beginning`` reading starts at the end, like Kafka's tool.
With ``--group`` the group's committed offsets are where reading starts, and offsets after
the printed records are committed while reading and at exit. Partitions are assigned
directly (no group membership), so one command reads every partition it is asked for.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Mapping
from typing import Any, TextIO

from weir.cli import connection
from weir.cli.arguments import add_command, add_progress_option
from weir.cli.errors import EXIT_OK, CommandError, UsageError, describe_kafka_error
from weir.cli.output import Streams, progress_bar
from weir.cli.values import non_negative_int, positive_int
from weir.consumer import consume_available
from weir.errors import ErrorCode, KafkaError
from weir.message import OFFSET_BEGINNING, OFFSET_END, OFFSET_STORED, TIMESTAMP_LOG_APPEND_TIME, TIMESTAMP_NOT_AVAILABLE, TopicPartition

# Records asked for per consume() call: enough to amortize the call, few enough that output
# appears promptly when records trickle in.
BATCH_SIZE = 500
# Longest single wait inside consume(), so that --timeout-ms and Ctrl-C are noticed promptly.
POLL_SECONDS = 0.5
# With --group, offsets are committed at least this often while records flow, and at exit.
COMMIT_INTERVAL_SECONDS = 5.0


def register(commands: Any) -> None:
    consume = add_command(commands, "consume", "print records to stdout, one per line", run_consume)
    consume.add_argument("topic", metavar="TOPIC")
    consume.add_argument(
        "--from-beginning", action="store_true", help="start at the earliest offset (with --group: only when the group has no committed offset)"
    )
    consume.add_argument("--max-messages", type=positive_int, metavar="N", help="stop after N records")
    consume.add_argument("--partition", type=non_negative_int, help="read only this partition")
    consume.add_argument("--offset", type=_offset_argument, metavar="O", help="start offset in --partition: a number, 'earliest' or 'latest'")
    consume.add_argument("--group", metavar="G", help="start at and commit offsets of consumer group G")
    consume.add_argument("--timeout-ms", type=positive_int, metavar="T", help="stop after T ms without records")
    consume.add_argument("--print-key", action="store_true")
    consume.add_argument("--print-offset", action="store_true")
    consume.add_argument("--print-partition", action="store_true")
    consume.add_argument("--print-timestamp", action="store_true")
    consume.add_argument("--print-headers", action="store_true")
    consume.add_argument("--key-separator", default="\t", metavar="SEP", help="separator between printed fields (default: tab)")
    add_progress_option(consume)


def _offset_argument(text: str) -> int | str:
    if text in ("earliest", "latest"):
        return text
    return non_negative_int(text)


class RecordPrinter:
    """Formats records as kafka-console-consumer does and writes them to stdout as bytes.

    Fields, in Kafka's order and each only when asked for: timestamp, partition, offset,
    headers, key; then the value. A null key or value prints as ``null``.
    """

    def __init__(self, args: argparse.Namespace, stdout: TextIO) -> None:
        self._args = args
        self._separator: bytes = args.key_separator.encode("utf-8")
        self._text = stdout
        self._binary = getattr(stdout, "buffer", None)

    def format(self, message: Any) -> bytes:
        args = self._args
        fields: list[bytes] = []
        if args.print_timestamp:
            timestamp_type, timestamp = message.timestamp()
            if timestamp_type == TIMESTAMP_NOT_AVAILABLE:
                fields.append(b"NO_TIMESTAMP")
            else:
                name = "LogAppendTime" if timestamp_type == TIMESTAMP_LOG_APPEND_TIME else "CreateTime"
                fields.append(f"{name}:{timestamp}".encode())
        if args.print_partition:
            fields.append(f"Partition:{message.partition()}".encode())
        if args.print_offset:
            fields.append(f"Offset:{message.offset()}".encode())
        if args.print_headers:
            headers = message.headers()
            fields.append(b",".join(name.encode("utf-8") + b":" + _or_null(value) for name, value in headers) if headers else b"NO_HEADERS")
        if args.print_key:
            fields.append(_or_null(message.key()))
        fields.append(_or_null(message.value()))
        return self._separator.join(fields) + b"\n"

    def write(self, lines: list[bytes]) -> None:
        data = b"".join(lines)
        if self._binary is not None:
            # Values are bytes and pass through undecoded; text written earlier goes first.
            self._text.flush()
            self._binary.write(data)
            self._binary.flush()
        else:
            self._text.write(data.decode("utf-8", errors="replace"))
            self._text.flush()


def _or_null(data: bytes | None) -> bytes:
    return b"null" if data is None else bytes(data)


def run_consume(args: argparse.Namespace, streams: Streams, environ: Mapping[str, str]) -> int:
    if args.offset is not None and args.partition is None:
        raise UsageError("--offset needs --partition")
    extra: dict[str, Any] = {"enable.auto.commit": False, "auto.offset.reset": "earliest" if args.from_beginning else "latest"}
    if args.group:
        extra["group.id"] = args.group
    with connection.consumer(args, environ, extra) as consumer:
        topic = connection.topic_metadata(consumer, args, args.topic)
        connection.check_partition(topic, args.partition)
        start = _start_position(args)
        partitions = [args.partition] if args.partition is not None else sorted(topic.partitions)
        consumer.assign([TopicPartition(args.topic, partition, start) for partition in partitions])
        with progress_bar(args.progress, streams, f"consuming {args.topic}", args.max_messages, "records", writes_stdout=True) as progress:
            printed = _consume_until_done(consumer, args, streams, progress)
    streams.stderr.write(f"Processed a total of {printed} messages\n")
    return EXIT_OK


def _start_position(args: argparse.Namespace) -> int:
    """The offset, or special offset, that reading starts at in every assigned partition."""
    if args.offset == "earliest":
        return OFFSET_BEGINNING
    if args.offset == "latest":
        return OFFSET_END
    if args.offset is not None:
        offset: int = args.offset  # a number: argparse's type for --offset turned anything else away
        return offset
    if args.group:
        # The group's committed offset; auto.offset.reset applies where there is none.
        return OFFSET_STORED
    return OFFSET_BEGINNING if args.from_beginning else OFFSET_END


def _consume_until_done(consumer: Any, args: argparse.Namespace, streams: Streams, progress: Any) -> int:
    """Print records until --max-messages, --timeout-ms of silence, or Ctrl-C; return the count."""
    printer = RecordPrinter(args, streams.stdout)
    idle_limit = args.timeout_ms / 1000 if args.timeout_ms is not None else None
    printed = 0
    committer = _OffsetCommitter(consumer, args.topic) if args.group else None
    last_record_at = time.monotonic()
    try:
        while args.max_messages is None or printed < args.max_messages:
            wanted = BATCH_SIZE if args.max_messages is None else min(BATCH_SIZE, args.max_messages - printed)
            wait = POLL_SECONDS if idle_limit is None else max(0.0, min(POLL_SECONDS, last_record_at + idle_limit - time.monotonic()))
            lines = []
            for message in consume_available(consumer, wanted, wait):
                error = message.error()
                if error is not None:
                    _handle_error(streams, error)
                    continue
                lines.append(printer.format(message))
                partition, offset = message.partition(), message.offset()
                if committer is not None and partition is not None and offset is not None:  # a record (no error) has both
                    committer.printed(partition, offset)
            now = time.monotonic()
            if lines:
                printer.write(lines)
                printed += len(lines)
                progress.advance(len(lines))
                last_record_at = now
            elif idle_limit is not None and now - last_record_at >= idle_limit:
                break
            if committer is not None:
                committer.commit_if_due(now)
    except KeyboardInterrupt:
        # Ctrl-C is how a console consumer is normally stopped: finish cleanly.
        pass
    if committer is not None:
        committer.commit()
    return printed


def _handle_error(streams: Streams, error: KafkaError) -> None:
    if error.code() == ErrorCode._PARTITION_EOF:
        return
    if error.retriable():
        streams.stderr.write(f"weir: warning: {describe_kafka_error(error)}; retrying\n")
        return
    raise CommandError(describe_kafka_error(error))


class _OffsetCommitter:
    """Commits, per partition, the offset after the last printed record. Not thread-safe."""

    def __init__(self, consumer: Any, topic: str) -> None:
        self._consumer = consumer
        self._topic = topic
        self._next_offsets: dict[int, int] = {}
        self._committed: dict[int, int] = {}
        self._last_commit_at = time.monotonic()

    def printed(self, partition: int, offset: int) -> None:
        self._next_offsets[partition] = offset + 1

    def commit_if_due(self, now: float) -> None:
        if now - self._last_commit_at >= COMMIT_INTERVAL_SECONDS:
            self.commit()
            self._last_commit_at = now

    def commit(self) -> None:
        pending = {partition: offset for partition, offset in self._next_offsets.items() if self._committed.get(partition) != offset}
        if not pending:
            return
        offsets = [TopicPartition(self._topic, partition, offset) for partition, offset in sorted(pending.items())]
        self._consumer.commit(offsets=offsets, asynchronous=False)
        self._committed.update(pending)

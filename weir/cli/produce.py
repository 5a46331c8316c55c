"""``weir produce TOPIC``: one record per line of stdin, counts of delivered and failed on stderr."""

from __future__ import annotations

import argparse
import os
import stat
import time
from collections import Counter
from collections.abc import Iterator, Mapping
from typing import Any, BinaryIO, TextIO

from weir.cli import connection
from weir.cli.arguments import add_command, add_progress_option
from weir.cli.errors import EXIT_FAILURE, EXIT_INTERRUPTED, EXIT_OK, CommandError, UsageError, describe_kafka_error
from weir.cli.output import Streams, progress_bar
from weir.cli.values import non_negative_int, parse_pair, positive_int
from weir.errors import KafkaError, KafkaException
from weir.producer import Producer

# How long produce() may keep refusing records for a full buffer before the command gives up.
BUFFER_FULL_WAIT_SECONDS = 60.0
# How many distinct delivery errors are listed at the end.
MAX_LISTED_ERRORS = 5
# acks values that are not "all": asking for them means not asking for idempotence.
_ACKS_WITHOUT_IDEMPOTENCE = ("0", "1")

Headers = list[tuple[str, bytes]]


def register(commands: Any) -> None:
    produce = add_command(commands, "produce", "produce one record per line of stdin", run_produce)
    produce.add_argument("topic", metavar="TOPIC")
    produce.add_argument("--key-separator", metavar="SEP", help="split each line at the first SEP into key and value")
    produce.add_argument("--partition", type=non_negative_int, help="send every record to this partition")
    produce.add_argument("--acks", choices=["0", "1", "all", "-1"], help="acknowledgements to wait for (default all)")
    produce.add_argument("--compression-type", choices=["none", "gzip", "snappy", "lz4", "zstd"])
    produce.add_argument("--header", action="append", default=[], metavar="KEY=VALUE", help="header added to every record; repeatable")
    produce.add_argument("--linger-ms", type=non_negative_int)
    produce.add_argument("--batch-size", type=positive_int, metavar="BYTES")
    add_progress_option(produce)


class DeliveryTally:
    """Counts delivery reports; remembers how often each distinct error happened."""

    def __init__(self) -> None:
        self.delivered = 0
        self.failed = 0
        self.errors: Counter[str] = Counter()

    def on_delivery(self, error: KafkaError | None, message: Any) -> None:
        if error is None:
            self.delivered += 1
        else:
            self.record_failure(describe_kafka_error(error))

    def record_failure(self, description: str, count: int = 1) -> None:
        self.failed += count
        self.errors[description] += count

    def report(self, stderr: TextIO) -> None:
        stderr.write(f"{self.delivered} records delivered, {self.failed} failed.\n")
        for description, count in self.errors.most_common(MAX_LISTED_ERRORS):
            stderr.write(f"  {count} x {description}\n")
        hidden = len(self.errors) - MAX_LISTED_ERRORS
        if hidden > 0:
            stderr.write(f"  ... and {hidden} other errors\n")
        stderr.flush()


def input_lines(stdin: TextIO | BinaryIO) -> Iterator[bytes]:
    """Lines of stdin as bytes without their line ending; bytes pass through undecoded."""
    source = getattr(stdin, "buffer", stdin)
    for line in source:
        if isinstance(line, str):
            line = line.encode("utf-8")
        if line.endswith(b"\r\n"):
            line = line[:-2]
        elif line.endswith(b"\n"):
            line = line[:-1]
        yield line


def _input_size(stdin: TextIO | BinaryIO) -> int | None:
    """Byte size of stdin when it is a regular file, for a progress bar with an end."""
    try:
        status = os.fstat(stdin.fileno())
    except (AttributeError, OSError, ValueError):
        return None
    return status.st_size if stat.S_ISREG(status.st_mode) else None


def producer_config(args: argparse.Namespace, environ: Mapping[str, str]) -> dict[str, Any]:
    config = connection.client_config(args, environ)
    for option, key in (("acks", "acks"), ("compression_type", "compression.type"), ("linger_ms", "linger.ms"), ("batch_size", "batch.size")):
        if getattr(args, option) is not None:
            config[key] = getattr(args, option)
    if str(config.get("acks")) in _ACKS_WITHOUT_IDEMPOTENCE:
        # Idempotence requires acks=all. Kafka's own clients turn it off when fewer acks are
        # asked for and enable.idempotence was not set explicitly; so does the CLI.
        config.setdefault("enable.idempotence", False)
    return config


def run_produce(args: argparse.Namespace, streams: Streams, environ: Mapping[str, str]) -> int:
    headers = [(key, value.encode("utf-8")) for key, value in (parse_pair(text, "--header") for text in args.header)]
    separator = args.key_separator.encode("utf-8") if args.key_separator is not None else None
    if separator == b"":
        raise UsageError("--key-separator must not be empty")
    with Producer(producer_config(args, environ)) as producer:
        return _produce_lines(producer, args, streams, separator, headers)


def _produce_lines(producer: Any, args: argparse.Namespace, streams: Streams, separator: bytes | None, headers: Headers) -> int:
    """Produce one record per stdin line; report the counts on stderr; return the exit code."""
    topic = connection.topic_metadata(producer, args, args.topic)
    connection.check_partition(topic, args.partition)
    target = {"partition": args.partition} if args.partition is not None else {}
    tally = DeliveryTally()
    interrupted = False
    with progress_bar(args.progress, streams, f"producing to {args.topic}", _input_size(streams.stdin), "bytes", writes_stdout=False) as progress:
        try:
            for line_number, line in enumerate(input_lines(streams.stdin), start=1):
                key = None
                value = line
                if separator is not None:
                    key, found, value = line.partition(separator)
                    if not found:
                        raise CommandError(f"line {line_number} has no key separator {args.key_separator!r}; stopped there")
                _produce_one(producer, tally, args.topic, key, value, headers or None, target)
                progress.advance(len(line) + 1)
        except KeyboardInterrupt:
            interrupted = True
        finally:
            # However reading ended, the records already handed over are delivered (or
            # fail) before the counts are reported.
            undelivered = producer.flush()
            if undelivered:
                tally.record_failure("not delivered when the flush ended", undelivered)
            tally.report(streams.stderr)
    if interrupted:
        return EXIT_INTERRUPTED
    return EXIT_FAILURE if tally.failed else EXIT_OK


def _produce_one(producer: Any, tally: DeliveryTally, topic: str, key: bytes | None, value: bytes, headers: Headers | None, target: Mapping[str, int]) -> None:
    deadline = time.monotonic() + BUFFER_FULL_WAIT_SECONDS
    while True:
        try:
            producer.produce(topic, value=value, key=key, headers=headers, on_delivery=tally.on_delivery, **target)
            break
        except BufferError:
            # The buffer is full: serving delivery reports frees it, then produce() is retried.
            if time.monotonic() > deadline:
                raise CommandError(f"the producer's buffer stayed full for {BUFFER_FULL_WAIT_SECONDS:.0f} s; is the broker accepting records?") from None
            producer.poll(0.1)
        except KafkaException as error:
            # Refused before sending (a record above message.max.bytes, ...): this record fails.
            tally.record_failure(describe_kafka_error(error.args[0]))
            break
    producer.poll(0)

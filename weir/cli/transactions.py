"""``weir transactions list|describe|abort|find-hanging|abort-hanging``: the operators' transaction tools,
as Kafka's kafka-transactions.sh offers them (KIP-664), through the AdminClient.

``abort ID`` ends a transactional id's ongoing transaction at its coordinator, fencing its
producer (the producer's next call fails PRODUCER_FENCED). ``find-hanging TOPIC`` lists
transactions left open in a topic's partitions that no coordinator will ever end: they hold
the partition's last stable offset back, so read_committed consumers stop there.
``abort-hanging`` writes the ABORT marker that frees such a partition, naming the transaction
by its start offset (as ``find-hanging`` prints it) or by producer id, epoch and coordinator epoch.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from weir.cli import connection
from weir.cli.arguments import add_command, add_output_option
from weir.cli.errors import EXIT_OK, CommandError, UsageError
from weir.cli.output import Streams
from weir.cli.values import non_negative_int
from weir.transaction_admin import HangingTransaction, TransactionDescription

NONE_MARK = "-"
# Kafka's transaction state names, as the coordinator answers them (--state is matched in any case).
STATES = ("Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort", "Dead", "PrepareEpochFence")


def register(commands: Any) -> None:
    transactions = commands.add_parser("transactions", help="list, describe and abort transactions; find and abort hanging ones")
    actions = transactions.add_subparsers(title="transaction commands", metavar="ACTION", required=True)

    listing = add_command(actions, "list", "transactional ids with their producer ids and states, from every broker's coordinator", run_list)
    listing.add_argument("--state", action="append", default=[], metavar="STATE[,STATE...]", help=f"only these states ({', '.join(STATES)}); repeatable")
    listing.add_argument("--producer-id", action="append", default=[], type=non_negative_int, metavar="ID", help="only this producer id; repeatable")
    listing.add_argument("--min-duration-ms", type=non_negative_int, metavar="MS", help="only transactions open at least this long")
    add_output_option(listing)

    describe = add_command(actions, "describe", "state, producer, timeout, start and partitions of a transactional id's transaction", run_describe)
    describe.add_argument("transactional_id", metavar="ID")
    add_output_option(describe)

    abort = add_command(actions, "abort", "abort a transactional id's ongoing transaction at its coordinator (its producer is fenced)", run_abort)
    abort.add_argument("transactional_id", metavar="ID")

    hanging = add_command(actions, "find-hanging", "transactions left open in a topic's partitions that no coordinator will end", run_find_hanging)
    hanging.add_argument("topic", metavar="TOPIC")
    hanging.add_argument("--partition", action="append", default=[], type=non_negative_int, metavar="N", help="only this partition; repeatable")
    add_output_option(hanging)

    abort_hanging = add_command(actions, "abort-hanging", "write the ABORT marker that ends a hanging transaction in its partition", run_abort_hanging)
    abort_hanging.add_argument("--topic", required=True, metavar="TOPIC")
    abort_hanging.add_argument("--partition", required=True, type=non_negative_int, metavar="N")
    abort_hanging.add_argument(
        "--start-offset", type=non_negative_int, metavar="OFFSET", help="the hanging transaction's start offset, as find-hanging prints it"
    )
    abort_hanging.add_argument(
        "--producer-id", type=non_negative_int, metavar="ID", help="instead of --start-offset: with --producer-epoch and --coordinator-epoch"
    )
    abort_hanging.add_argument("--producer-epoch", type=non_negative_int, metavar="EPOCH")
    abort_hanging.add_argument("--coordinator-epoch", type=int, metavar="EPOCH", help="-1 when the producer has no marker in the partition yet")


# ---------------------------------------------------------------------- parsing and formatting


def parse_states(values: Iterable[str]) -> list[str]:
    """``--state`` values by Kafka's names, in any case; comma-separated lists allowed."""
    by_key = {state.lower(): state for state in STATES}
    states = []
    for value in values:
        for name in filter(None, (part.strip() for part in value.split(","))):
            state = by_key.get(name.lower())
            if state is None:
                raise UsageError(f"unknown transaction state {name!r}; known states: {', '.join(STATES)}")
            states.append(state)
    return states


def format_duration(milliseconds: int | None) -> str:
    """``1h02m03s`` style, for how long a transaction has been open."""
    if milliseconds is None or milliseconds < 0:
        return NONE_MARK
    seconds = milliseconds // 1000
    hours, rest = divmod(seconds, 3600)
    minutes, seconds = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m{seconds:02d}s"
    if minutes:
        return f"{minutes}m{seconds:02d}s"
    return f"{milliseconds / 1000:.1f}s"


def _timestamp(milliseconds: int | None) -> str:
    if milliseconds is None:
        return NONE_MARK
    return datetime.fromtimestamp(milliseconds / 1000, tz=UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def description_document(description: TransactionDescription, now_ms: int) -> dict[str, Any]:
    start = description.transaction_start_time_ms
    return {
        "transactional_id": description.transactional_id,
        "coordinator_id": description.coordinator_id,
        "state": description.state,
        "producer_id": description.producer_id,
        "producer_epoch": description.producer_epoch,
        "transaction_timeout_ms": description.transaction_timeout_ms,
        "transaction_start_time_ms": start,
        "open_for_ms": now_ms - start if start is not None and description.state == "Ongoing" else None,
        "partitions": [{"topic": tp.topic, "partition": tp.partition} for tp in description.topic_partitions],
    }


def hanging_document(hanging: HangingTransaction) -> dict[str, Any]:
    return {
        "topic": hanging.topic,
        "partition": hanging.partition,
        "producer_id": hanging.producer_id,
        "producer_epoch": hanging.producer_epoch,
        "coordinator_epoch": hanging.coordinator_epoch,
        "start_offset": hanging.start_offset,
        "last_timestamp_ms": hanging.last_timestamp_ms,
        "open_for_ms": hanging.open_for_ms,
    }


# ---------------------------------------------------------------------- commands


def run_list(args: argparse.Namespace, streams: Streams, environ: Mapping[str, str]) -> int:
    states = parse_states(args.state)
    with connection.admin_client(args, environ) as admin:
        future = admin.list_transactions(
            states=states or None,
            producer_ids=args.producer_id or None,
            min_duration_ms=args.min_duration_ms,
            request_timeout=connection.request_timeout_seconds(args),
        )
        listings = connection.result(future, args)
    if args.output == "json":
        streams.print_json([{"transactional_id": item.transactional_id, "producer_id": item.producer_id, "state": item.state} for item in listings])
    else:
        streams.print_table(None, ["Transactional id", "Producer id", "State"], [(item.transactional_id, item.producer_id, item.state) for item in listings])
    return EXIT_OK


def run_describe(args: argparse.Namespace, streams: Streams, environ: Mapping[str, str]) -> int:
    with connection.admin_client(args, environ) as admin:
        future = admin.describe_transactions([args.transactional_id], request_timeout=connection.request_timeout_seconds(args))[args.transactional_id]
        description = connection.result(future, args)
    document = description_document(description, int(time.time() * 1000))
    if args.output == "json":
        streams.print_json(document)
        return EXIT_OK
    partitions = ", ".join(f"{item['topic']}[{item['partition']}]" for item in document["partitions"]) or NONE_MARK
    streams.print_table(
        None,
        ["Transactional id", "Coordinator", "State", "Producer id", "Epoch", "Timeout (ms)", "Started", "Open for", "Partitions"],
        [
            (
                description.transactional_id,
                description.coordinator_id,
                description.state,
                description.producer_id,
                description.producer_epoch,
                description.transaction_timeout_ms,
                _timestamp(description.transaction_start_time_ms),
                format_duration(document["open_for_ms"]),
                partitions,
            )
        ],
    )
    return EXIT_OK


def run_abort(args: argparse.Namespace, streams: Streams, environ: Mapping[str, str]) -> int:
    with connection.admin_client(args, environ) as admin:
        connection.result(admin.abort_transaction(args.transactional_id, request_timeout=connection.request_timeout_seconds(args)), args)
    streams.print_line(f"Aborting the transaction of {args.transactional_id!r}: its producer is fenced, ABORT markers are being written.")
    return EXIT_OK


def run_find_hanging(args: argparse.Namespace, streams: Streams, environ: Mapping[str, str]) -> int:
    with connection.admin_client(args, environ) as admin:
        future = admin.find_hanging_transactions(args.topic, sorted(set(args.partition)) or None, request_timeout=connection.request_timeout_seconds(args))
        found = connection.result(future, args)
    if args.output == "json":
        streams.print_json([hanging_document(hanging) for hanging in found])
        return EXIT_OK
    streams.print_table(
        None,
        ["Topic", "Partition", "Producer id", "Producer epoch", "Coordinator epoch", "Start offset", "Last batch", "Open for"],
        [
            (
                item.topic,
                item.partition,
                item.producer_id,
                item.producer_epoch,
                item.coordinator_epoch,
                item.start_offset,
                _timestamp(item.last_timestamp_ms),
                format_duration(item.open_for_ms),
            )
            for item in found
        ],
    )
    return EXIT_OK


def run_abort_hanging(args: argparse.Namespace, streams: Streams, environ: Mapping[str, str]) -> int:
    by_producer = (args.producer_id, args.producer_epoch, args.coordinator_epoch)
    if (args.start_offset is None) == all(value is None for value in by_producer):
        raise UsageError("name the transaction by --start-offset, or by --producer-id, --producer-epoch and --coordinator-epoch")
    if args.start_offset is None and any(value is None for value in by_producer):
        raise UsageError("--producer-id needs --producer-epoch and --coordinator-epoch")
    timeout = connection.request_timeout_seconds(args)
    with connection.admin_client(args, environ) as admin:
        if args.start_offset is not None:
            found = connection.result(admin.find_hanging_transactions(args.topic, [args.partition], request_timeout=timeout), args)
            matching = [item for item in found if item.start_offset == args.start_offset]
            if not matching:
                raise CommandError(f"no hanging transaction starts at offset {args.start_offset} of {args.topic} [{args.partition}]")
            producer_id, producer_epoch, coordinator_epoch = matching[0].producer_id, matching[0].producer_epoch, matching[0].coordinator_epoch
        else:
            producer_id, producer_epoch, coordinator_epoch = by_producer
        future = admin.abort_hanging_transaction(args.topic, args.partition, producer_id, producer_epoch, coordinator_epoch, request_timeout=timeout)
        connection.result(future, args)
    streams.print_line(f"Aborted producer {producer_id}'s transaction in {args.topic} [{args.partition}] (epoch {producer_epoch}).")
    return EXIT_OK

"""``weir topics create|list|describe|alter|delete``: topic administration through the AdminClient."""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Mapping
from typing import Any

from weir.admin import AlterConfigOpType, ConfigEntry, ConfigResource, NewPartitions, NewTopic
from weir.cli import connection
from weir.cli.arguments import add_command, add_output_option
from weir.cli.errors import EXIT_OK, UNKNOWN_TOPIC_CODES, CommandError, UsageError
from weir.cli.output import Streams
from weir.cli.values import parse_pairs, positive_int
from weir.errors import ErrorCode, KafkaException
from weir.message import TopicPartition
from weir.topic_config import TOPIC_CONFIGS, InvalidConfigError, validate_topic_configs

# Broker-side defaults, as Kafka's protocol spells them in CreateTopics.
BROKER_DEFAULT = -1


def register(commands: Any) -> None:
    topics = commands.add_parser("topics", help="create, list, describe, alter and delete topics")
    actions = topics.add_subparsers(title="topic commands", metavar="ACTION", required=True)

    create = add_command(actions, "create", "create a topic", run_create)
    create.add_argument("name", metavar="NAME")
    create.add_argument("--partitions", type=positive_int, help="partition count (default: the broker's num.partitions)")
    create.add_argument("--replication-factor", type=positive_int, help="replicas per partition (default: the broker's default.replication.factor)")
    create.add_argument("--config", action="append", default=[], metavar="KEY=VALUE", help="topic config override; repeatable")
    create.add_argument("--if-not-exists", action="store_true", help="succeed when the topic already exists")
    create.add_argument("--validate-only", action="store_true", help="check the request with the broker, create nothing")

    listing = add_command(actions, "list", "list topics", run_list)
    listing.add_argument("--include-internal", action="store_true", help="also list internal topics (__consumer_offsets, ...)")
    add_output_option(listing)

    describe = add_command(actions, "describe", "partitions, replicas, offsets and non-default configs of a topic", run_describe)
    describe.add_argument("name", metavar="NAME")
    add_output_option(describe)

    alter = add_command(actions, "alter", "add partitions or change configs", run_alter)
    alter.add_argument("name", metavar="NAME")
    alter.add_argument("--partitions", type=positive_int, help="new total partition count (can only grow)")
    alter.add_argument("--add-config", action="append", default=[], metavar="KEY=VALUE", help="set a topic config; repeatable")
    alter.add_argument("--delete-config", action="append", default=[], metavar="KEY", help="return a topic config to its default; repeatable")

    delete = add_command(actions, "delete", "delete a topic and its data", run_delete)
    delete.add_argument("name", metavar="NAME")
    delete.add_argument("--if-exists", action="store_true", help="succeed when the topic does not exist")


def _validate_configs(configs: Mapping[str, str]) -> None:
    # Checked here with the table the broker uses too, so that a typo fails at once with the
    # same message, before any connection is made.
    try:
        validate_topic_configs(configs)
    except InvalidConfigError as error:
        raise CommandError(str(error)) from None


def _is_internal(topic: Any) -> bool:
    # confluent-kafka's TopicMetadata has no is_internal; Kafka's internal topics all start with "__".
    internal = getattr(topic, "is_internal", None)
    return bool(internal) if internal is not None else topic.topic.startswith("__")


def _replication_factor(topic: Any) -> int:
    return max((len(partition.replicas) for partition in topic.partitions.values()), default=0)


def _join(numbers: Iterable[int]) -> str:
    return ",".join(str(number) for number in numbers)


def run_create(args: argparse.Namespace, streams: Streams, environ: Mapping[str, str]) -> int:
    configs = parse_pairs(args.config, "--config")
    _validate_configs(configs)
    new_topic = NewTopic(
        args.name,
        num_partitions=args.partitions or BROKER_DEFAULT,
        replication_factor=args.replication_factor or BROKER_DEFAULT,
        config=configs,
    )
    timeout = connection.request_timeout_seconds(args)
    with connection.admin_client(args, environ) as admin:
        futures = admin.create_topics([new_topic], operation_timeout=timeout, request_timeout=timeout, validate_only=args.validate_only)
        try:
            connection.result(futures[args.name], args)
        except KafkaException as error:
            if args.if_not_exists and error.args[0].code() == ErrorCode.TOPIC_ALREADY_EXISTS:
                streams.print_line(f"Topic {args.name} already exists.")
                return EXIT_OK
            raise
    if args.validate_only:
        streams.print_line(f"Topic {args.name} would be created; nothing was changed (--validate-only).")
    else:
        streams.print_line(f"Created topic {args.name}.")
    return EXIT_OK


def run_list(args: argparse.Namespace, streams: Streams, environ: Mapping[str, str]) -> int:
    with connection.admin_client(args, environ) as admin:
        metadata = admin.list_topics(timeout=connection.request_timeout_seconds(args))
    summaries = [
        {"name": name, "partitions": len(topic.partitions), "replication_factor": _replication_factor(topic), "internal": _is_internal(topic)}
        for name, topic in sorted(metadata.topics.items())
        if args.include_internal or not _is_internal(topic)
    ]
    if args.output == "json":
        streams.print_json(summaries)
    else:
        rows = [(summary["name"], summary["partitions"], summary["replication_factor"]) for summary in summaries]
        streams.print_table(None, ["Topic", "Partitions", "Replication factor"], rows)
    return EXIT_OK


def run_describe(args: argparse.Namespace, streams: Streams, environ: Mapping[str, str]) -> int:
    with connection.admin_client(args, environ) as admin:
        topic = connection.topic_metadata(admin, args, args.name)
        futures = admin.describe_configs([ConfigResource(ConfigResource.Type.TOPIC, args.name)], request_timeout=connection.request_timeout_seconds(args))
        entries = connection.result(next(iter(futures.values())), args)
    overrides = {name: entry.value for name, entry in sorted(entries.items()) if not entry.is_default}
    partitions = _describe_partitions(args, environ, topic)
    replication_factor = _replication_factor(topic)

    if args.output == "json":
        streams.print_json({"name": args.name, "partitions": partitions, "replication_factor": replication_factor, "configs": overrides})
        return EXIT_OK
    streams.print_line(f"Topic: {args.name}  Partitions: {len(partitions)}  Replication factor: {replication_factor}")
    streams.print_table(
        None,
        ["Partition", "Leader", "Replicas", "ISR", "Earliest offset", "Latest offset"],
        [(row["partition"], row["leader"], _join(row["replicas"]), _join(row["isr"]), row["earliest_offset"], row["latest_offset"]) for row in partitions],
    )
    if overrides:
        streams.print_line("Configs that differ from the defaults:")
        streams.print_table(None, ["Config", "Value"], overrides.items())
    else:
        streams.print_line("All configs have their default values.")
    return EXIT_OK


def _describe_partitions(args: argparse.Namespace, environ: Mapping[str, str], topic: Any) -> list[dict[str, Any]]:
    """Leader, replicas, ISR and earliest/latest offsets of every partition, by partition id."""
    rows = []
    with connection.consumer(args, environ, {"enable.auto.commit": False}) as consumer:
        for partition_id, partition in sorted(topic.partitions.items()):
            earliest, latest = consumer.get_watermark_offsets(TopicPartition(topic.topic, partition_id), timeout=connection.request_timeout_seconds(args))
            rows.append(
                {
                    "partition": partition_id,
                    "leader": partition.leader,
                    "replicas": list(partition.replicas),
                    "isr": list(partition.isrs),
                    "earliest_offset": earliest,
                    "latest_offset": latest,
                }
            )
    return rows


def run_alter(args: argparse.Namespace, streams: Streams, environ: Mapping[str, str]) -> int:
    additions = parse_pairs(args.add_config, "--add-config")
    deletions = list(dict.fromkeys(args.delete_config))
    if args.partitions is None and not additions and not deletions:
        raise UsageError("nothing to alter: give --partitions, --add-config or --delete-config")
    both = sorted(set(additions) & set(deletions))
    if both:
        raise UsageError(f"config {', '.join(both)} is both added and deleted")
    _validate_configs(additions)
    unknown = [name for name in deletions if name not in TOPIC_CONFIGS]
    if unknown:
        raise CommandError(f"unknown topic config {', '.join(map(repr, unknown))}")
    timeout = connection.request_timeout_seconds(args)
    changes = []
    with connection.admin_client(args, environ) as admin:
        # Partitions first: it is the change most likely to be refused (a count can only
        # grow), and refusing it before any config changed leaves the topic as it was.
        if args.partitions is not None:
            futures = admin.create_partitions([NewPartitions(args.name, args.partitions)], operation_timeout=timeout, request_timeout=timeout)
            connection.result(futures[args.name], args)
            changes.append(f"partitions now {args.partitions}")
        if additions or deletions:
            entries = [ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET) for name, value in additions.items()]
            entries += [ConfigEntry(name, None, incremental_operation=AlterConfigOpType.DELETE) for name in deletions]
            resource = ConfigResource(ConfigResource.Type.TOPIC, args.name, incremental_configs=entries)
            config_futures = admin.incremental_alter_configs([resource], request_timeout=timeout)
            connection.result(next(iter(config_futures.values())), args)
    if additions or deletions:
        changes += [f"set {name}={value}" for name, value in additions.items()]
        changes += [f"reset {name} to its default" for name in deletions]
    streams.print_line(f"Altered topic {args.name}: {'; '.join(changes)}.")
    return EXIT_OK


def run_delete(args: argparse.Namespace, streams: Streams, environ: Mapping[str, str]) -> int:
    timeout = connection.request_timeout_seconds(args)
    with connection.admin_client(args, environ) as admin:
        futures = admin.delete_topics([args.name], operation_timeout=timeout, request_timeout=timeout)
        try:
            connection.result(futures[args.name], args)
        except KafkaException as error:
            if error.args[0].code() not in UNKNOWN_TOPIC_CODES:
                raise
            if not args.if_exists:
                raise CommandError(f"topic {args.name!r} does not exist") from None
            streams.print_line(f"Topic {args.name} does not exist.")
            return EXIT_OK
    streams.print_line(f"Deleted topic {args.name}.")
    return EXIT_OK

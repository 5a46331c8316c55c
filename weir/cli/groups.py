"""``weir groups list|describe|lag|reset-offsets|delete``: consumer group tooling, as
kafka-consumer-groups.sh offers it, through the AdminClient and ``weir.group_tools``.

``reset-offsets`` is a dry run unless ``--execute`` is given: it prints the plan (each
partition's current and new offset) and changes nothing. Offsets can only be changed while
the group has no members, so ``--execute`` on an active group fails with the member count
and changes nothing.
"""

from __future__ import annotations

import argparse
import csv
from collections.abc import Iterable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from weir.admin import ConsumerGroupDescription, ConsumerGroupState, ConsumerGroupType, MemberDescription
from weir.cli import connection
from weir.cli.arguments import add_command, add_output_option
from weir.cli.errors import EXIT_OK, CommandError, UsageError
from weir.cli.output import Streams
from weir.cli.values import non_negative_int
from weir.errors import ErrorCode, KafkaException
from weir.group_tools import OffsetChange, PartitionLag, apply_offset_reset, consumer_group_lag, plan_offset_reset
from weir.message import TopicPartition

# How a missing committed offset or lag is printed in tables.
NONE_MARK = "-"
# Codes by which brokers refuse to change the offsets of, or delete, a group with members.
ACTIVE_GROUP_CODES = frozenset({ErrorCode.NON_EMPTY_GROUP, ErrorCode.UNKNOWN_MEMBER_ID})


def register(commands: Any) -> None:
    groups = commands.add_parser("groups", help="list, describe, show lag of, reset offsets of and delete consumer groups")
    actions = groups.add_subparsers(title="group commands", metavar="ACTION", required=True)

    listing = add_command(actions, "list", "list consumer groups with their states and types (consumer: KIP-848; classic: JoinGroup/SyncGroup)", run_list)
    listing.add_argument(
        "--state",
        action="append",
        default=[],
        metavar="STATE[,STATE...]",
        help="only groups in these states (Stable, Empty, Reconciling, Assigning, Dead); repeatable",
    )
    listing.add_argument(
        "--type",
        action="append",
        default=[],
        metavar="TYPE[,TYPE...]",
        help="only groups of these types: consumer (KIP-848, the weir SDK and group.protocol=consumer) or classic (JoinGroup/SyncGroup); repeatable",
    )
    add_output_option(listing)

    describe = add_command(actions, "describe", "state, assignor, coordinator and members (with their assignments) of a group", run_describe)
    describe.add_argument("group", metavar="GROUP")
    add_output_option(describe)

    lag = add_command(actions, "lag", "committed offset, end offset and lag of each partition of a group, and the total", run_lag)
    lag.add_argument("group", metavar="GROUP")
    add_output_option(lag)

    reset = add_command(actions, "reset-offsets", "plan (default) or --execute a change of a group's committed offsets", run_reset_offsets)
    reset.add_argument("group", metavar="GROUP")
    reset.add_argument("--topic", action="append", default=[], metavar="TOPIC", help="reset every partition of this topic; repeatable")
    target = reset.add_mutually_exclusive_group(required=True)
    target.add_argument("--to-earliest", action="store_true", help="to each partition's earliest offset")
    target.add_argument("--to-latest", action="store_true", help="to each partition's end offset")
    target.add_argument("--to-datetime", metavar="ISO", help="to the first offset at or after this time, e.g. 2024-05-01T12:00:00Z (no zone: local time)")
    target.add_argument("--to-offset", type=non_negative_int, metavar="N", help="to offset N in every partition")
    target.add_argument("--from-file", type=Path, metavar="CSV", help="to the offsets of a file of topic,partition,offset lines (names its own topics)")
    reset.add_argument("--execute", action="store_true", help="apply the plan (without it nothing is changed)")
    add_output_option(reset)

    delete = add_command(actions, "delete", "delete a group with no members, and its committed offsets", run_delete)
    delete.add_argument("group", metavar="GROUP")


# ---------------------------------------------------------------------- parsing


def parse_states(values: Iterable[str]) -> set[ConsumerGroupState]:
    """``--state`` values, by Kafka's names (``Stable``, ``PreparingRebalance``) or the enum's
    (``STABLE``, ``PREPARING_REBALANCE``), in any case."""
    by_key = {_state_key(state.name): state for state in ConsumerGroupState}
    states = set()
    for value in values:
        for name in filter(None, (part.strip() for part in value.split(","))):
            state = by_key.get(_state_key(name))
            if state is None:
                known = ", ".join(sorted(state.name for state in ConsumerGroupState))
                raise UsageError(f"unknown group state {name!r}; known states: {known}")
            states.add(state)
    return states


def parse_types(values: Iterable[str]) -> set[ConsumerGroupType]:
    """``--type`` values: ``consumer`` or ``classic``, in any case (UNKNOWN is no type one can list)."""
    by_key = {group_type.name.lower(): group_type for group_type in ConsumerGroupType if group_type is not ConsumerGroupType.UNKNOWN}
    types: set[ConsumerGroupType] = set()
    for value in values:
        for name in filter(None, (part.strip() for part in value.split(","))):
            group_type = by_key.get(name.lower())
            if group_type is None:
                raise UsageError(f"unknown group type {name!r}; known types: {', '.join(sorted(by_key))}")
            types.add(group_type)
    return types


def _type_name(group_type: ConsumerGroupType | None) -> str:
    return group_type.name if group_type is not None else ConsumerGroupType.UNKNOWN.name


def _state_key(name: str) -> str:
    return name.replace("_", "").replace("-", "").lower()


def parse_datetime_ms(text: str) -> int:
    """Epoch milliseconds of an ISO 8601 date and time; without a zone, local time (as Kafka's tool)."""
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise UsageError(f"--to-datetime expects an ISO 8601 time such as 2024-05-01T12:00:00Z, not {text!r}") from None
    if moment.tzinfo is None:
        moment = moment.astimezone()
    if moment.timestamp() < 0:
        raise UsageError(f"--to-datetime must not be before 1970-01-01T00:00:00Z, not {text!r}")
    return int(moment.timestamp() * 1000)


def read_offsets_file(path: Path) -> dict[tuple[str, int], int]:
    """``topic,partition,offset`` lines (kafka-consumer-groups.sh's format); blank lines and
    lines starting with ``#`` are skipped."""
    try:
        text = path.read_text()
    except OSError as error:
        raise UsageError(f"--from-file {str(path)!r} cannot be read: {error.strerror or error}") from None
    offsets: dict[tuple[str, int], int] = {}
    for number, row in enumerate(csv.reader(text.splitlines()), start=1):
        if not row or not "".join(row).strip() or row[0].lstrip().startswith("#"):
            continue
        try:
            topic, partition, offset = (cell.strip() for cell in row)
            key, value = (topic, int(partition)), int(offset)
        except ValueError:
            raise UsageError(f"line {number} of {path} is not topic,partition,offset: {','.join(row)!r}") from None
        if not topic or key[1] < 0 or value < 0:
            raise UsageError(f"line {number} of {path} needs a topic name and a partition and offset of at least 0: {','.join(row)!r}")
        offsets[key] = value
    if not offsets:
        raise UsageError(f"{path} has no topic,partition,offset line")
    return offsets


# ---------------------------------------------------------------------- shared broker calls


def describe_group(admin: Any, args: argparse.Namespace, group: str) -> ConsumerGroupDescription | None:
    """The group's description, or None when no such group exists (nothing committed, no members)."""
    future = admin.describe_consumer_groups([group], request_timeout=connection.request_timeout_seconds(args))[group]
    try:
        description = connection.result(future, args)
    except KafkaException as error:
        if error.args[0].code() == ErrorCode.GROUP_ID_NOT_FOUND:
            return None
        raise
    return None if description.state == ConsumerGroupState.DEAD else description


def require_group(admin: Any, args: argparse.Namespace, group: str) -> ConsumerGroupDescription:
    description = describe_group(admin, args, group)
    if description is None:
        raise CommandError(f"group {group!r} does not exist")
    return description


def active_members_error(group: str, members: int, doing: str) -> CommandError:
    return CommandError(
        f"group {group!r} has {members} active member{'s' if members != 1 else ''}: stop {'them' if members != 1 else 'it'} before {doing} (nothing was changed)"
    )


def partition_owners(description: ConsumerGroupDescription | None) -> dict[tuple[str, int], MemberDescription]:
    """Which member owns each partition now."""
    if description is None:
        return {}
    return {(partition.topic, partition.partition): member for member in description.members for partition in member.assignment.topic_partitions}


def format_assignment(partitions: Iterable[TopicPartition]) -> str:
    """``orders:0,1; payments:2``: partitions grouped by topic, both sorted."""
    by_topic: dict[str, list[int]] = {}
    for partition in partitions:
        by_topic.setdefault(partition.topic, []).append(partition.partition)
    return "; ".join(f"{topic}:{','.join(str(number) for number in sorted(numbers))}" for topic, numbers in sorted(by_topic.items()))


def _offset_cell(offset: int | None) -> str:
    return NONE_MARK if offset is None or offset < 0 else str(offset)


# ---------------------------------------------------------------------- commands


def run_list(args: argparse.Namespace, streams: Streams, environ: Mapping[str, str]) -> int:
    states = parse_states(args.state)
    types = parse_types(args.type)
    with connection.admin_client(args, environ) as admin:
        future = admin.list_consumer_groups(request_timeout=connection.request_timeout_seconds(args), states=states or None, types=types or None)
        result = connection.result(future, args)
    listings = sorted(result.valid, key=lambda listing: listing.group_id)
    for error in result.errors:
        streams.stderr.write(f"weir: warning: a broker did not list its groups: {error}\n")
    if args.output == "json":
        streams.print_json(
            [
                {"group_id": listing.group_id, "state": listing.state.name, "type": _type_name(listing.type), "is_simple": listing.is_simple_consumer_group}
                for listing in listings
            ]
        )
    else:
        streams.print_table(
            None,
            ["Group", "State", "Type", "Simple"],
            [(listing.group_id, listing.state.name, _type_name(listing.type), "yes" if listing.is_simple_consumer_group else "no") for listing in listings],
        )
    return EXIT_OK


def run_describe(args: argparse.Namespace, streams: Streams, environ: Mapping[str, str]) -> int:
    with connection.admin_client(args, environ) as admin:
        description = require_group(admin, args, args.group)
    coordinator = description.coordinator
    members = sorted(description.members, key=lambda member: (member.client_id, member.member_id))
    if args.output == "json":
        streams.print_json(
            {
                "group_id": description.group_id,
                "state": description.state.name,
                "type": _type_name(description.type),
                "is_simple": description.is_simple_consumer_group,
                "partition_assignor": description.partition_assignor,
                "coordinator": {"id": coordinator.id, "host": coordinator.host, "port": coordinator.port} if coordinator is not None else None,
                "members": [_member_document(member) for member in members],
            }
        )
        return EXIT_OK
    where = f"{coordinator.id} ({coordinator.host}:{coordinator.port})" if coordinator is not None else "unknown"
    streams.print_line(
        f"Group: {description.group_id}  State: {description.state.name}  Assignor: {description.partition_assignor or NONE_MARK}  Coordinator: {where}"
        f"  Members: {len(members)}  Type: {_type_name(description.type)}"
    )
    if not members:
        streams.print_line("The group has no active members.")
        return EXIT_OK
    rows = []
    for member in members:
        assignment = format_assignment(member.assignment.topic_partitions)
        target = format_assignment(member.target_assignment.topic_partitions) if member.target_assignment is not None else assignment
        rows.append(
            (
                member.member_id,
                member.group_instance_id or NONE_MARK,
                member.client_id,
                member.host,
                assignment or NONE_MARK,
                "" if target == assignment else target or NONE_MARK,
            )
        )
    streams.print_table(None, ["Member id", "Instance id", "Client id", "Host", "Assignment", "Target (when moving)"], rows)
    return EXIT_OK


def _member_document(member: MemberDescription) -> dict[str, Any]:
    def partitions(assignment: Any) -> list[dict[str, Any]] | None:
        if assignment is None:
            return None
        return [{"topic": tp.topic, "partition": tp.partition} for tp in sorted(assignment.topic_partitions)]

    return {
        "member_id": member.member_id,
        "group_instance_id": member.group_instance_id,
        "client_id": member.client_id,
        "host": member.host,
        "assignment": partitions(member.assignment),
        "target_assignment": partitions(member.target_assignment),
    }


def run_lag(args: argparse.Namespace, streams: Streams, environ: Mapping[str, str]) -> int:
    timeout = connection.request_timeout_seconds(args)
    with connection.admin_client(args, environ) as admin:
        description = describe_group(admin, args, args.group)
        lags = _group_lag(admin, args.group, timeout)
    if description is None and not lags:
        raise CommandError(f"group {args.group!r} does not exist")
    owners = partition_owners(description)
    total = sum(lag.lag or 0 for lag in lags)
    uncommitted = sum(1 for lag in lags if lag.committed_offset < 0)
    unknown_end = sum(1 for lag in lags if lag.end_offset < 0)
    if args.output == "json":
        rows: list[dict[str, object]] = []
        for lag in lags:
            owner = owners.get((lag.topic, lag.partition))
            rows.append(
                {
                    "topic": lag.topic,
                    "partition": lag.partition,
                    "committed_offset": lag.committed_offset if lag.committed_offset >= 0 else None,
                    "end_offset": lag.end_offset if lag.end_offset >= 0 else None,
                    "lag": lag.lag,
                    "member_id": owner.member_id if owner else None,
                    "client_id": owner.client_id if owner else None,
                }
            )
        streams.print_json({"group_id": args.group, "partitions": rows, "total_lag": total})
        return EXIT_OK
    table: list[tuple[object, ...]] = []
    for lag in lags:
        owner = owners.get((lag.topic, lag.partition))
        table.append(
            (
                lag.topic,
                lag.partition,
                _offset_cell(lag.committed_offset),
                _offset_cell(lag.end_offset),
                _offset_cell(lag.lag),
                owner.member_id if owner else NONE_MARK,
                owner.client_id if owner else NONE_MARK,
            )
        )
    streams.print_table(None, ["Topic", "Partition", "Committed offset", "End offset", "Lag", "Member id", "Client id"], table)
    notes = [f"{uncommitted} without a committed offset"] if uncommitted else []
    notes += [f"{unknown_end} whose end offset is unknown: no leader answered"] if unknown_end else []
    summary = f"Total lag: {total} over {len(lags)} partition{'s' if len(lags) != 1 else ''}"
    streams.print_line(summary + (f" ({'; '.join(notes)})." if notes else "."))
    return EXIT_OK


def _group_lag(admin: Any, group: str, timeout: float) -> list[PartitionLag]:
    try:
        lags = consumer_group_lag(admin, group, timeout=timeout)
    except KafkaException as error:
        if error.args[0].code() == ErrorCode.GROUP_ID_NOT_FOUND:
            return []
        raise
    return sorted(lags, key=lambda lag: (lag.topic, lag.partition))


def run_reset_offsets(args: argparse.Namespace, streams: Streams, environ: Mapping[str, str]) -> int:
    if args.from_file is not None and args.topic:
        raise UsageError("--from-file names its own topics: do not give --topic with it")
    if args.from_file is None and not args.topic:
        raise UsageError("give the topics to reset with --topic (or a --from-file)")
    timeout = connection.request_timeout_seconds(args)
    topics = list(dict.fromkeys(args.topic))
    with connection.admin_client(args, environ) as admin:
        description = describe_group(admin, args, args.group)
        members = len(description.members) if description is not None else 0
        if args.execute and members:
            raise active_members_error(args.group, members, "resetting its offsets")
        target = _reset_target(admin, args, topics)
        if isinstance(target, dict):
            topics = sorted({topic for topic, _ in target})
        plan = plan_offset_reset(admin, args.group, topics=topics, to=target, timeout=timeout)
        if args.execute:
            try:
                apply_offset_reset(admin, args.group, plan, timeout=timeout)
            except KafkaException as error:
                if error.args[0].code() in ACTIVE_GROUP_CODES:
                    raise CommandError(f"group {args.group!r} has active members: {error.args[0].str()} (nothing was changed)") from None
                raise
    _print_plan(streams, args, plan)
    if args.output != "json":
        if args.execute:
            streams.print_line(f"Reset the offsets of group {args.group} on {len(plan)} partition{'s' if len(plan) != 1 else ''}.")
        else:
            streams.print_line("Dry run: nothing was changed. Add --execute to apply this plan.")
    if members:
        streams.stderr.write(
            f"weir: warning: group {args.group!r} has {members} active member{'s' if members != 1 else ''}; --execute is refused until they stop\n"
        )
    return EXIT_OK


def _reset_target(admin: Any, args: argparse.Namespace, topics: list[str]) -> Any:
    """What ``plan_offset_reset`` takes as ``to`` for the chosen option."""
    if args.to_earliest:
        return "earliest"
    if args.to_latest:
        return "latest"
    if args.to_datetime is not None:
        return ("timestamp", parse_datetime_ms(args.to_datetime))
    if args.from_file is not None:
        return read_offsets_file(args.from_file)
    offsets = {}
    for topic in topics:
        metadata = connection.topic_metadata(admin, args, topic)
        offsets.update({(topic, partition): args.to_offset for partition in sorted(metadata.partitions)})
    return offsets


def _print_plan(streams: Streams, args: argparse.Namespace, plan: list[OffsetChange]) -> None:
    changes = sorted(plan, key=lambda change: (change.topic, change.partition))
    if args.output == "json":
        streams.print_json(
            {
                "group_id": args.group,
                "executed": bool(args.execute),
                "changes": [
                    {
                        "topic": change.topic,
                        "partition": change.partition,
                        "current_offset": change.current_offset if change.current_offset >= 0 else None,
                        "new_offset": change.new_offset,
                    }
                    for change in changes
                ],
            }
        )
        return
    streams.print_table(
        None,
        ["Topic", "Partition", "Current offset", "New offset"],
        [(change.topic, change.partition, _offset_cell(change.current_offset), change.new_offset) for change in changes],
    )


def run_delete(args: argparse.Namespace, streams: Streams, environ: Mapping[str, str]) -> int:
    with connection.admin_client(args, environ) as admin:
        future = admin.delete_consumer_groups([args.group], request_timeout=connection.request_timeout_seconds(args))[args.group]
        try:
            connection.result(future, args)
        except KafkaException as error:
            code = error.args[0].code()
            if code == ErrorCode.GROUP_ID_NOT_FOUND:
                raise CommandError(f"group {args.group!r} does not exist") from None
            if code == ErrorCode.NON_EMPTY_GROUP:
                description = describe_group(admin, args, args.group)
                raise active_members_error(args.group, len(description.members) if description else 0, "deleting the group") from None
            raise
    streams.print_line(f"Deleted group {args.group}.")
    return EXIT_OK

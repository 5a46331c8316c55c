"""``weir acls list|create|delete`` and ``weir cluster describe``: Kafka's kafka-acls.sh and
kafka-cluster.sh for a tenant, through the AdminClient.

ACLs are the tenant's (the control plane stores them for the caller's API key and pushes them to
every broker); principals are ``User:<service account>``. ``list`` and ``delete`` take a filter:
an option left out matches every value, ``--pattern-type match`` the bindings that apply to the
named resource. ``delete`` needs at least one condition, or ``--all``, so that a bare command
never removes every ACL.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any

from weir.admin import AclBinding, AclBindingFilter, AclOperation, AclPermissionType, ResourcePatternType, ResourceType
from weir.cli import connection
from weir.cli.arguments import add_command, add_output_option
from weir.cli.errors import EXIT_OK, UsageError
from weir.cli.output import Streams

# kafka-acls.sh's resource names; "cluster" is Kafka's name of confluent-kafka's BROKER type.
RESOURCE_TYPES = {"topic": ResourceType.TOPIC, "group": ResourceType.GROUP, "cluster": ResourceType.BROKER}
RESOURCE_NAMES = {value: key for key, value in RESOURCE_TYPES.items()}
CLUSTER_RESOURCE = "kafka-cluster"
OPERATIONS = [operation.name.lower() for operation in AclOperation if operation not in (AclOperation.UNKNOWN, AclOperation.ANY)]
HEADERS = ["Resource type", "Resource", "Pattern", "Principal", "Host", "Operation", "Permission"]


def register(commands: Any) -> None:
    acls = commands.add_parser("acls", help="list, create and delete the tenant's ACLs")
    actions = acls.add_subparsers(title="ACL commands", metavar="ACTION", required=True)

    listing = add_command(actions, "list", "the ACL bindings the filter matches (every one without options)", run_list)
    _add_filter_options(listing)
    add_output_option(listing)

    create = add_command(actions, "create", "allow or deny a principal operations on a resource", run_create)
    create.add_argument("--resource-type", required=True, choices=sorted(RESOURCE_TYPES), help="what the binding is about")
    create.add_argument(
        "--resource-name", metavar="NAME", help=f"the topic or group (a prefix with --pattern-type prefixed); the cluster is {CLUSTER_RESOURCE!r}"
    )
    create.add_argument("--pattern-type", choices=["literal", "prefixed"], default="literal")
    create.add_argument("--principal", required=True, metavar="User:NAME", help="the service account, as User:sa-...")
    create.add_argument("--host", default="*", help="the client address it applies to (default: any)")
    create.add_argument("--operation", required=True, action="append", choices=OPERATIONS, help="repeatable: one binding per operation")
    create.add_argument("--permission", choices=["allow", "deny"], default="allow")

    delete = add_command(actions, "delete", "delete the ACL bindings the filter matches and print them", run_delete)
    _add_filter_options(delete)
    delete.add_argument("--all", action="store_true", help="with no condition: delete every ACL binding of the tenant")
    add_output_option(delete)

    cluster = commands.add_parser("cluster", help="describe the cluster")
    cluster_actions = cluster.add_subparsers(title="cluster commands", metavar="ACTION", required=True)
    describe = add_command(cluster_actions, "describe", "cluster id, controller, brokers and the operations the caller may do on the cluster", run_describe)
    add_output_option(describe)


def _add_filter_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--resource-type", choices=sorted(RESOURCE_TYPES), help="only this resource type")
    parser.add_argument("--resource-name", metavar="NAME", help="only this resource name")
    parser.add_argument(
        "--pattern-type", choices=["literal", "prefixed", "match"], help="only this pattern type; match: the bindings that apply to --resource-name"
    )
    parser.add_argument("--principal", metavar="User:NAME", help="only this principal")
    parser.add_argument("--host", help="only this host")
    parser.add_argument("--operation", choices=OPERATIONS, help="only this operation")
    parser.add_argument("--permission", choices=["allow", "deny"], help="only this permission")


def acl_filter(args: argparse.Namespace) -> AclBindingFilter:
    if args.pattern_type == "match" and args.resource_name is None:
        raise UsageError("--pattern-type match needs --resource-name")
    return AclBindingFilter(
        RESOURCE_TYPES[args.resource_type] if args.resource_type else ResourceType.ANY,
        args.resource_name,
        ResourcePatternType[args.pattern_type.upper()] if args.pattern_type else ResourcePatternType.ANY,
        args.principal,
        args.host,
        AclOperation[args.operation.upper()] if args.operation else AclOperation.ANY,
        AclPermissionType[args.permission.upper()] if args.permission else AclPermissionType.ANY,
    )


def bindings_to_create(args: argparse.Namespace) -> list[AclBinding]:
    resource_type = RESOURCE_TYPES[args.resource_type]
    name = args.resource_name
    if resource_type == ResourceType.BROKER:
        if name not in (None, CLUSTER_RESOURCE):
            raise UsageError(f"the cluster resource is named {CLUSTER_RESOURCE!r}; leave --resource-name out")
        name = CLUSTER_RESOURCE
    elif not name:
        raise UsageError(f"--resource-name is required for a {args.resource_type} binding")
    if not args.principal.startswith("User:"):
        raise UsageError(f"--principal must look like User:NAME, got {args.principal!r}")
    pattern = ResourcePatternType[args.pattern_type.upper()]
    permission = AclPermissionType[args.permission.upper()]
    operations = list(dict.fromkeys(args.operation))
    return [AclBinding(resource_type, name, pattern, args.principal, args.host, AclOperation[operation.upper()], permission) for operation in operations]


def binding_row(binding: AclBinding) -> tuple[str, ...]:
    return (
        RESOURCE_NAMES.get(binding.restype, binding.restype.name.lower()),
        binding.name or "",
        binding.resource_pattern_type.name.lower(),
        binding.principal or "",
        binding.host or "",
        binding.operation.name.lower(),
        binding.permission_type.name.lower(),
    )


def _print_bindings(streams: Streams, args: argparse.Namespace, bindings: list[AclBinding]) -> None:
    rows = sorted(binding_row(binding) for binding in bindings)
    if args.output == "json":
        keys = ["resource_type", "resource_name", "pattern_type", "principal", "host", "operation", "permission"]
        streams.print_json([dict(zip(keys, row)) for row in rows])
    else:
        streams.print_table(None, HEADERS, rows)


def run_list(args: argparse.Namespace, streams: Streams, environ: Mapping[str, str]) -> int:
    acl_binding_filter = acl_filter(args)
    with connection.admin_client(args, environ) as admin:
        bindings = connection.result(admin.describe_acls(acl_binding_filter, request_timeout=connection.request_timeout_seconds(args)), args)
    _print_bindings(streams, args, bindings)
    return EXIT_OK


def run_create(args: argparse.Namespace, streams: Streams, environ: Mapping[str, str]) -> int:
    bindings = bindings_to_create(args)
    with connection.admin_client(args, environ) as admin:
        futures = admin.create_acls(bindings, request_timeout=connection.request_timeout_seconds(args))
        for binding in bindings:
            connection.result(futures[binding], args)
    for binding in bindings:
        row = binding_row(binding)
        streams.print_line(f"Created: {row[6]} {row[3]} {row[5]} on {row[0]} {row[1]!r} ({row[2]}) from {row[4]}")
    return EXIT_OK


def run_delete(args: argparse.Namespace, streams: Streams, environ: Mapping[str, str]) -> int:
    conditions = [args.resource_type, args.resource_name, args.pattern_type, args.principal, args.host, args.operation, args.permission]
    if all(value is None for value in conditions) and not args.all:
        raise UsageError("give at least one condition (--resource-type, --resource-name, --principal...), or --all to delete every ACL")
    acl_binding_filter = acl_filter(args)
    with connection.admin_client(args, environ) as admin:
        future = admin.delete_acls([acl_binding_filter], request_timeout=connection.request_timeout_seconds(args))[acl_binding_filter]
        deleted = connection.result(future, args)
    _print_bindings(streams, args, deleted)
    return EXIT_OK


def run_describe(args: argparse.Namespace, streams: Streams, environ: Mapping[str, str]) -> int:
    with connection.admin_client(args, environ) as admin:
        future = admin.describe_cluster(request_timeout=connection.request_timeout_seconds(args), include_authorized_operations=True)
        described = connection.result(future, args)
    operations = sorted(operation.name.lower() for operation in described.authorized_operations or [])
    brokers = [{"id": node.id, "host": node.host, "port": node.port, "rack": node.rack} for node in described.nodes]
    if args.output == "json":
        controller = described.controller.id if described.controller is not None else None
        streams.print_json({"cluster_id": described.cluster_id, "controller_id": controller, "brokers": brokers, "authorized_operations": operations})
        return EXIT_OK
    controller_id = described.controller.id if described.controller is not None else "-"
    streams.print_table(None, ["Cluster id", "Controller", "Your operations"], [(described.cluster_id or "-", controller_id, ", ".join(operations) or "-")])
    streams.print_table(None, ["Broker", "Host", "Port", "Rack"], [(item["id"], item["host"], item["port"], item["rack"] or "-") for item in brokers])
    return EXIT_OK

"""From connection options to an SDK configuration, and the broker calls every command shares."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from contextlib import closing
from pathlib import Path
from typing import Any

from weir.admin import AdminClient
from weir.cli.errors import CommandError, UsageError, describe_kafka_error
from weir.cli.values import parse_pair, positive_int
from weir.consumer import Consumer
from weir.errors import ErrorCode

DEFAULT_BOOTSTRAP_SERVER = "127.0.0.1:9092"
BOOTSTRAP_SERVERS_ENVIRONMENT = "WEIR_BOOTSTRAP_SERVERS"
API_KEY_ENVIRONMENT = "WEIR_API_KEY"
API_SECRET_ENVIRONMENT = "WEIR_API_SECRET"
DEFAULT_REQUEST_TIMEOUT_MS = 30_000
# Destination prefix of connection options given before the command.
GLOBAL_PREFIX = "global_"


def add_connection_options(parser: argparse.ArgumentParser, *, top_level: bool) -> None:
    """The options that say how to reach brokers, accepted before and after the command.

    Separate destinations for the two places keep a value given before the command from
    being overwritten by the command's own (absent) value; ``connection.option`` merges them.
    """
    prefix = GLOBAL_PREFIX if top_level else ""
    group = parser.add_argument_group("connection")
    group.add_argument(
        "--bootstrap-server",
        dest=prefix + "bootstrap_server",
        metavar="HOST:PORT[,...]",
        help=f"brokers to connect to (default: ${BOOTSTRAP_SERVERS_ENVIRONMENT} or {DEFAULT_BOOTSTRAP_SERVER})",
    )
    group.add_argument(
        "--command-config",
        dest=prefix + "command_config",
        action="append",
        default=[],
        metavar="KEY=VALUE|FILE",
        help="client config entry, or a properties file of them; repeatable",
    )
    group.add_argument("--api-key", dest=prefix + "api_key", metavar="KEY", help=f"API key (default: ${API_KEY_ENVIRONMENT}); sent as sasl.username")
    group.add_argument(
        "--api-secret", dest=prefix + "api_secret", metavar="SECRET", help=f"API secret (default: ${API_SECRET_ENVIRONMENT}); sent as sasl.password"
    )
    group.add_argument(
        "--request-timeout-ms",
        dest=prefix + "request_timeout_ms",
        type=positive_int,
        metavar="MS",
        help=f"deadline of each broker request (default {DEFAULT_REQUEST_TIMEOUT_MS})",
    )


def option(args: argparse.Namespace, name: str) -> Any:
    """A connection option given after the command, else before it, else None."""
    value = getattr(args, name, None)
    return value if value is not None else getattr(args, GLOBAL_PREFIX + name, None)


def bootstrap_servers(args: argparse.Namespace, environ: Mapping[str, str]) -> str:
    return option(args, "bootstrap_server") or environ.get(BOOTSTRAP_SERVERS_ENVIRONMENT) or DEFAULT_BOOTSTRAP_SERVER


def request_timeout_seconds(args: argparse.Namespace) -> float:
    return (option(args, "request_timeout_ms") or DEFAULT_REQUEST_TIMEOUT_MS) / 1000


def client_config(args: argparse.Namespace, environ: Mapping[str, str]) -> dict[str, Any]:
    """The SDK configuration the connection options describe.

    Precedence, lowest first: defaults and environment, ``--command-config`` entries (files
    and pairs in the order given, those before the command first), then the explicit
    ``--bootstrap-server``, ``--api-key``/``--api-secret`` and ``--request-timeout-ms``.
    """
    config: dict[str, Any] = {"bootstrap.servers": environ.get(BOOTSTRAP_SERVERS_ENVIRONMENT) or DEFAULT_BOOTSTRAP_SERVER}
    if environ.get(API_KEY_ENVIRONMENT):
        config["sasl.username"] = environ[API_KEY_ENVIRONMENT]
    if environ.get(API_SECRET_ENVIRONMENT):
        config["sasl.password"] = environ[API_SECRET_ENVIRONMENT]
    for entry in [*getattr(args, GLOBAL_PREFIX + "command_config", []), *getattr(args, "command_config", [])]:
        config.update(command_config_entries(entry))
    explicit = {
        "bootstrap.servers": option(args, "bootstrap_server"),
        "sasl.username": option(args, "api_key"),
        "sasl.password": option(args, "api_secret"),
        "request.timeout.ms": option(args, "request_timeout_ms"),
    }
    config.update({key: value for key, value in explicit.items() if value is not None})
    return config


def command_config_entries(entry: str) -> dict[str, str]:
    """``KEY=VALUE``, or the path of a Java-style properties file (Kafka's --command-config)."""
    path = Path(entry)
    if "=" in entry and not path.is_file():
        key, value = parse_pair(entry, "--command-config")
        return {key: value}
    try:
        text = path.read_text()
    except OSError as error:
        raise UsageError(f"--command-config {entry!r} is neither KEY=VALUE nor a readable file: {error.strerror or error}") from None
    entries = {}
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith(("#", "!")):
            key, value = parse_pair(line, f"a line of {entry}")
            entries[key] = value.strip()
    return entries


def admin_client(args: argparse.Namespace, environ: Mapping[str, str]) -> closing[AdminClient]:
    """An AdminClient for a ``with`` block, closed (threads and connections) at its end."""
    return closing(AdminClient(client_config(args, environ)))


def consumer(args: argparse.Namespace, environ: Mapping[str, str], extra: Mapping[str, Any]) -> closing[Consumer]:
    """A Consumer with ``extra`` config for a ``with`` block, closed at its end."""
    return closing(Consumer({**client_config(args, environ), **extra}))


def result(future: Any, args: argparse.Namespace) -> Any:
    """Wait for an admin future; its KafkaException propagates to the caller."""
    return future.result(timeout=request_timeout_seconds(args))


def topic_metadata(client: Any, args: argparse.Namespace, topic: str) -> Any:
    """The topic's metadata from a full cluster map, or CommandError when it does not exist.

    The full map is asked for, rather than this one topic, because asking for a topic by
    name may create it on brokers with auto.create.topics.enable.
    """
    metadata = client.list_topics(timeout=request_timeout_seconds(args))
    found = metadata.topics.get(topic)
    if found is None:
        raise CommandError(f"topic {topic!r} does not exist")
    if found.error is not None and found.error.code() != ErrorCode.NO_ERROR:
        raise CommandError(f"topic {topic!r}: {describe_kafka_error(found.error)}")
    return found


def check_partition(topic: Any, partition: int | None) -> None:
    """CommandError when ``partition`` is given and the topic does not have it."""
    if partition is not None and partition not in topic.partitions:
        raise CommandError(f"topic {topic.topic!r} has no partition {partition} (it has {len(topic.partitions)})")

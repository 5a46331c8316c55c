"""The client configuration table: every key Producer, Consumer and AdminClient accept.

Keys, aliases and defaults are librdkafka's (which confluent-kafka uses), with Java's
``buffer.memory`` and ``max.block.ms`` for the producer's back-pressure, so a configuration
written for confluent-kafka works unchanged. A librdkafka key that means nothing to Weir
(``weir.config_librdkafka``: socket tuning, Kerberos, racks...) is accepted, and the client
logs one warning naming every such key it was given. Any other unknown key or a bad value
raises ``KafkaException(KafkaError(_INVALID_ARG, ...))`` naming the key, like librdkafka's
"No such configuration property". A key that belongs to another kind of client (a consumer
key given to a producer) is accepted and ignored, as librdkafka does. Values of string keys
may be any object (a UUID ``group.id``): they are converted with str(), as confluent-kafka
does. ``default.topic.config`` (a dict) is merged into the configuration, its entries winning,
as confluent-kafka does.

Notable choices:

- ``batch.size`` defaults to 1,000,000 bytes (librdkafka's default): Python gRPC moves large
  messages efficiently but only a few thousand calls per second, so batches must be large.
- ``enable.idempotence`` defaults to false, as librdkafka's; ``acks`` defaults to all (-1).
  Idempotence requires ``acks=all``: asking for it with any other ``acks`` raises
  ``_INVALID_ARG``, as librdkafka does.
- ``partitioner`` defaults to ``consistent_random`` (librdkafka's: CRC-32 of the key, random
  for null keys), so a ported application's keys land on the partitions they did before.
- ``allow.auto.create.topics`` defaults to true for producers and false for consumers, as
  librdkafka's (a broker that allows auto-creation then creates a produced-to topic).
- ``sasl.mechanism`` PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 all send the API key and secret
  with every gRPC call (over TLS with ``sasl_ssl``): Weir's gRPC authentication checks the
  key and secret themselves, so the SCRAM handshake has nothing to add.
- ``security.protocol`` ``ssl`` / ``sasl_ssl`` connect with TLS, verifying the broker's
  certificate against ``ssl.ca.location`` (or the system's trusted roots when unset).
- ``weir.internal.token`` and ``weir.tenant.token`` are internal credentials. The internal
  token is the all-tenant credential of the brokers' own components (metering sink,
  replication, pipelines reading internal topics). A tenant token (``weir.tenant_tokens``) is
  what the control plane's dashboard, REST API and lag pipeline send to act as exactly one
  tenant for a few minutes. The former ``weir.tenant`` (internal token acting as a tenant) is
  removed: giving it raises ``_INVALID_ARG`` saying so, and brokers refuse that combination.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from weir.client_logging import ClientLog
from weir.config_librdkafka import IGNORED_KEYS
from weir.errors import KafkaError, KafkaException
from weir.tenant_tokens import TENANT_TOKEN_HEADER

PRODUCER = "producer"
CONSUMER = "consumer"
ADMIN = "admin"
ALL_ROLES = frozenset({PRODUCER, CONSUMER, ADMIN})
CLIENT_ROLES = frozenset({PRODUCER, CONSUMER})

INT32_MAX = 2**31 - 1


@dataclass(frozen=True)
class ConfigProperty:
    """One client config key.

    ``kind`` is one of ``str``, ``int``, ``bool``, ``enum``, ``callable``, ``assignors``; ``choices`` maps
    every accepted spelling of an enum to its normalized value.
    """

    name: str
    kind: str
    default: Any
    roles: frozenset[str]
    doc: str
    aliases: tuple[str, ...] = ()
    minimum: int | None = None
    maximum: int | None = None
    choices: Mapping[str, Any] = field(default_factory=dict)

    def parse(self, given_name: str, raw: Any) -> Any:
        """Return the normalized value of ``raw``; raise KafkaException _INVALID_ARG when invalid."""
        parser = _PARSERS[self.kind]
        return parser(self, given_name, raw)


def invalid_argument(message: str) -> KafkaException:
    """The exception every configuration error raises."""
    return KafkaException(KafkaError(KafkaError._INVALID_ARG, message))


def _parse_string(prop: ConfigProperty, given_name: str, raw: Any) -> str | None:
    """Any value converted with str() (a UUID group.id), as confluent-kafka does; booleans as true/false."""
    if raw is None:
        return None
    if isinstance(raw, bool):
        return "true" if raw else "false"
    if callable(raw) or isinstance(raw, (Mapping, list, tuple, set, bytes)):
        raise invalid_argument(f'Invalid value for configuration property "{given_name}": expected a string, got {type(raw).__name__}')
    return str(raw)


def _parse_int(prop: ConfigProperty, given_name: str, raw: Any) -> int:
    if isinstance(raw, bool):
        raise invalid_argument(f'Invalid value "{raw}" for configuration property "{given_name}": expected an integer')
    try:
        value = int(raw) if not isinstance(raw, float) or raw.is_integer() else None
    except (TypeError, ValueError):
        value = None
    if value is None:
        raise invalid_argument(f'Invalid value "{raw}" for configuration property "{given_name}": expected an integer')
    if prop.minimum is not None and value < prop.minimum or prop.maximum is not None and value > prop.maximum:
        raise invalid_argument(f'Configuration property "{given_name}" value {value} is outside allowed range {prop.minimum}..{prop.maximum}')
    return value


_BOOLEANS = {"true": True, "t": True, "1": True, "false": False, "f": False, "0": False}


def _parse_bool(prop: ConfigProperty, given_name: str, raw: Any) -> bool:
    """True/False, or librdkafka's spellings (true, t, 1, false, f, 0, any case)."""
    if isinstance(raw, bool):
        return raw
    if isinstance(raw, (str, int)) and str(raw).strip().lower() in _BOOLEANS:
        return _BOOLEANS[str(raw).strip().lower()]
    raise invalid_argument(f'Invalid value "{raw}" for configuration property "{given_name}": expected true or false')


def _parse_enum(prop: ConfigProperty, given_name: str, raw: Any) -> Any:
    key = raw.strip().lower() if isinstance(raw, str) else raw
    if isinstance(key, bool) or key not in prop.choices:
        allowed = ", ".join(str(choice) for choice in prop.choices)
        raise invalid_argument(f'Invalid value "{raw}" for configuration property "{given_name}": must be one of {allowed}')
    return prop.choices[key]


def _parse_logger(prop: ConfigProperty, given_name: str, raw: object) -> Any:
    """A logging.Logger, or anything with its log(level, msg, *args) method."""
    if raw is None or callable(getattr(raw, "log", None)):
        return raw
    raise invalid_argument(f'Invalid value for configuration property "{given_name}": expected a logging.Logger, got {type(raw).__name__}')


def _parse_callable(prop: ConfigProperty, given_name: str, raw: object) -> Callable[..., Any] | None:
    if raw is None or callable(raw):
        return raw
    raise invalid_argument(f'Invalid value for configuration property "{given_name}": expected a callable')


# partition.assignment.strategy: the assignor the coordinator runs for the group (KIP-848:
# assignment is computed on the server). librdkafka's and Java's names map to the broker's.
_ASSIGNORS = {
    "range": "range",
    "roundrobin": "roundrobin",
    "uniform": "sticky",
    "sticky": "sticky",
    "cooperative-sticky": "sticky",
}


def _parse_assignors(prop: ConfigProperty, given_name: str, raw: Any) -> str | None:
    """A comma-separated list of assignor names -> the first one's server-side name (None: the group's)."""
    if raw is None:
        return None
    if not isinstance(raw, str):
        raise invalid_argument(f'Invalid value for configuration property "{given_name}": expected a comma-separated list of assignor names')
    names = [name.strip().lower() for name in raw.split(",") if name.strip()]
    for name in names:
        if name not in _ASSIGNORS:
            allowed = ", ".join(_ASSIGNORS)
            raise invalid_argument(f'Invalid value "{raw}" for configuration property "{given_name}": unknown assignor "{name}" (known: {allowed})')
    return _ASSIGNORS[names[0]] if names else None


# librdkafka's debug contexts.
DEBUG_CONTEXTS = frozenset(
    [
        "generic",
        "broker",
        "topic",
        "metadata",
        "feature",
        "queue",
        "msg",
        "protocol",
        "cgrp",
        "security",
        "fetch",
        "interceptor",
        "plugin",
        "consumer",
        "admin",
        "eos",
        "mock",
        "assignor",
        "conf",
        "telemetry",
        "all",
    ]
)


def _parse_debug(prop: ConfigProperty, given_name: str, raw: Any) -> frozenset[str]:
    """A comma-separated list of librdkafka debug contexts -> their set."""
    if raw is None:
        return frozenset()
    if not isinstance(raw, str):
        raise invalid_argument(f'Invalid value for configuration property "{given_name}": expected a comma-separated list of debug contexts')
    contexts = frozenset(name.strip().lower() for name in raw.split(",") if name.strip())
    unknown = sorted(contexts - DEBUG_CONTEXTS)
    if unknown:
        raise invalid_argument(
            f'Invalid value "{raw}" for configuration property "{given_name}": unknown debug context "{unknown[0]}" (known: {", ".join(sorted(DEBUG_CONTEXTS))})'
        )
    return contexts


_PARSERS: dict[str, Callable[[ConfigProperty, str, Any], Any]] = {
    "str": _parse_string,
    "int": _parse_int,
    "bool": _parse_bool,
    "enum": _parse_enum,
    "callable": _parse_callable,
    "assignors": _parse_assignors,
    "logger": _parse_logger,
    "debug": _parse_debug,
}

_ACKS = {"all": -1, "-1": -1, -1: -1, "0": 0, 0: 0, "1": 1, 1: 1}
_COMPRESSION = {name: name for name in ("none", "gzip", "snappy", "lz4", "zstd")}
_PARTITIONERS = {name: name for name in ("consistent_random", "consistent", "murmur2_random", "murmur2", "random", "fnv1a", "fnv1a_random")}
_OFFSET_RESET = {
    "earliest": "earliest",
    "smallest": "earliest",
    "beginning": "earliest",
    "latest": "latest",
    "largest": "latest",
    "end": "latest",
    "error": "error",
}
_ISOLATION = {"read_committed": "read_committed", "read_uncommitted": "read_uncommitted"}
_SECURITY_PROTOCOLS = {name: name for name in ("plaintext", "sasl_plaintext", "ssl", "sasl_ssl")}
TLS_PROTOCOLS = frozenset({"ssl", "sasl_ssl"})  # security.protocol values that connect with TLS
_SASL_MECHANISMS = {"plain": "PLAIN", "scram-sha-256": "SCRAM-SHA-256", "scram-sha-512": "SCRAM-SHA-512"}
_GROUP_PROTOCOLS = {"classic": "classic", "consumer": "consumer"}


def _property(name: str, kind: str, default: Any, roles: frozenset[str], doc: str, **options: Any) -> ConfigProperty:
    return ConfigProperty(name, kind, default, roles, doc, **options)


CONFIG_PROPERTIES: dict[str, ConfigProperty] = {
    prop.name: prop
    for prop in [
        # -------------------------------------------------------------- every client
        _property(
            "bootstrap.servers",
            "str",
            None,
            ALL_ROLES,
            "Comma-separated host:port list of brokers to fetch the cluster map from; any one that answers is enough.",
            aliases=("metadata.broker.list",),
        ),
        _property("client.id", "str", "weir", ALL_ROLES, "Name of this client, for the broker's logs."),
        _property("request.timeout.ms", "int", 30000, ALL_ROLES, "Deadline of one request to a broker.", minimum=1, maximum=900000),
        _property("socket.timeout.ms", "int", 60000, ALL_ROLES, "Deadline of metadata and admin requests.", minimum=10, maximum=300000),
        _property(
            "socket.connection.setup.timeout.ms",
            "int",
            10000,
            ALL_ROLES,
            "Longest one broker of the list may take to answer a metadata, coordinator or admin call while others are left to try.",
            minimum=10,
            maximum=INT32_MAX,
        ),
        _property("metadata.max.age.ms", "int", 900000, ALL_ROLES, "Refresh the cached cluster map at least this often.", minimum=1, maximum=86400000),
        _property(
            "retry.backoff.ms",
            "int",
            100,
            ALL_ROLES,
            "First wait before retrying a failed request; doubles per attempt up to retry.backoff.max.ms.",
            minimum=1,
            maximum=300000,
        ),
        _property("retry.backoff.max.ms", "int", 1000, ALL_ROLES, "Longest wait between two retries.", minimum=1, maximum=300000),
        _property(
            "error_cb", "callable", None, ALL_ROLES, "Called with a KafkaError for errors not tied to one message (brokers unreachable...), from poll()."
        ),
        _property(
            "security.protocol",
            "enum",
            "plaintext",
            ALL_ROLES,
            "plaintext, sasl_plaintext, ssl or sasl_ssl (the last two connect with TLS).",
            choices=_SECURITY_PROTOCOLS,
        ),
        _property(
            "ssl.ca.location", "str", None, ALL_ROLES, "PEM file of the CA certificates that verify brokers over TLS (default: the system's trusted roots)."
        ),
        _property(
            "weir.internal.token", "str", None, ALL_ROLES, "Internal: the control plane's token, sent as x-weir-internal-token; brokers refuse a wrong one."
        ),
        _property(
            "weir.tenant.token",
            "str",
            None,
            ALL_ROLES,
            f"Internal: a short-lived tenant token minted by the control plane (weir.tenant_tokens), sent as {TENANT_TOKEN_HEADER}; brokers then act as its tenant until it expires.",
        ),
        _property(
            "sasl.mechanism",
            "enum",
            "PLAIN",
            ALL_ROLES,
            "PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512: sasl.username / sasl.password carry the API key and secret (sent with every gRPC call).",
            aliases=("sasl.mechanisms",),
            choices=_SASL_MECHANISMS,
        ),
        _property("sasl.username", "str", None, ALL_ROLES, "API key, sent as gRPC metadata x-weir-api-key on every call."),
        _property("sasl.password", "str", None, ALL_ROLES, "API secret, sent as gRPC metadata x-weir-api-secret on every call."),
        _property("logger", "logger", None, ALL_ROLES, "A logging.Logger that receives the client's logs (else the weir.client logger)."),
        _property(
            "debug",
            "debug",
            frozenset(),
            ALL_ROLES,
            "Comma-separated librdkafka debug contexts (generic, broker, topic, msg, cgrp, fetch, all...): their debug logs are emitted; implies log_level 7.",
        ),
        _property("log_level", "int", 6, ALL_ROLES, "Syslog level (0-7) of the most detailed log emitted; 7 is debug.", minimum=0, maximum=7),
        _property(
            "stats_cb",
            "callable",
            None,
            ALL_ROLES,
            "Called from poll() with a librdkafka-shaped statistics JSON string every statistics.interval.ms.",
        ),
        _property(
            "statistics.interval.ms",
            "int",
            0,
            ALL_ROLES,
            "Interval of stats_cb calls; 0 disables statistics.",
            minimum=0,
            maximum=86400000,
        ),
        _property(
            "throttle_cb", "callable", None, ALL_ROLES, "Called from poll() with a ThrottleEvent when a broker held back a response for the tenant's quota."
        ),
        _property(
            "allow.auto.create.topics",
            "bool",
            None,
            ALL_ROLES,
            "Ask brokers to create a missing topic on metadata requests (when they allow it); default true for producers, false for consumers.",
        ),
        _property("ssl.ca.pem", "str", None, ALL_ROLES, "PEM text of the CA certificates that verify brokers (instead of ssl.ca.location)."),
        _property(
            "ssl.certificate.location", "str", None, ALL_ROLES, "PEM file of this client's certificate, presented to brokers over TLS (with ssl.key.location)."
        ),
        _property("ssl.certificate.pem", "str", None, ALL_ROLES, "PEM text of this client's certificate (instead of ssl.certificate.location)."),
        _property("ssl.key.location", "str", None, ALL_ROLES, "PEM file of this client's private key (unencrypted)."),
        _property("ssl.key.pem", "str", None, ALL_ROLES, "PEM text of this client's private key (instead of ssl.key.location)."),
        _property(
            "enable.ssl.certificate.verification",
            "bool",
            True,
            ALL_ROLES,
            "false: trust whatever certificate the first bootstrap broker presents (fetched once, then pinned) instead of verifying it against a CA.",
        ),
        # -------------------------------------------------------------- producer
        _property(
            "acks",
            "enum",
            -1,
            frozenset({PRODUCER}),
            "0: do not wait; 1: the leader appended; all (-1): every in-sync replica has it.",
            aliases=("request.required.acks",),
            choices=_ACKS,
        ),
        _property(
            "linger.ms",
            "int",
            5,
            frozenset({PRODUCER}),
            "Wait this long for more records before sending a batch that is not full.",
            aliases=("queue.buffering.max.ms",),
            minimum=0,
            maximum=900000,
        ),
        _property(
            "batch.size",
            "int",
            1_000_000,
            frozenset({PRODUCER}),
            "Largest batch in bytes (before compression); a full batch is sent at once.",
            minimum=1,
            maximum=2147483647,
        ),
        _property(
            "batch.num.messages", "int", 10000, frozenset({PRODUCER}), "Largest batch in records; a full batch is sent at once.", minimum=1, maximum=1000000
        ),
        _property(
            "compression.type",
            "enum",
            "none",
            frozenset({PRODUCER}),
            "Codec of produced batches: none, gzip, snappy, lz4, zstd.",
            aliases=("compression.codec",),
            choices=_COMPRESSION,
        ),
        _property(
            "enable.idempotence",
            "bool",
            False,
            frozenset({PRODUCER}),
            "Exactly-once delivery per partition with sequence numbers; requires acks=all (the default).",
        ),
        _property(
            "queue.buffering.max.messages",
            "int",
            100000,
            frozenset({PRODUCER}),
            "When set: most records produced and not yet reported; produce() beyond it raises BufferError at once, as librdkafka. Unset: only buffer.memory bounds the queue.",
            minimum=0,
            maximum=INT32_MAX,
        ),
        _property(
            "queue.buffering.max.kbytes",
            "int",
            1048576,
            frozenset({PRODUCER}),
            "When set: most KiB of records produced and not yet reported; produce() beyond it raises BufferError at once, as librdkafka.",
            minimum=1,
            maximum=INT32_MAX,
        ),
        _property(
            "sticky.partitioning.linger.ms",
            "int",
            10,
            frozenset({PRODUCER}),
            "Keyless records stay on one partition while its batch fills; 0: each keyless record goes to a random partition.",
            minimum=0,
            maximum=900000,
        ),
        _property("delivery.report.only.error", "bool", False, frozenset({PRODUCER}), "Only failed records get their delivery callback."),
        _property(
            "transactional.id",
            "str",
            None,
            frozenset({PRODUCER}),
            "Makes the producer transactional (init_transactions, begin/commit/abort_transaction); implies enable.idempotence and acks=all.",
        ),
        _property(
            "transaction.timeout.ms",
            "int",
            60000,
            frozenset({PRODUCER}),
            "How long a transaction may stay open before its coordinator aborts it; also delivery.timeout.ms unless that is set.",
            minimum=1000,
            maximum=INT32_MAX,
        ),
        _property(
            "retries",
            "int",
            INT32_MAX,
            frozenset({PRODUCER}),
            "How many times a failed batch is retried (within delivery.timeout.ms).",
            aliases=("message.send.max.retries",),
            minimum=0,
            maximum=INT32_MAX,
        ),
        _property(
            "delivery.timeout.ms",
            "int",
            300000,
            frozenset({PRODUCER}),
            "Upper bound from produce() to the delivery report; a record not delivered by then fails with _MSG_TIMED_OUT.",
            aliases=("message.timeout.ms",),
            minimum=0,
            maximum=INT32_MAX,
        ),
        _property(
            "max.in.flight.requests.per.connection",
            "int",
            5,
            frozenset({PRODUCER}),
            "Produce requests awaiting an answer per broker; at most 5 with idempotence.",
            aliases=("max.in.flight",),
            minimum=1,
            maximum=1000000,
        ),
        _property(
            "buffer.memory", "int", 32 * 1024 * 1024, frozenset({PRODUCER}), "Bytes of records buffered before produce() blocks.", minimum=1024, maximum=2**40
        ),
        _property(
            "max.block.ms",
            "int",
            60000,
            frozenset({PRODUCER}),
            "How long produce() blocks for buffer space (then BufferError) or for a topic's first metadata.",
            minimum=0,
            maximum=INT32_MAX,
        ),
        _property(
            "message.max.bytes",
            "int",
            1_000_000,
            ALL_ROLES,
            "Largest record (key + value + headers); produce() raises MSG_SIZE_TOO_LARGE above it. Also the most record bytes the producer puts in one Produce request (librdkafka's meaning; brokers accept max.request.size, 8 MiB by default).",
            minimum=1000,
            maximum=1_000_000_000,
        ),
        _property(
            "partitioner",
            "enum",
            "consistent_random",
            frozenset({PRODUCER}),
            "Partition of a record without an explicit partition: consistent_random (CRC-32 of the key, random without), consistent, murmur2_random, murmur2, random, fnv1a, fnv1a_random.",
            choices=_PARTITIONERS,
        ),
        _property(
            "on_delivery",
            "callable",
            None,
            frozenset({PRODUCER}),
            "Called as on_delivery(err, msg) from poll()/flush() for every record.",
            aliases=("delivery.report.cb", "dr_cb"),
        ),
        # -------------------------------------------------------------- consumer
        _property("group.id", "str", None, frozenset({CONSUMER}), "Group whose committed offsets the consumer reads and writes, and that subscribe() joins."),
        _property(
            "group.instance.id",
            "str",
            None,
            frozenset({CONSUMER}),
            "Static membership: a member that leaves (close()) keeps its partitions for session.timeout.ms and gets them back when it rejoins with the same id.",
        ),
        _property(
            "auto.offset.reset",
            "enum",
            "latest",
            frozenset({CONSUMER}),
            "Start here without a committed offset or when out of range: earliest, latest or error.",
            choices=_OFFSET_RESET,
        ),
        _property(
            "enable.auto.commit",
            "bool",
            True,
            frozenset({CONSUMER}),
            "Commit the stored offsets every auto.commit.interval.ms, before partitions are revoked, and on close().",
            aliases=("auto.commit.enable",),
        ),
        _property(
            "group.protocol",
            "enum",
            "classic",
            frozenset({CONSUMER}),
            "classic or consumer (KIP-848): accepted for librdkafka compatibility; Weir's groups always assign on the coordinator.",
            choices=_GROUP_PROTOCOLS,
        ),
        _property("auto.commit.interval.ms", "int", 5000, frozenset({CONSUMER}), "Interval of automatic commits.", minimum=0, maximum=86400000),
        _property(
            "enable.auto.offset.store", "bool", True, frozenset({CONSUMER}), "Store the offset of each message poll()/consume() returns, for the next commit."
        ),
        _property(
            "fetch.min.bytes",
            "int",
            1,
            frozenset({CONSUMER}),
            "A fetch waits for at least this many bytes (or fetch.wait.max.ms).",
            minimum=1,
            maximum=100000000,
        ),
        _property("fetch.max.bytes", "int", 52428800, frozenset({CONSUMER}), "Largest fetch response.", minimum=0, maximum=2147483135),
        _property(
            "fetch.wait.max.ms",
            "int",
            500,
            frozenset({CONSUMER}),
            "Longest a broker holds a fetch waiting for fetch.min.bytes.",
            aliases=("fetch.max.wait.ms",),
            minimum=0,
            maximum=300000,
        ),
        _property(
            "max.partition.fetch.bytes",
            "int",
            1048576,
            frozenset({CONSUMER}),
            "Largest data returned per partition per fetch.",
            aliases=("fetch.message.max.bytes",),
            minimum=1,
            maximum=1000000000,
        ),
        _property(
            "queued.max.messages.kbytes",
            "int",
            65536,
            frozenset({CONSUMER}),
            "Prefetched but unconsumed data the fetcher holds, in KiB.",
            minimum=1,
            maximum=2097151,
        ),
        _property("isolation.level", "enum", "read_committed", frozenset({CONSUMER}), "read_committed or read_uncommitted.", choices=_ISOLATION),
        _property("enable.partition.eof", "bool", False, frozenset({CONSUMER}), "Emit a _PARTITION_EOF event when a partition's end is reached."),
        _property(
            "session.timeout.ms",
            "int",
            45000,
            frozenset({CONSUMER}),
            "A member not heard of for this long leaves the group. Sent to the coordinator only when set (else the broker's group.consumer.session.timeout.ms); also the longest the consumer keeps its partitions without a heartbeat answer.",
            minimum=1,
            maximum=3600000,
        ),
        _property(
            "max.poll.interval.ms",
            "int",
            300000,
            frozenset({CONSUMER}),
            "Longest time between two poll()/consume() calls; past it the member leaves the group and the next poll() reports _MAX_POLL_EXCEEDED and on_lost. Also the rebalance timeout: the longest on_revoke may take.",
            minimum=1,
            maximum=86400000,
        ),
        _property(
            "heartbeat.interval.ms",
            "int",
            3000,
            frozenset({CONSUMER}),
            "Interval of group heartbeats until the coordinator names its own (the coordinator's answer wins).",
            minimum=1,
            maximum=3600000,
        ),
        _property(
            "partition.assignment.strategy",
            "assignors",
            None,
            frozenset({CONSUMER}),
            "Assignor the coordinator runs: range, roundrobin or sticky (Kafka's uniform, cooperative-sticky); the first of a list counts. Unset: the group's (broker default).",
            aliases=("group.remote.assignor",),
        ),
        _property(
            "on_commit",
            "callable",
            None,
            frozenset({CONSUMER}),
            "Called as on_commit(err, [TopicPartition]) after asynchronous and automatic commits, from poll().",
        ),
    ]
}

# Keys that existed once: giving one says what replaced it, rather than "No such configuration property".
REMOVED_PROPERTIES = {
    "weir.tenant": "acting as a tenant with the internal token is no longer possible; the control plane sends a tenant token (weir.tenant.token) instead",
}

_BY_NAME: dict[str, ConfigProperty] = {}
for _prop in CONFIG_PROPERTIES.values():
    _BY_NAME[_prop.name] = _prop
    for _alias in _prop.aliases:
        _BY_NAME[_alias] = _prop
del _prop, _alias


# Keys whose values the debug=conf log leaves out.
_SECRET_KEYS = frozenset({"sasl.password", "ssl.key.pem", "weir.internal.token", "weir.tenant.token"})
_CLIENT_NUMBERS = itertools.count(1)  # librdkafka numbers its clients in log names: rdkafka#producer-1


def _merge_default_topic_config(given: Mapping[str, Any]) -> Mapping[str, Any]:
    """``default.topic.config`` (a dict) merged into the configuration, its entries winning, as confluent-kafka does."""
    topic_config = given.get("default.topic.config")
    if topic_config is None:
        return {name: raw for name, raw in given.items() if name != "default.topic.config"}
    if not isinstance(topic_config, Mapping):
        raise invalid_argument(f'Invalid value for configuration property "default.topic.config": expected a dict, got {type(topic_config).__name__}')
    merged = {name: raw for name, raw in given.items() if name != "default.topic.config"}
    merged.update(topic_config)
    return merged


class ClientConfig:
    """A validated configuration: every known key with its normalized value or default.

    Read values with ``config["linger.ms"]`` (canonical names only). Immutable after
    construction; safe to read from any thread.
    """

    def __init__(self, given: Mapping[str, Any], role: str) -> None:
        if not isinstance(given, Mapping):
            raise TypeError("expected configuration dict")
        given = _merge_default_topic_config(given)
        values = {prop.name: prop.default for prop in CONFIG_PROPERTIES.values()}
        explicit = set()
        ignored = []
        for name, raw in given.items():
            prop = _BY_NAME.get(name)
            if name in REMOVED_PROPERTIES:
                raise invalid_argument(f'Configuration property "{name}" was removed: {REMOVED_PROPERTIES[name]}')
            if prop is None:
                if name in IGNORED_KEYS:
                    ignored.append(name)
                    continue
                raise invalid_argument(f'No such configuration property: "{name}"')
            value = prop.parse(name, raw)  # a number, boolean or choice refuses None here, naming the key, as librdkafka does
            if raw is None:
                # confluent-kafka hands None to librdkafka, which resets a property that may be
                # empty (a string, a callback, a logger) to its default: as if it were not given.
                continue
            values[prop.name] = value
            explicit.add(prop.name)
        if values["allow.auto.create.topics"] is None:
            values["allow.auto.create.topics"] = role == PRODUCER  # librdkafka's defaults differ by role
        self._values = values
        self._explicit = frozenset(explicit)
        self.role = role
        self.ignored: tuple[str, ...] = tuple(sorted(ignored))
        self._check_together()
        self.log = ClientLog(values["logger"], f"{values['client.id']}#{role}-{next(_CLIENT_NUMBERS)}", values["debug"], values["log_level"])
        if self.log.debugs("conf"):
            shown = {name: ("[redacted]" if name in _SECRET_KEYS else values[name]) for name in sorted(explicit)}
            self.log.debug("conf", "CONF", "Client configuration: %s", ", ".join(f"{name}={value}" for name, value in shown.items()))
        if self.ignored:
            self.log.warning("CONFWARN", "Configuration properties ignored by Weir (they have no meaning for its gRPC data plane): %s", ", ".join(self.ignored))

    def _check_together(self) -> None:
        values = self._values
        if not values["bootstrap.servers"]:
            raise invalid_argument('Configuration property "bootstrap.servers" must be set')
        if self.role == PRODUCER and values["transactional.id"]:
            self._check_transactional(values)
        if self.role == PRODUCER and values["enable.idempotence"]:
            if values["acks"] != -1:
                raise invalid_argument(
                    '"acks" must be set to "all" (-1) when "enable.idempotence" is true; set enable.idempotence=false to use acks=0 or acks=1'
                )
            if values["max.in.flight.requests.per.connection"] > 5:
                raise invalid_argument('"max.in.flight.requests.per.connection" must be at most 5 when "enable.idempotence" is true')
        if values["retry.backoff.max.ms"] < values["retry.backoff.ms"]:
            raise invalid_argument('"retry.backoff.max.ms" must not be below "retry.backoff.ms"')

    def _check_transactional(self, values: dict[str, Any]) -> None:
        """librdkafka's rules: a transactional producer is idempotent, and no record may outlive its transaction."""
        if not values["enable.idempotence"] and self.is_set("enable.idempotence"):
            raise invalid_argument('"transactional.id" requires "enable.idempotence" to be true')
        values["enable.idempotence"] = True  # implied, as librdkafka does
        if "delivery.timeout.ms" not in self._explicit:
            values["delivery.timeout.ms"] = values["transaction.timeout.ms"]
        elif values["delivery.timeout.ms"] > values["transaction.timeout.ms"]:
            raise invalid_argument('"message.timeout.ms" (delivery.timeout.ms) must not exceed "transaction.timeout.ms"')

    def __getitem__(self, name: str) -> Any:
        return self._values[name]

    def is_set(self, name: str) -> bool:
        """Whether the application gave ``name`` (canonical name) rather than leaving its default."""
        return name in self._explicit

    def bootstrap_addresses(self) -> list[str]:
        """The bootstrap.servers list as host:port strings (port 9092 when omitted)."""
        addresses = []
        for entry in self._values["bootstrap.servers"].split(","):
            entry = entry.strip()
            if not entry:
                continue
            if "://" in entry:
                entry = entry.split("://", 1)[1]
            if ":" not in entry.rsplit("]", 1)[-1]:
                entry = f"{entry}:9092"
            addresses.append(entry)
        if not addresses:
            raise invalid_argument('Configuration property "bootstrap.servers" lists no broker')
        return addresses

    def call_metadata(self) -> tuple[tuple[str, str], ...]:
        """gRPC metadata sent with every call: whichever credentials are configured (API key and secret, internal token, tenant token)."""
        pairs = []
        if self._values["sasl.username"] is not None:
            pairs.append(("x-weir-api-key", self._values["sasl.username"]))
        if self._values["sasl.password"] is not None:
            pairs.append(("x-weir-api-secret", self._values["sasl.password"]))
        if self._values["weir.internal.token"] is not None:
            pairs.append(("x-weir-internal-token", self._values["weir.internal.token"]))
        if self._values["weir.tenant.token"] is not None:
            pairs.append((TENANT_TOKEN_HEADER, self._values["weir.tenant.token"]))
        return tuple(pairs)

    def channel_credentials(self) -> Any:
        """grpc.ChannelCredentials for TLS (security.protocol ssl / sasl_ssl), None for plaintext.

        The CA comes from ``ssl.ca.pem`` or ``ssl.ca.location`` (else the system's roots); a
        client certificate and key (``ssl.certificate.*`` / ``ssl.key.*``) are presented when
        given. With ``enable.ssl.certificate.verification=false`` the certificate the first
        bootstrap broker presents is trusted as it is. Raises KafkaException ``_INVALID_ARG``
        when a file cannot be read or only one of certificate and key is given.
        """
        if self._values["security.protocol"] not in TLS_PROTOCOLS:
            return None
        import grpc

        roots = self._pem("ssl.ca.pem", "ssl.ca.location")
        if not self._values["enable.ssl.certificate.verification"]:
            roots = self._presented_certificate()
        certificate = self._pem("ssl.certificate.pem", "ssl.certificate.location")
        key = self._pem("ssl.key.pem", "ssl.key.location")
        if (certificate is None) != (key is None):
            raise invalid_argument('A client certificate needs both "ssl.certificate.location" (or .pem) and "ssl.key.location" (or .pem)')
        return grpc.ssl_channel_credentials(root_certificates=roots, private_key=key, certificate_chain=certificate)

    def _pem(self, pem_name: str, location_name: str) -> bytes | None:
        """The PEM bytes given inline (``pem_name``) or as a file (``location_name``), or None."""
        if self._values[pem_name] is not None:
            return str(self._values[pem_name]).encode()
        location = self._values[location_name]
        if location is None:
            return None
        try:
            with open(location, "rb") as handle:
                return handle.read()
        except OSError as error:
            raise invalid_argument(f'Configuration property "{location_name}": cannot read {location}: {error.strerror}') from None

    def _presented_certificate(self) -> bytes:
        """The certificate the first bootstrap broker presents (no verification), to trust it as it is."""
        import ssl

        address = self.bootstrap_addresses()[0]
        host, _, port = address.rpartition(":")
        try:
            return ssl.get_server_certificate((host.strip("[]"), int(port)), timeout=self._values["socket.connection.setup.timeout.ms"] / 1000.0).encode()
        except (OSError, ValueError) as error:
            raise KafkaException(KafkaError(KafkaError._TRANSPORT, f"cannot fetch the TLS certificate of {address}: {error}")) from None

"""Broker settings: Kafka's names, one documented table of defaults, parsed once at startup.

A setting's value comes from, in order of precedence: ``--config key=value`` on the command
line, the environment variable ``WEIR_BROKER_<KEY>`` (the key upper-cased, dots turned into
underscores: ``WEIR_BROKER_AUTO_CREATE_TOPICS_ENABLE=true``), then the default below.

Settings named ``log.*`` (and ``message.max.bytes``, ``compression.type``, ...) are the
broker-wide defaults of topic configs, as in Kafka: a topic without an override of
``segment.bytes`` gets ``log.segment.bytes``. Their defaults are taken from the topic config
table in ``weir.topic_config`` so that each default is written down once.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

from weir.topic_config import TOPIC_CONFIGS, ConfigKey, InvalidConfigError

ENVIRONMENT_PREFIX = "WEIR_BROKER_"  # WEIR_BROKER_<KEY upper, dots to underscores>
INTERNAL_TOKEN_VARIABLE = "WEIR_INTERNAL_TOKEN"  # the internal token, unless --internal-token-file is given
# Stack-level variables that share the prefix but configure the launcher (`make up`), not a
# broker: brokers ignore them instead of refusing them as unknown settings.
STACK_VARIABLES = frozenset({"WEIR_BROKER_BASE_PORT", "WEIR_BROKER_TLS_CA"})

# Broker setting -> the topic config it provides the broker-wide default for (Kafka's names).
TOPIC_DEFAULT_SETTINGS: Mapping[str, str] = MappingProxyType(
    {
        "log.cleanup.policy": "cleanup.policy",
        "compression.type": "compression.type",
        "log.cleaner.delete.retention.ms": "delete.retention.ms",
        "log.segment.delete.delay.ms": "file.delete.delay.ms",
        "log.flush.interval.messages": "flush.messages",
        "log.flush.interval.ms": "flush.ms",
        "log.index.interval.bytes": "index.interval.bytes",
        "log.cleaner.max.compaction.lag.ms": "max.compaction.lag.ms",
        "message.max.bytes": "max.message.bytes",
        "log.message.timestamp.type": "message.timestamp.type",
        "log.message.timestamp.before.max.ms": "message.timestamp.before.max.ms",
        "log.message.timestamp.after.max.ms": "message.timestamp.after.max.ms",
        "log.cleaner.min.cleanable.ratio": "min.cleanable.dirty.ratio",
        "log.cleaner.min.compaction.lag.ms": "min.compaction.lag.ms",
        "min.insync.replicas": "min.insync.replicas",
        "log.retention.bytes": "retention.bytes",
        "log.retention.ms": "retention.ms",
        "log.segment.bytes": "segment.bytes",
        "log.index.size.max.bytes": "segment.index.bytes",
        "log.roll.jitter.ms": "segment.jitter.ms",
        "log.roll.ms": "segment.ms",
        "unclean.leader.election.enable": "unclean.leader.election.enable",
    }
)


def _topic_default(setting: str) -> ConfigKey:
    topic_key = TOPIC_CONFIGS[TOPIC_DEFAULT_SETTINGS[setting]]
    return ConfigKey(
        setting,
        topic_key.type,
        topic_key.default,
        f"Default of the topic config {topic_key.name}: {topic_key.documentation}",
        minimum=topic_key.minimum,
        maximum=topic_key.maximum,
        choices=topic_key.choices,
    )


_MIB = 1024 * 1024
# What a gRPC message may carry beyond max.request.size: the request's protobuf fields around
# the record bytes (topic names, partition numbers, a transactional id) and gRPC's 5-byte prefix.
REQUEST_FRAMING_BYTES = 64 * 1024

# The documented table of every broker setting.
BROKER_SETTINGS: Mapping[str, ConfigKey] = MappingProxyType(
    {
        key.name: key
        for key in [
            ConfigKey("auto.create.topics.enable", "BOOLEAN", "false", "Create a topic when a client asks for its metadata with allow_auto_topic_creation."),
            ConfigKey("num.partitions", "INT", "1", "Partition count of topics created without one (auto-created or num_partitions -1).", minimum=1),
            ConfigKey("default.replication.factor", "INT", "1", "Replication factor of topics created without one.", minimum=1),
            ConfigKey(
                "max.request.size",
                "INT",
                str(8 * _MIB),
                "Largest total of record bytes one Produce request may carry; the broker receives no gRPC message larger than this "
                "plus 64 KiB of framing (any service, before credentials are checked), so no caller can make it buffer more per request. "
                "8 MiB: eight batches of Kafka's default max.message.bytes (1 MiB), while the SDK sends at most message.max.bytes "
                "(1,000,000) per request; Kafka's 100 MiB socket.request.max.bytes let eight callers take gigabytes.",
                minimum=1024,
            ),
            ConfigKey(
                "socket.request.max.bytes",
                "INT",
                str(100 * _MIB),
                "Largest gRPC message the broker sends (Fetch and ReplicaFetch answers), and receives on its own channels to other brokers and the controller; "
                "largest Kafka-protocol request frame the Kafka listener accepts (its size prefix is checked before anything is allocated).",
                minimum=1024,
            ),
            ConfigKey(
                "queued.max.request.bytes",
                "INT",
                str(32 * _MIB),
                "Bytes of Broker-service requests the broker holds in flight at most (Kafka's name): a request takes its size before "
                "its handler runs and gives it back when answered; without room it waits queued.max.request.wait.ms, then is refused "
                "with THROTTLING_QUOTA_EXCEEDED, which clients retry. 32 MiB, four maximum-size requests: a request costs a few times "
                "its size in memory while handled, so this bounds that memory to some 100 MB, and leaves room for small requests "
                "beside three maximum-size ones. A request larger than this waits until nothing else is in flight.",
                minimum=1024,
            ),
            ConfigKey(
                "queued.max.request.wait.ms",
                "INT",
                "500",
                "Longest a request waits for room in queued.max.request.bytes before it is refused (retriable). A waiting request "
                "holds a request thread, so at most half of num.io.threads wait at once; the others are refused at once.",
                minimum=0,
            ),
            ConfigKey(
                "fetch.max.bytes", "INT", str(55 * _MIB), "Largest total of record bytes one Fetch answers with (requests may ask for less).", minimum=1024
            ),
            ConfigKey(
                "max.partition.fetch.bytes",
                "INT",
                str(_MIB),
                "Record bytes per partition a Fetch returns when the request leaves partition_max_bytes at 0.",
                minimum=1,
            ),
            ConfigKey("replica.lag.time.max.ms", "LONG", "30000", "A follower not caught up with the leader for this long leaves the ISR.", minimum=1),
            ConfigKey("replica.fetch.wait.max.ms", "INT", "500", "Longest a follower's fetch waits at the leader for new records (long poll).", minimum=0),
            ConfigKey("replica.fetch.backoff.ms", "INT", "1000", "Pause of a follower's fetcher after an error.", minimum=0),
            ConfigKey(
                "request.timeout.ms",
                "INT",
                "30000",
                "Longest an acks=all produce waits for the in-sync replicas when the request sets no timeout_ms.",
                minimum=1,
            ),
            ConfigKey("replica.fetch.max.bytes", "INT", str(_MIB), "Record bytes per partition a follower fetches in one request.", minimum=1),
            ConfigKey("offsets.topic.num.partitions", "INT", "50", "Partition count of the internal topic __consumer_offsets when it is created.", minimum=1),
            ConfigKey(
                "offsets.topic.segment.bytes",
                "INT",
                str(100 * _MIB),
                "segment.bytes of the internal topic __consumer_offsets when it is created.",
                minimum=1024,
            ),
            ConfigKey("offsets.retention.minutes", "INT", "10080", "Committed offsets older than this are removed.", minimum=1),
            ConfigKey("offsets.retention.check.interval.ms", "LONG", "600000", "How often committed offsets are checked for expiry.", minimum=1),
            ConfigKey("offset.metadata.max.bytes", "INT", "4096", "Largest metadata string a committed offset may carry.", minimum=0),
            ConfigKey(
                "transaction.state.log.num.partitions",
                "INT",
                "50",
                "Partition count of the internal topic __transaction_state when a standalone broker creates it.",
                minimum=1,
            ),
            ConfigKey("transaction.max.timeout.ms", "INT", "900000", "Largest transaction.timeout.ms a transactional producer may ask for.", minimum=1),
            ConfigKey(
                "transactional.id.expiration.ms",
                "INT",
                "604800000",
                "A transactional id without a transaction for this long is removed from __transaction_state.",
                minimum=1,
            ),
            ConfigKey(
                "transaction.abort.timed.out.transaction.cleanup.interval.ms",
                "INT",
                "10000",
                "How often the transaction coordinator aborts transactions open longer than their timeout.",
                minimum=1,
            ),
            ConfigKey(
                "transaction.remove.expired.transaction.cleanup.interval.ms",
                "INT",
                "3600000",
                "How often the transaction coordinator removes expired transactional ids.",
                minimum=1,
            ),
            ConfigKey(
                "group.consumer.session.timeout.ms",
                "INT",
                "45000",
                "Session timeout of a group member that asks for none: no heartbeat for this long removes it.",
                minimum=1,
            ),
            ConfigKey(
                "group.consumer.min.session.timeout.ms",
                "INT",
                "1000",
                "Shortest session timeout a member may ask for (INVALID_SESSION_TIMEOUT below).",
                minimum=1,
            ),
            ConfigKey(
                "group.consumer.max.session.timeout.ms",
                "INT",
                "60000",
                "Longest session timeout a member may ask for (INVALID_SESSION_TIMEOUT above).",
                minimum=1,
            ),
            ConfigKey(
                "group.consumer.heartbeat.interval.ms",
                "INT",
                "5000",
                "How often members are told to heartbeat (at most a third of their session timeout); revocations and new assignments travel with heartbeats.",
                minimum=1,
            ),
            ConfigKey("group.consumer.max.size", "INT", str(2**31 - 1), "Most members a consumer group may have (GROUP_MAX_SIZE_REACHED beyond).", minimum=1),
            ConfigKey(
                "group.consumer.assignors",
                "LIST",
                "sticky,range,roundrobin",
                "Server-side assignors members may choose (partition.assignment.strategy); the first is used when members choose none. "
                "sticky is Kafka's uniform assignor.",
                choices=("sticky", "range", "roundrobin"),
            ),
            ConfigKey(
                "group.min.session.timeout.ms",
                "INT",
                "6000",
                "Shortest session timeout a classic group member (JoinGroup) may ask for (INVALID_SESSION_TIMEOUT below).",
                minimum=1,
            ),
            ConfigKey(
                "group.max.session.timeout.ms",
                "INT",
                "1800000",
                "Longest session timeout a classic group member (JoinGroup) may ask for (INVALID_SESSION_TIMEOUT above).",
                minimum=1,
            ),
            ConfigKey(
                "group.initial.rebalance.delay.ms",
                "INT",
                "3000",
                "How long a classic group leaving Empty waits for more members before its first rebalance completes (fewer rebalances when many start at once).",
                minimum=0,
            ),
            ConfigKey("group.max.size", "INT", str(2**31 - 1), "Most members a classic group may have (GROUP_MAX_SIZE_REACHED beyond).", minimum=1),
            ConfigKey("log.retention.check.interval.ms", "LONG", "300000", "How often log retention (and compaction) runs.", minimum=1),
            ConfigKey("log.flush.scheduler.interval.ms", "LONG", "1000", "How often logs are checked for a flush due by flush.ms.", minimum=1),
            ConfigKey("log.cleaner.enable", "BOOLEAN", "true", "Run the log cleaner that compacts topics with cleanup.policy=compact."),
            ConfigKey("log.cleaner.backoff.ms", "LONG", "15000", "Pause of the log cleaner when no log needs compaction.", minimum=0),
            ConfigKey(
                "log.max.open.files",
                "INT",
                "1024",
                "File descriptors of segment files the broker keeps open at most (least recently used are closed).",
                minimum=16,
            ),
            ConfigKey("num.io.threads", "INT", "16", "Threads that handle requests (the gRPC thread pool).", minimum=1),
            ConfigKey(
                "fetch.streams.max",
                "INT",
                "32",
                "Consumers' FetchStream calls the broker serves at once. A stream holds a request thread for its life (the pool has "
                "one thread more per stream, beside num.io.threads), and one stream serves one consumer's fetches from this broker; "
                "beyond the limit a new stream is refused RESOURCE_EXHAUSTED and its client uses unary Fetch. 0: no fetch streams.",
                minimum=0,
            ),
            ConfigKey(
                "metering.enabled",
                "BOOLEAN",
                "true",
                "Count clients' traffic per tenant, topic and partition and append usage rows to __usage every metering.interval.ms.",
            ),
            ConfigKey(
                "metering.interval.ms",
                "LONG",
                "60000",
                "Length of a usage metering window; windows are aligned to multiples of it in wall-clock time (docs/usage-schema.md).",
                minimum=100,
            ),
            ConfigKey(
                "metering.backlog.max.rows",
                "INT",
                "100000",
                "Usage rows kept (in memory and under the data directory) while __usage does not acknowledge them; beyond, the oldest windows are dropped with a warning.",
                minimum=1,
            ),
            ConfigKey(
                "controller.quorum.bootstrap.servers",
                "LIST",
                "",
                "HOST:PORT of the controllers (comma-separated; --controller). Empty: no controller, the broker takes cluster maps from ApplyPartitions pushes only.",
            ),
            ConfigKey(
                "broker.heartbeat.interval.ms",
                "INT",
                "2000",
                "How often the broker heartbeats to the controller (well within the controller's broker.session.timeout.ms).",
                minimum=10,
            ),
            ConfigKey(
                "controlled.shutdown.enable",
                "BOOLEAN",
                "true",
                "On SIGTERM, ask the controller to move this broker's leaderships to other in-sync replicas before stopping.",
            ),
            ConfigKey(
                "controlled.shutdown.timeout.ms", "LONG", "30000", "Longest a controlled shutdown waits for the controller to move leaderships away.", minimum=0
            ),
            ConfigKey(
                "metrics.port",
                "INT",
                "0",
                "Port of the Prometheus /metrics HTTP endpoint on the listen host (--metrics-port); 0: no endpoint.",
                minimum=0,
                maximum=65535,
            ),
            ConfigKey(
                "kafka.listen",
                "STRING",
                "",
                "HOST:PORT of the Kafka-protocol listener (--kafka-listen; port 0: any free port); empty: the broker speaks gRPC only.",
            ),
            ConfigKey(
                "kafka.advertised.port",
                "INT",
                "0",
                "Port Kafka clients are told to connect to (Metadata); 0: the port kafka.listen bound.",
                minimum=0,
                maximum=65535,
            ),
            ConfigKey(
                "kafka.handler.threads",
                "INT",
                "32",
                "Threads that run the Kafka-protocol requests that answer at once (ApiVersions, Heartbeat, OffsetFetch, ListOffsets, describes); "
                "requests that may wait never take them, so heartbeats are not queued behind long polls.",
                minimum=1,
            ),
            ConfigKey(
                "kafka.waiting.handler.threads",
                "INT",
                "32",
                "Threads that run the Kafka-protocol requests that may wait. Long-poll Fetch, acks=all Produce and JoinGroup/SyncGroup "
                "take one only for their short steps and wait on the listener's event loop without a thread; offset commits, "
                "DeleteRecords and administration forwarded to the controller still hold one while they wait.",
                minimum=1,
            ),
            ConfigKey(
                "max.connections",
                "INT",
                "10000",
                "Kafka-protocol connections the broker keeps open at most; one beyond is closed as it is accepted.",
                minimum=1,
            ),
            ConfigKey(
                "connections.max.idle.ms",
                "LONG",
                "600000",
                "A Kafka-protocol connection that sends no request for this long is closed; a gRPC request stream (ProduceStream, "
                "ReplicaFetchStream) that sends none for this long is ended by the broker (the client opens another when it needs one).",
                minimum=1,
            ),
            ConfigKey(
                "connections.keepalive.time.ms",
                "LONG",
                "10000",
                "While a call on the gRPC port is open (a produce or replica fetch stream, a long poll), the broker pings the client's "
                "connection after this long without a frame from it.",
                minimum=1000,
            ),
            ConfigKey(
                "connections.keepalive.timeout.ms",
                "LONG",
                "5000",
                "A gRPC connection whose ping is not acknowledged within this long is closed: the calls of a client that froze "
                "(SIGSTOP) or vanished (power loss, a partition) end and give their request threads back.",
                minimum=100,
            ),
            ConfigKey(
                "kafka.request.read.timeout.ms",
                "INT",
                "30000",
                "Longest the Kafka listener waits for the rest of a request once its first bytes came (and for a client to take a "
                "response, and for a TLS handshake); a client that stalls mid-request is disconnected.",
                minimum=1,
            ),
            ConfigKey(
                "security.required",
                "BOOLEAN",
                "false",
                "Every Broker-service call must carry a cluster API key pushed by the control plane (or the internal token); off: standalone, no authentication.",
            ),
            *(_topic_default(setting) for setting in TOPIC_DEFAULT_SETTINGS),
        ]
    }
)


def environment_variable(setting: str) -> str:
    """``WEIR_BROKER_AUTO_CREATE_TOPICS_ENABLE`` for ``auto.create.topics.enable``."""
    return ENVIRONMENT_PREFIX + setting.upper().replace(".", "_")


_SETTINGS_BY_ENVIRONMENT_VARIABLE = {environment_variable(name): name for name in BROKER_SETTINGS}


class BrokerConfigError(ValueError):
    """A broker setting that does not exist or a value that does not parse (the process exits 2)."""

    retriable = False

    def __init__(self, source: str, reason: str) -> None:
        super().__init__(f"{source}: {reason}")
        self.source = source
        self.reason = reason


@dataclass(frozen=True)
class ListenAddress:
    host: str
    port: int  # 0 asks the operating system for a free port

    @classmethod
    def parse(cls, text: str, source: str = "--listen") -> ListenAddress:
        """Parse ``HOST:PORT`` (``[::1]:9092`` for IPv6); raise BrokerConfigError naming the problem (and ``source``)."""
        host, separator, port_text = text.rpartition(":")
        if not separator or not host or not port_text.isdigit() or int(port_text) > 65535:
            raise BrokerConfigError(source, f"expected HOST:PORT with a port from 0 to 65535, not {text!r}")
        return cls(host.strip("[]"), int(port_text))


@dataclass(frozen=True)
class BrokerConfig:
    """Everything one broker process is configured with. Immutable; safe to share between threads.

    ``values`` holds every setting of :data:`BROKER_SETTINGS`, typed; ``explicit`` names those
    set on the command line or in the environment (they describe as STATIC_BROKER_CONFIG).
    """

    node_id: int
    listen: ListenAddress
    data_dir: Path
    rack: str = ""
    advertised_host: str = ""
    values: Mapping[str, object] = field(default_factory=lambda: MappingProxyType(_default_values()))
    explicit: frozenset[str] = frozenset()
    # The secret the control plane and brokers share (WEIR_INTERNAL_TOKEN or --internal-token-file);
    # empty: the Admin service refuses every call and no caller is internal.
    internal_token: str = field(default="", repr=False)
    tls_cert: Path | None = None  # PEM certificate chain; with tls_key the broker serves TLS only
    tls_key: Path | None = None
    # PEM CA certificates that verify other brokers and the controller; set: the broker's own
    # calls to them use TLS (server.channels), unset: plaintext. Required with tls_cert.
    tls_ca: Path | None = None

    def __getitem__(self, setting: str) -> object:
        return self.values[setting]

    def integer(self, setting: str) -> int:
        """The value of an INT or LONG setting, typed."""
        return _integer(self.values, setting)

    def strings(self, setting: str) -> tuple[str, ...]:
        """The value of a LIST setting, typed."""
        value = self.values[setting]
        if not isinstance(value, tuple | list | frozenset | set):
            raise TypeError(f"broker setting {setting!r} is {value!r}, not a list")
        return tuple(value)

    @property
    def host_for_clients(self) -> str:
        """The host clients are told to connect to (Metadata)."""
        if self.advertised_host:
            return self.advertised_host
        if self.listen.host in ("0.0.0.0", "::"):
            return "localhost"
        return self.listen.host

    @property
    def kafka_listen(self) -> ListenAddress | None:
        """Where the Kafka-protocol listener binds (``kafka.listen``), or None when the broker has none."""
        text = str(self.values["kafka.listen"]).strip()
        return ListenAddress.parse(text, "kafka.listen (--kafka-listen)") if text else None

    def topic_config_defaults(self) -> dict[str, str]:
        """Topic config name -> the broker-wide default set for it explicitly (as text).

        Topic configs missing here fall back to the defaults of ``weir.topic_config``.
        """
        return {TOPIC_DEFAULT_SETTINGS[setting]: format_config_value(self.values[setting]) for setting in self.explicit if setting in TOPIC_DEFAULT_SETTINGS}

    def describe_value(self, setting: str) -> str:
        return format_config_value(self.values[setting])


def largest_request_bytes(config: BrokerConfig) -> int:
    """The largest gRPC message the broker's server receives: max.request.size plus framing."""
    return config.integer("max.request.size") + REQUEST_FRAMING_BYTES


def _integer(values: Mapping[str, object], setting: str) -> int:
    value = values[setting]
    if not isinstance(value, int | float | str):
        raise TypeError(f"broker setting {setting!r} is {value!r}, not a number")
    return int(value)


def _default_values() -> dict[str, object]:
    return {name: key.default_value for name, key in BROKER_SETTINGS.items()}


def format_config_value(value: object) -> str:
    """A typed config value as Kafka writes it: ``true``, ``compact,delete``, ``0.5``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (tuple, list, frozenset, set)):
        return ",".join(str(member) for member in value)
    return str(value)


def parse_settings(command_line: list[str], environment: Mapping[str, str]) -> tuple[dict[str, object], frozenset[str]]:
    """Typed values of every broker setting, and the names set explicitly.

    ``command_line`` holds the ``key=value`` texts of ``--config``; ``environment`` is the
    process environment (only ``WEIR_BROKER_*`` variables are read). Raises
    BrokerConfigError for an unknown key, a text without ``=``, or a bad value.
    """
    raw: dict[str, tuple[str, str]] = {}
    for variable, text in environment.items():
        if not variable.startswith(ENVIRONMENT_PREFIX) or variable in STACK_VARIABLES:
            continue
        setting = _SETTINGS_BY_ENVIRONMENT_VARIABLE.get(variable)
        if setting is None:
            raise BrokerConfigError(variable, "no broker setting has this environment variable")
        raw[setting] = (variable, text)
    for assignment in command_line:
        setting, separator, text = assignment.partition("=")
        setting = setting.strip()
        if not separator:
            raise BrokerConfigError(f"--config {assignment}", "expected key=value")
        if setting not in BROKER_SETTINGS:
            raise BrokerConfigError(f"--config {assignment}", f"unknown broker setting {setting!r}")
        raw[setting] = (f"--config {assignment}", text)
    values = _default_values()
    for setting, (source, text) in raw.items():
        try:
            values[setting] = BROKER_SETTINGS[setting].parse(text)
        except InvalidConfigError as error:
            raise BrokerConfigError(source, error.reason + f" (setting {setting}, value {text!r})") from None
    return values, frozenset(raw)


def _check_session_timeouts(values: Mapping[str, object]) -> None:
    """The default session timeout of group members must lie within the range members may ask for."""
    minimum = _integer(values, "group.consumer.min.session.timeout.ms")
    default = _integer(values, "group.consumer.session.timeout.ms")
    maximum = _integer(values, "group.consumer.max.session.timeout.ms")
    if not minimum <= default <= maximum:
        raise BrokerConfigError(
            "group.consumer.session.timeout.ms",
            f"{default} must lie between group.consumer.min.session.timeout.ms={minimum} and group.consumer.max.session.timeout.ms={maximum}",
        )


def load_broker_config(
    *,
    node_id: int,
    listen: str,
    data_dir: str | Path,
    rack: str = "",
    advertised_host: str = "",
    configs: list[str] | None = None,
    environment: Mapping[str, str] | None = None,
    internal_token_file: str | Path | None = None,
    tls_cert: str | Path | None = None,
    tls_key: str | Path | None = None,
    tls_ca: str | Path | None = None,
) -> BrokerConfig:
    """Build a BrokerConfig from command-line style inputs; raise BrokerConfigError on bad input.

    The internal token comes from ``internal_token_file`` when given, else from the
    environment variable WEIR_INTERNAL_TOKEN. A broker serving TLS (``tls_cert``) needs
    ``tls_ca``: its peers serve TLS too, and it must verify them.
    """
    if node_id < 0:
        raise BrokerConfigError("--node-id", f"must be 0 or more, not {node_id}")
    if (tls_cert is None) != (tls_key is None):
        raise BrokerConfigError("--tls-cert/--tls-key", "give both the certificate and its private key, or neither")
    if tls_cert is not None and tls_ca is None:
        raise BrokerConfigError("--tls-ca", "a TLS broker needs --tls-ca to verify other brokers and the controller")
    if tls_ca is not None and not Path(tls_ca).is_file():
        raise BrokerConfigError("--tls-ca", f"{tls_ca} is not a readable file of CA certificates")
    environment = environment or {}
    internal_token = environment.get(INTERNAL_TOKEN_VARIABLE, "").strip()
    if internal_token_file is not None:
        try:
            internal_token = Path(internal_token_file).read_text(encoding="utf-8").strip()
        except OSError as error:
            raise BrokerConfigError("--internal-token-file", f"cannot read {internal_token_file}: {error.strerror}") from None
        if not internal_token:
            raise BrokerConfigError("--internal-token-file", f"{internal_token_file} is empty")
    values, explicit = parse_settings(list(configs or []), environment)
    _check_session_timeouts(values)
    kafka_listen = str(values["kafka.listen"]).strip()
    if kafka_listen:
        ListenAddress.parse(kafka_listen, "kafka.listen (--kafka-listen)")
    return BrokerConfig(
        node_id=node_id,
        listen=ListenAddress.parse(listen),
        data_dir=Path(data_dir),
        rack=rack,
        advertised_host=advertised_host,
        values=MappingProxyType(values),
        explicit=explicit,
        internal_token=internal_token,
        tls_cert=Path(tls_cert) if tls_cert is not None else None,
        tls_key=Path(tls_key) if tls_key is not None else None,
        tls_ca=Path(tls_ca) if tls_ca is not None else None,
    )

"""The client's view of the cluster: bootstrap, the metadata cache and one gRPC channel per broker.

Every client (Producer, Consumer, AdminClient) owns one :class:`Cluster`. It asks any broker
of ``bootstrap.servers`` (then any broker it has learnt of) for the cluster map, caches
topics and their partition leaders, and opens one channel per broker address, reused by
every call. Every call carries the API key and secret as gRPC metadata. Transport failures
become the retriable ``_TRANSPORT`` KafkaError and mark the cache stale, so the next
lookup refreshes it.

Committed offsets go to one broker per group (until consumer groups bring FindCoordinator):
every broker keeps its own ``__consumer_offsets``, so OffsetCommit and OffsetFetch of group G
must always reach the same broker. :meth:`Cluster.call_coordinator` sends them to
``brokers sorted by node id [abs(java_string_hash_code(G)) % broker count]`` of the current
metadata, and on a transport error or NOT_COORDINATOR refreshes the metadata and tries again
(at most ``COORDINATOR_ATTEMPTS`` times within the call's timeout).

Also here: confluent-kafka's metadata result classes (``ClusterMetadata`` and friends)
returned by ``list_topics()``.

Thread-safety: every method may be called from any thread. The topic cache is replaced
wholesale under a lock and read without one (a dict swap is atomic in CPython), which keeps
lookups on produce()'s hot path lock-free.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Iterable

import grpc

from grpc_protos.weir.v1 import broker_pb2, broker_pb2_grpc
from weir.config import ClientConfig
from weir.errors import ErrorCode, KafkaError, KafkaException

# Largest gRPC message either way: Kafka's max.request.size / socket.request.max.bytes default.
MAX_MESSAGE_BYTES = 104857600 + 1024 * 1024
# Tries of one coordinator call: the first, then one per metadata refresh after a transport
# error or NOT_COORDINATOR. Enough to ride out one broker leaving the cluster map.
COORDINATOR_ATTEMPTS = 3
# Answers of a coordinator call that newer metadata may fix (the broker map changed).
COORDINATOR_MOVED = frozenset({ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR})  # type: ignore[attr-defined]


def java_string_hash_code(text: str) -> int:
    """Java's ``String.hashCode()``: s[0]*31^(n-1) + ... + s[n-1] over UTF-16 code units, as int32.

    The same function Kafka (and Weir's brokers) use to place a group, so that a group lands
    on the same coordinator whichever client computes it.
    """
    hash_code = 0
    encoded = text.encode("utf-16-be")
    for index in range(0, len(encoded), 2):
        hash_code = (31 * hash_code + ((encoded[index] << 8) | encoded[index + 1])) & 0xFFFFFFFF
    return hash_code - (1 << 32) if hash_code >= 1 << 31 else hash_code


def coordinator_index(group_id: str, broker_count: int) -> int:
    """Index, among the brokers sorted by node id, of the broker that keeps ``group_id``'s offsets.

    ``Utils.abs(hashCode) % count`` as Kafka computes it, where Utils.abs is ``value & 0x7fffffff``
    (Integer.MIN_VALUE maps to 0 instead of staying negative).
    """
    if broker_count < 1:
        raise ValueError("a coordinator needs at least one broker")
    return (java_string_hash_code(group_id) & 0x7FFFFFFF) % broker_count


# ---------------------------------------------------------------------- result classes


class BrokerMetadata:
    """One broker: ``id``, ``host``, ``port`` (confluent-kafka's BrokerMetadata)."""

    def __init__(self, broker_id: int = -1, host: str | None = None, port: int = -1) -> None:
        self.id = broker_id
        self.host = host
        self.port = port

    def __repr__(self) -> str:
        return f"BrokerMetadata({self.id}, {self.host}:{self.port})"

    def __str__(self) -> str:
        return f"{self.host}:{self.port}/{self.id}"


class PartitionMetadata:
    """One partition: ``id``, ``leader``, ``replicas``, ``isrs``, ``error`` (KafkaError or None)."""

    def __init__(self) -> None:
        self.id = -1
        self.leader = -1
        self.replicas: list[int] = []
        self.isrs: list[int] = []
        self.error: KafkaError | None = None

    def __repr__(self) -> str:
        error = f", error={self.error}" if self.error else ""
        return f"PartitionMetadata({self.id}, leader={self.leader}{error})"


class TopicMetadata:
    """One topic: ``topic``, ``partitions`` {id: PartitionMetadata}, ``error`` (KafkaError or None)."""

    def __init__(self) -> None:
        self.topic: str | None = None
        self.partitions: dict[int, PartitionMetadata] = {}
        self.error: KafkaError | None = None

    def __repr__(self) -> str:
        error = f", error={self.error}" if self.error else ""
        return f"TopicMetadata({self.topic}, {len(self.partitions)} partitions{error})"

    def __str__(self) -> str:
        return str(self.topic)


class ClusterMetadata:
    """``cluster_id``, ``controller_id``, ``brokers`` {id: BrokerMetadata}, ``topics`` {name: TopicMetadata}."""

    def __init__(self) -> None:
        self.cluster_id: str | None = None
        self.controller_id = -1
        self.brokers: dict[int, BrokerMetadata] = {}
        self.topics: dict[str, TopicMetadata] = {}
        self.orig_broker_id = -1
        self.orig_broker_name: str | None = None

    def __repr__(self) -> str:
        return f"ClusterMetadata({self.cluster_id})"


# ---------------------------------------------------------------------- cache entries


class TopicInfo:
    """What the client caches of one topic. Immutable once built.

    ``error_code`` is the topic-level Kafka error (0 when the topic exists);
    ``leaders[p]`` is the node id leading partition p (-1 without a leader).
    """

    __slots__ = ("name", "error_code", "error_message", "partition_count", "leaders", "leader_epochs", "fetched_at")

    def __init__(self, name: str, error_code: int, error_message: str, leaders: tuple[int, ...], leader_epochs: tuple[int, ...], fetched_at: float) -> None:
        self.name = name
        self.error_code = error_code
        self.error_message = error_message
        self.partition_count = len(leaders)
        self.leaders = leaders
        self.leader_epochs = leader_epochs
        self.fetched_at = fetched_at


def error_from_rpc(error: grpc.RpcError, what: str) -> KafkaError:
    """The KafkaError a failed gRPC call stands for; ``what`` names the call for the message."""
    code = error.code() if hasattr(error, "code") else None
    details = error.details() if hasattr(error, "details") else str(error)
    if code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED, grpc.StatusCode.UNKNOWN, grpc.StatusCode.INTERNAL, grpc.StatusCode.ABORTED):
        return KafkaError(KafkaError._TRANSPORT, f"{what}: broker transport failure: {details}")  # type: ignore[attr-defined]
    if code == grpc.StatusCode.DEADLINE_EXCEEDED:
        return KafkaError(KafkaError._TIMED_OUT, f"{what}: timed out: {details}")  # type: ignore[attr-defined]
    if code == grpc.StatusCode.UNAUTHENTICATED:
        return KafkaError(KafkaError._AUTHENTICATION, f"{what}: {details}")  # type: ignore[attr-defined]
    if code == grpc.StatusCode.PERMISSION_DENIED:
        return KafkaError(ErrorCode.CLUSTER_AUTHORIZATION_FAILED, f"{what}: {details}")  # type: ignore[attr-defined]
    if code == grpc.StatusCode.RESOURCE_EXHAUSTED:
        return KafkaError(ErrorCode.MESSAGE_TOO_LARGE, f"{what}: {details}")  # type: ignore[attr-defined]
    if code == grpc.StatusCode.INVALID_ARGUMENT:
        return KafkaError(KafkaError._INVALID_ARG, f"{what}: {details}")  # type: ignore[attr-defined]
    return KafkaError(KafkaError._FAIL, f"{what}: {code}: {details}")  # type: ignore[attr-defined]


class Cluster:
    """Bootstrap, metadata cache and broker channels of one client (see module docstring)."""

    def __init__(self, config: ClientConfig) -> None:
        self._bootstrap = config.bootstrap_addresses()
        self.call_metadata = config.call_metadata()
        self._channel_credentials = config.channel_credentials()  # None: plaintext
        self._socket_timeout = config["socket.timeout.ms"] / 1000.0
        self._retry_backoff = config["retry.backoff.ms"] / 1000.0
        self._max_age = config["metadata.max.age.ms"] / 1000.0
        self._channel_options = [
            ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
            ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
            ("grpc.primary_user_agent", f"weir-python/{config['client.id']}"),
            # gRPC's own reconnect backoff starts at 1 s and grows to 2 minutes; a broker that
            # restarts should be found again within retry.backoff.max.ms.
            ("grpc.initial_reconnect_backoff_ms", config["retry.backoff.ms"]),
            ("grpc.min_reconnect_backoff_ms", config["retry.backoff.ms"]),
            ("grpc.max_reconnect_backoff_ms", config["retry.backoff.max.ms"]),
            ("grpc.enable_retries", 0),
        ]
        self._lock = threading.Lock()
        self._channels: dict[str, tuple[grpc.Channel, broker_pb2_grpc.BrokerStub]] = {}
        self._brokers: dict[int, broker_pb2.BrokerNode] = {}
        self.topics: dict[str, TopicInfo] = {}
        self._stale: set[str] = set()
        # Set when a coordinator call failed in a way newer metadata may fix (also from
        # asynchronous commits, which do not retry themselves): the next one refreshes first.
        self._coordinator_stale = False
        self.cluster_id: str | None = None
        self.controller_id = -1
        self._closed = False

    # ------------------------------------------------------------------ channels

    def stub(self, address: str) -> broker_pb2_grpc.BrokerStub:
        """The Broker stub of ``address`` (host:port), opening its channel on first use."""
        entry = self._channels.get(address)
        if entry is None:
            with self._lock:
                if self._closed:
                    raise KafkaException(KafkaError(KafkaError._DESTROY, "the client is closed"))  # type: ignore[attr-defined]
                entry = self._channels.get(address)
                if entry is None:
                    if self._channel_credentials is None:
                        channel = grpc.insecure_channel(address, options=self._channel_options)
                    else:
                        channel = grpc.secure_channel(address, self._channel_credentials, options=self._channel_options)
                    entry = (channel, broker_pb2_grpc.BrokerStub(channel))
                    self._channels[address] = entry
        return entry[1]

    def node_address(self, node_id: int) -> str | None:
        node = self._brokers.get(node_id)
        return f"{node.host}:{node.port}" if node is not None else None

    def leader_address(self, topic: str, partition: int) -> str | None:
        """Address of the partition's leader from the cache; None when unknown."""
        info = self.topics.get(topic)
        if info is None or info.error_code or partition >= info.partition_count:
            return None
        leader = info.leaders[partition]
        return self.node_address(leader) if leader >= 0 else None

    def candidate_addresses(self) -> list[str]:
        """Known brokers first, then the bootstrap list: where a metadata call may go."""
        known = [f"{node.host}:{node.port}" for node in self._brokers.values()]
        return known + [address for address in self._bootstrap if address not in known]

    def call(self, method: str, request: Any, *, address: str | None = None, timeout: float | None = None) -> Any:
        """Call ``method`` on one broker (``address``) or on the first candidate that answers.

        Raises KafkaException: ``_TRANSPORT`` when no broker could be reached, other codes
        for other gRPC failures (see :func:`error_from_rpc`).
        """
        timeout = self._socket_timeout if timeout is None else timeout
        deadline = time.monotonic() + timeout
        addresses = [address] if address else self.candidate_addresses()
        last_error: KafkaError | None = None
        for candidate in addresses:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            try:
                return getattr(self.stub(candidate), method)(request, timeout=remaining, metadata=self.call_metadata)
            except grpc.RpcError as error:
                last_error = error_from_rpc(error, f"{method} to {candidate}")
                if not last_error.retriable():
                    raise KafkaException(last_error) from None
        if last_error is None:
            last_error = KafkaError(KafkaError._TIMED_OUT, f"{method}: no broker answered within {timeout:.1f}s")  # type: ignore[attr-defined]
        elif not address:
            last_error = KafkaError(KafkaError._TRANSPORT, f"{method}: none of the brokers answered ({', '.join(addresses)}): {last_error.str()}")  # type: ignore[attr-defined]
        raise KafkaException(last_error)

    # ------------------------------------------------------------------ group coordinator

    def coordinator_address(self, group_id: str, *, timeout: float | None = None) -> str:
        """``host:port`` of the broker that keeps ``group_id``'s committed offsets (see module docstring).

        Uses the cached broker map, refreshing it first when none is known yet or the last
        coordinator call failed. Raises KafkaException when the metadata cannot be fetched.
        """
        if not self._brokers or self._coordinator_stale:
            self.refresh(None, timeout=timeout)
            self._coordinator_stale = False
        brokers = sorted(self._brokers.values(), key=lambda node: node.node_id)
        if not brokers:
            raise KafkaException(KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE, f"no broker is known to coordinate group {group_id!r}"))  # type: ignore[attr-defined]
        node = brokers[coordinator_index(group_id, len(brokers))]
        return f"{node.host}:{node.port}"

    def mark_coordinator_stale(self) -> None:
        """A coordinator call failed: refresh the broker map before the next one."""
        self._coordinator_stale = True

    def call_coordinator(self, group_id: str, method: str, request: Any, *, timeout: float | None = None) -> Any:
        """Call ``method`` (OffsetCommit / OffsetFetch) on ``group_id``'s coordinator.

        On a retriable transport failure, COORDINATOR_NOT_AVAILABLE or NOT_COORDINATOR, the
        metadata is refreshed and the call tried again, at most COORDINATOR_ATTEMPTS times in
        all and never past ``timeout``. The last failure is raised as KafkaException; a
        response whose top-level error persists is returned as it is for the caller to read.
        """
        timeout = self._socket_timeout if timeout is None else timeout
        deadline = time.monotonic() + timeout
        attempts_left = COORDINATOR_ATTEMPTS
        while True:
            attempts_left -= 1
            address = self.coordinator_address(group_id, timeout=max(deadline - time.monotonic(), 0.001))
            try:
                response = self.call(method, request, address=address, timeout=max(deadline - time.monotonic(), 0.001))
            except KafkaException as exception:
                if not exception.error.retriable():
                    raise
                self.mark_coordinator_stale()
                if not attempts_left or not self._wait_before_retry(deadline):
                    raise
                continue
            if response.error_code not in COORDINATOR_MOVED:
                return response
            self.mark_coordinator_stale()
            if not attempts_left or not self._wait_before_retry(deadline):
                return response

    def _wait_before_retry(self, deadline: float) -> bool:
        """Sleep retry.backoff.ms when time is left for another attempt after it; False otherwise."""
        if time.monotonic() + self._retry_backoff >= deadline:
            return False
        time.sleep(self._retry_backoff)
        return True

    # ------------------------------------------------------------------ metadata

    def refresh(self, topics: Iterable[str] | None = None, *, timeout: float | None = None) -> broker_pb2.MetadataResponse:
        """Fetch metadata (every topic when ``topics`` is None) and update the cache."""
        names = list(topics) if topics is not None else []
        response = self.call("Metadata", broker_pb2.MetadataRequest(topics=names), timeout=timeout)
        now = time.monotonic()
        fresh: dict[str, TopicInfo] = {}
        for topic in response.topics:
            ordered = sorted(topic.partitions, key=lambda partition: partition.partition)
            fresh[topic.name] = TopicInfo(
                topic.name,
                topic.error_code,
                topic.error_message,
                tuple(partition.leader_id for partition in ordered),
                tuple(partition.leader_epoch for partition in ordered),
                now,
            )
        with self._lock:
            self._brokers = {node.node_id: node for node in response.brokers}
            self.cluster_id = response.cluster_id or None
            self.controller_id = response.controller_id
            topics_now = dict(self.topics) if names else {}
            topics_now.update(fresh)
            self.topics = topics_now
            self._stale.difference_update(fresh)
        return response

    def topic(self, name: str, *, timeout: float | None = None) -> TopicInfo:
        """The cached metadata of ``name``, fetched when missing, stale or older than metadata.max.age.ms."""
        info = self.topics.get(name)
        if info is None or name in self._stale or time.monotonic() - info.fetched_at > self._max_age:
            self.refresh([name], timeout=timeout)
            info = self.topics[name]
        return info

    def mark_stale(self, topic: str) -> None:
        """Something failed that newer metadata may fix: refresh ``topic`` on next lookup."""
        self._stale.add(topic)

    def is_stale(self, topic: str) -> bool:
        return topic in self._stale

    def list_topics(self, topic: str | None = None, timeout: float = -1) -> ClusterMetadata:
        """confluent-kafka's ``list_topics``: every topic, or just ``topic``. ``timeout`` -1: socket.timeout.ms."""
        response = self.refresh([topic] if topic is not None else None, timeout=None if timeout is None or timeout < 0 else timeout)
        result = ClusterMetadata()
        result.cluster_id = response.cluster_id or None
        result.controller_id = response.controller_id
        for node in response.brokers:
            result.brokers[node.node_id] = BrokerMetadata(node.node_id, node.host, node.port)
        for topic_response in response.topics:
            topic_metadata = TopicMetadata()
            topic_metadata.topic = topic_response.name
            if topic_response.error_code:
                topic_metadata.error = KafkaError(topic_response.error_code, topic_response.error_message or None)
            for partition_response in topic_response.partitions:
                partition_metadata = PartitionMetadata()
                partition_metadata.id = partition_response.partition
                partition_metadata.leader = partition_response.leader_id
                partition_metadata.replicas = list(partition_response.replicas)
                partition_metadata.isrs = list(partition_response.isr)
                if partition_response.error_code:
                    partition_metadata.error = KafkaError(partition_response.error_code, partition_response.error_message or None)
                topic_metadata.partitions[partition_metadata.id] = partition_metadata
            result.topics[topic_metadata.topic] = topic_metadata
        return result

    def close(self) -> None:
        with self._lock:
            self._closed = True
            channels = list(self._channels.values())
            self._channels.clear()
        for channel, _ in channels:
            channel.close()

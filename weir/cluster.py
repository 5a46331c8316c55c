"""The client's view of the cluster: bootstrap, the metadata cache and one gRPC channel per broker.

Every client (Producer, Consumer, AdminClient) owns one :class:`Cluster`. It caches the
cluster map (brokers; topics with their partitions' leaders and leader epochs) and opens one
channel per broker address, reused by every call; every call carries the API key and secret
as gRPC metadata. Transport failures become the retriable ``_TRANSPORT`` KafkaError, and
deadlines the retriable ``_TIMED_OUT``.

Where calls go:

- A call for one broker (:meth:`Cluster.call` with ``address``: Produce, Fetch and
  ListOffsets at a partition's leader, commits at a group's coordinator) goes there only.
- A call for any broker (Metadata, FindCoordinator, admin requests) tries the brokers of the
  cached map, then those of ``bootstrap.servers``, one after the other. An address that
  failed with a transport error or a deadline goes to the back of the line until it answers
  again, and no address may take longer than ``socket.connection.setup.timeout.ms`` while
  others are left to try, so one dead or unreachable broker never holds a client up.
  :meth:`Cluster.call` makes one round; :meth:`Cluster.call_any` keeps going round, waiting
  retry.backoff.ms (doubling up to retry.backoff.max.ms) between rounds, until its timeout,
  and then fails with ``_TRANSPORT`` naming every address it tried and the last error.

Metadata: :meth:`Cluster.refresh` fetches it at once. The producer's sender and the
consumer's fetcher call :meth:`Cluster.maybe_refresh` every round instead: it refreshes the
topics they use that are marked stale (:meth:`Cluster.mark_stale`, after
NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION, LEADER_NOT_AVAILABLE, FENCED_LEADER_EPOCH,
UNKNOWN_LEADER_EPOCH, a transport failure, or a partition without a leader) or older than
``metadata.max.age.ms``, at most once per retry.backoff.ms (doubling up to
retry.backoff.max.ms while refreshes fail), in one round over the brokers so that those
threads never block for long. A partition whose refreshed leader epoch is older than the
cached one (the answer of a broker that has not heard of the latest election yet) keeps the
cached leader, as Kafka's clients do (KIP-320).

Connections: after its broker went away, gRPC reconnects a channel by itself, with a backoff
set here from retry.backoff.ms to retry.backoff.max.ms, so a broker that comes back at the
same address is used again within retry.backoff.max.ms, and partitions that moved are
reached through the new leader's channel after the refresh. Channels are closed only by
:meth:`Cluster.close`: closing one under a call another thread is starting would fail that
call outside the retry logic. (Channels to addresses that left the cluster map stay open
until then.)

Also here: confluent-kafka's metadata result classes (``ClusterMetadata`` and friends)
returned by ``list_topics()``.

Thread-safety: every method may be called from any thread. The topic cache is replaced
wholesale under a lock and read without one (a dict swap is atomic in CPython), which keeps
lookups on produce()'s hot path lock-free.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable
from typing import Any

import grpc

from grpc_protos.weir.v1 import broker_pb2, broker_pb2_grpc
from weir.backoff import exponential_backoff
from weir.config import ClientConfig
from weir.errors import ErrorCode, KafkaError, KafkaException

# Largest gRPC message either way. Answers are the large ones (a Fetch returns up to the
# broker's fetch.max.bytes, 55 MiB by default; its socket.request.max.bytes, 100 MiB, bounds
# any answer). Requests stay far smaller: the producer sends at most message.max.bytes of
# records per request, and a broker refuses requests above its max.request.size plus framing.
MAX_MESSAGE_BYTES = 104857600 + 1024 * 1024
# Trailing metadata of a call a broker refused as a whole, carrying a Kafka error code that
# says more than the gRPC status: a broker whose budget for requests in flight is full answers
# RESOURCE_EXHAUSTED with THROTTLING_QUOTA_EXCEEDED (retriable), while RESOURCE_EXHAUSTED
# alone means a message over the size limit (MESSAGE_TOO_LARGE, not retriable).
ERROR_CODE_TRAILER = "x-weir-error-code"
# Errors after which a call for any broker tries the next one.
_UNREACHABLE = frozenset({KafkaError._TRANSPORT, KafkaError._TIMED_OUT})


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
    ``leaders[p]`` is the node id leading partition p (-1 without a leader) and
    ``leader_epochs[p]`` its leader epoch (-1 when unknown); ``topic_id`` changes when the
    topic is deleted and created again; ``fetched_at`` is the monotonic time of the answer.
    """

    __slots__ = ("name", "error_code", "error_message", "partition_count", "leaders", "leader_epochs", "topic_id", "fetched_at")

    def __init__(
        self, name: str, error_code: int, error_message: str, leaders: tuple[int, ...], leader_epochs: tuple[int, ...], fetched_at: float, topic_id: str = ""
    ) -> None:
        self.name = name
        self.error_code = error_code
        self.error_message = error_message
        self.partition_count = len(leaders)
        self.leaders = leaders
        self.leader_epochs = leader_epochs
        self.topic_id = topic_id
        self.fetched_at = fetched_at


def error_from_rpc(error: grpc.RpcError, what: str) -> KafkaError:
    """The KafkaError a failed gRPC call stands for; ``what`` names the call for the message."""
    code = error.code() if hasattr(error, "code") else None
    details = error.details() if hasattr(error, "details") else str(error)
    if code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED, grpc.StatusCode.UNKNOWN, grpc.StatusCode.INTERNAL, grpc.StatusCode.ABORTED):
        return KafkaError(KafkaError._TRANSPORT, f"{what}: broker transport failure: {details}")
    if code == grpc.StatusCode.DEADLINE_EXCEEDED:
        return KafkaError(KafkaError._TIMED_OUT, f"{what}: timed out: {details}")
    if code == grpc.StatusCode.UNAUTHENTICATED:
        return KafkaError(KafkaError._AUTHENTICATION, f"{what}: {details}")
    if code == grpc.StatusCode.PERMISSION_DENIED:
        return KafkaError(ErrorCode.CLUSTER_AUTHORIZATION_FAILED, f"{what}: {details}")
    if code == grpc.StatusCode.RESOURCE_EXHAUSTED:
        carried = _trailer_error_code(error)
        if carried is not None:
            return KafkaError(carried, f"{what}: {details}")
        return KafkaError(ErrorCode.MESSAGE_TOO_LARGE, f"{what}: the request is larger than the broker accepts (its max.request.size): {details}")
    if code == grpc.StatusCode.INVALID_ARGUMENT:
        return KafkaError(KafkaError._INVALID_ARG, f"{what}: {details}")
    if code == grpc.StatusCode.UNIMPLEMENTED:
        return KafkaError(ErrorCode.UNSUPPORTED_VERSION, f"{what}: the broker does not implement this call (an older broker): {details}")
    return KafkaError(KafkaError._FAIL, f"{what}: {code}: {details}")


def _trailer_error_code(error: grpc.RpcError) -> int | None:
    """The Kafka error code a broker put in the call's trailing metadata (ERROR_CODE_TRAILER), None without one."""
    trailers: Iterable[tuple[str, str | bytes]] | None
    try:
        # grpc-stubs types the entries as a plain class; grpc's _Metadatum is a (key, value) namedtuple.
        trailers = error.trailing_metadata() if hasattr(error, "trailing_metadata") else None  # type: ignore[assignment]
    except Exception:  # a call that failed before reaching a broker may have none to give
        return None
    for key, value in trailers or ():
        if key == ERROR_CODE_TRAILER and isinstance(value, str) and value.lstrip("-").isdigit():
            return int(value)
    return None


class Cluster:
    """Bootstrap, metadata cache and broker channels of one client (see module docstring)."""

    def __init__(self, config: ClientConfig) -> None:
        self._bootstrap = config.bootstrap_addresses()
        self.call_metadata = config.call_metadata()
        self._channel_credentials = config.channel_credentials()  # None: plaintext
        self._socket_timeout = config["socket.timeout.ms"] / 1000.0
        self._setup_timeout = config["socket.connection.setup.timeout.ms"] / 1000.0
        self._retry_backoff = config["retry.backoff.ms"] / 1000.0
        self._retry_backoff_max = config["retry.backoff.max.ms"] / 1000.0
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
        # Address -> monotonic time of its last transport failure or deadline; cleared when it answers.
        self._unreachable: dict[str, float] = {}
        # Rate limit of maybe_refresh: no refresh before this monotonic time.
        self._next_refresh = 0.0
        self._refresh_failures = 0
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
                    raise KafkaException(KafkaError(KafkaError._DESTROY, "the client is closed"))
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

    def broker_addresses(self) -> dict[int, str]:
        """host:port of every broker the last metadata named, by node id."""
        with self._lock:
            return {node_id: f"{node.host}:{node.port}" for node_id, node in self._brokers.items()}

    def leader_address(self, topic: str, partition: int) -> str | None:
        """Address of the partition's leader from the cache; None when unknown."""
        info = self.topics.get(topic)
        if info is None or info.error_code or partition >= info.partition_count:
            return None
        leader = info.leaders[partition]
        return self.node_address(leader) if leader >= 0 else None

    def leader_epoch(self, topic: str, partition: int) -> int:
        """The cached leader epoch of the partition; -1 when unknown (brokers then skip the check)."""
        info = self.topics.get(topic)
        if info is None or info.error_code or partition >= info.partition_count:
            return -1
        return info.leader_epochs[partition]

    def candidate_addresses(self) -> list[str]:
        """Where a call for any broker may go, in order: known brokers, then the bootstrap list;
        addresses that failed lately last, the longest-failed first."""
        known = [f"{node.host}:{node.port}" for node in self._brokers.values()]
        ordered = known + [address for address in self._bootstrap if address not in known]
        unreachable = dict(self._unreachable)
        if unreachable:
            ordered.sort(key=lambda address: unreachable.get(address, float("-inf")))
        return ordered

    def note_failure(self, address: str, error: KafkaError) -> None:
        """A call to ``address`` failed with ``error``: after a transport failure or a deadline,
        calls for any broker try that address last until it answers again."""
        if error.code() in _UNREACHABLE:
            self._unreachable[address] = time.monotonic()

    def note_answer(self, address: str) -> None:
        """``address`` answered a call: it is no longer tried last."""
        if self._unreachable:
            self._unreachable.pop(address, None)

    def backoff(self, attempt: int) -> float:
        """Seconds to wait before retry number ``attempt`` (0 = the first): retry.backoff.ms
        doubled per earlier attempt, at most retry.backoff.max.ms."""
        return exponential_backoff(self._retry_backoff, attempt, self._retry_backoff_max)

    # ------------------------------------------------------------------ calls

    def call(self, method: str, request: Any, *, address: str | None = None, timeout: float | None = None) -> Any:
        """Call ``method`` at ``address``, or at each candidate broker in turn until one answers (one round).

        ``timeout`` in seconds, socket.timeout.ms when None. Raises KafkaException:
        ``_TRANSPORT`` when no broker could be reached, other codes for other gRPC failures
        (see :func:`error_from_rpc`); a non-retriable failure is raised at once.
        """
        timeout = self._socket_timeout if timeout is None else timeout
        deadline = time.monotonic() + timeout
        if address is not None:
            return self._invoke(address, method, request, timeout)
        tried: list[str] = []
        answered, outcome = self._round(method, request, deadline, tried)
        if answered:
            return outcome
        raise KafkaException(self._none_answered(method, timeout, tried, outcome))

    def call_any(self, method: str, request: Any, *, timeout: float | None = None) -> Any:
        """Call ``method`` at any broker, going round the candidates until one answers or ``timeout`` passes.

        Between rounds it waits retry.backoff.ms, doubling up to retry.backoff.max.ms. Raises
        KafkaException ``_TRANSPORT`` naming every address tried and the last error when no
        broker answered in time; a non-retriable failure is raised at once.
        """
        timeout = self._socket_timeout if timeout is None else timeout
        deadline = time.monotonic() + timeout
        tried: list[str] = []
        last_error: KafkaError | None = None
        for round_number in range(1_000_000):  # ends at the deadline long before
            answered, outcome = self._round(method, request, deadline, tried)
            if answered:
                return outcome
            last_error = outcome or last_error
            pause = self.backoff(round_number)
            if time.monotonic() + pause >= deadline:
                break
            time.sleep(pause)
        raise KafkaException(self._none_answered(method, timeout, tried, last_error))

    def _round(self, method: str, request: Any, deadline: float, tried: list[str]) -> tuple[bool, Any]:
        """Try each candidate once: (True, response) from the first that answers, else (False, last error or None)."""
        candidates = self.candidate_addresses()
        last_error: KafkaError | None = None
        for index, candidate in enumerate(candidates):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            if index < len(candidates) - 1:
                remaining = min(remaining, self._setup_timeout)
            if candidate not in tried:
                tried.append(candidate)
            try:
                return True, self._invoke(candidate, method, request, remaining)
            except KafkaException as exception:
                if not exception.error.retriable():
                    raise
                last_error = exception.error
        return False, last_error

    def _invoke(self, address: str, method: str, request: Any, timeout: float) -> Any:
        """One gRPC call; records whether ``address`` answered. Raises KafkaException."""
        try:
            response = getattr(self.stub(address), method)(request, timeout=max(timeout, 0.001), metadata=self.call_metadata)
        except grpc.RpcError as rpc_error:
            error = error_from_rpc(rpc_error, f"{method} to {address}")
            self.note_failure(address, error)
            raise KafkaException(error) from None
        self.note_answer(address)
        return response

    @staticmethod
    def _none_answered(method: str, timeout: float, tried: list[str], last_error: KafkaError | None) -> KafkaError:
        if not tried:
            return KafkaError(KafkaError._TIMED_OUT, f"{method}: no broker could be tried within {timeout:.3f}s")
        last = f": last error: {last_error.str()}" if last_error is not None else ""
        return KafkaError(KafkaError._TRANSPORT, f"{method}: none of the brokers answered within {timeout:.1f}s (tried {', '.join(tried)}){last}")

    # ------------------------------------------------------------------ metadata

    def refresh(
        self, topics: Iterable[str] | None = None, *, timeout: float | None = None, retry: bool = True, allow_auto_topic_creation: bool = False
    ) -> broker_pb2.MetadataResponse:
        """Fetch metadata (every topic when ``topics`` is None) and update the cache.

        With ``retry`` (the default) brokers are tried until ``timeout`` (:meth:`call_any`);
        without, in one round (:meth:`call`). ``allow_auto_topic_creation`` asks the broker
        to create missing named topics when it allows that. Raises KafkaException when no
        broker answered.
        """
        names = list(topics) if topics is not None else []
        request = broker_pb2.MetadataRequest(topics=names, allow_auto_topic_creation=allow_auto_topic_creation)
        response: broker_pb2.MetadataResponse
        if retry:
            response = self.call_any("Metadata", request, timeout=timeout)
        else:
            response = self.call("Metadata", request, timeout=timeout)
        self._update(response, partial=bool(names))
        return response

    def _update(self, response: broker_pb2.MetadataResponse, *, partial: bool) -> None:
        now = time.monotonic()
        answered = [(topic, sorted(topic.partitions, key=lambda partition: partition.partition)) for topic in response.topics]
        with self._lock:
            # Merged under the lock so that of two refreshes racing, the older answer cannot
            # undo the newer leader epochs of the other.
            fresh: dict[str, TopicInfo] = {}
            for topic, ordered in answered:
                leaders = [partition.leader_id for partition in ordered]
                epochs = [partition.leader_epoch for partition in ordered]
                cached = self.topics.get(topic.name)
                if cached is not None and not topic.error_code and not cached.error_code and cached.topic_id == topic.topic_id:
                    for index in range(min(len(leaders), cached.partition_count)):
                        if epochs[index] < cached.leader_epochs[index]:
                            # This broker has not heard of the latest election yet: keep what we know.
                            leaders[index] = cached.leaders[index]
                            epochs[index] = cached.leader_epochs[index]
                fresh[topic.name] = TopicInfo(topic.name, topic.error_code, topic.error_message, tuple(leaders), tuple(epochs), now, topic.topic_id)
            self._brokers = {node.node_id: node for node in response.brokers}
            self.cluster_id = response.cluster_id or None
            self.controller_id = response.controller_id
            topics_now = dict(self.topics) if partial else {}
            topics_now.update(fresh)
            self.topics = topics_now
            self._stale.difference_update(fresh)

    def maybe_refresh(self, topics: Iterable[str], *, timeout: float | None = None) -> bool:
        """Refresh those of ``topics`` that are unknown, stale or older than metadata.max.age.ms.

        For background loops (see the module docstring): at most once per retry.backoff.ms
        (doubling up to retry.backoff.max.ms after failures), one round over the brokers.
        Returns True when a refresh was made; raises KafkaException when it failed.
        """
        now = time.monotonic()
        cache = self.topics
        stale = self._stale
        due = []
        for topic in topics:
            info = cache.get(topic)
            if info is None or topic in stale or now - info.fetched_at > self._max_age:
                due.append(topic)
        if not due:
            return False
        with self._lock:
            if now < self._next_refresh:
                return False
            self._next_refresh = now + self.backoff(self._refresh_failures)
        try:
            self.refresh(due, timeout=timeout, retry=False)
        except KafkaException:
            with self._lock:
                self._refresh_failures += 1
                self._next_refresh = time.monotonic() + self.backoff(self._refresh_failures)
            raise
        with self._lock:
            self._refresh_failures = 0
        return True

    def next_refresh_in(self) -> float:
        """Seconds until :meth:`maybe_refresh` may refresh again (0 when it may now)."""
        return max(self._next_refresh - time.monotonic(), 0.0)

    def topic(self, name: str, *, timeout: float | None = None) -> TopicInfo:
        """The cached metadata of ``name``, fetched (retrying until ``timeout``) when missing, stale or older than metadata.max.age.ms."""
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

    def list_topics(self, topic: str | None = None, timeout: float | None = -1) -> ClusterMetadata:
        """confluent-kafka's ``list_topics``: every topic, or just ``topic``. ``timeout`` -1 or None: socket.timeout.ms."""
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

"""Group coordinators: the broker that keeps a group's committed offsets, found with FindCoordinator.

A group's offsets (and, with consumer groups, its membership) are kept by one broker, the
group's coordinator: the leader of the ``__consumer_offsets`` partition the group hashes to
(a standalone broker coordinates every group itself). :class:`GroupCoordinators` asks any
broker ``FindCoordinator`` once per group, caches the answer, and sends the group's
OffsetCommit and OffsetFetch there.

Retries, as Kafka's clients make them:

- NOT_COORDINATOR or COORDINATOR_NOT_AVAILABLE (as the answer's error or any partition's) and
  transport failures or deadlines: the cached coordinator is forgotten, and after a wait it is
  looked up again and the call made again;
- COORDINATOR_LOAD_IN_PROGRESS: the coordinator is the right one but still loading the
  group's offsets: after a wait the same coordinator is called again;
- FindCoordinator answering COORDINATOR_NOT_AVAILABLE (the group's partition has no leader
  yet): asked again after a wait.

Waits start at retry.backoff.ms and double up to retry.backoff.max.ms. A synchronous call
gives up when its timeout has passed, raising the last error. Asynchronous commits are not
retried (as in Kafka); when one fails this way its caller calls :meth:`GroupCoordinators.forget`
so that the next call looks the coordinator up again.

Thread-safety: every method may be called from any thread.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from grpc_protos.weir.v1 import broker_pb2
from weir.cluster import Cluster
from weir.errors import ErrorCode, KafkaError, KafkaException

# Answers saying the cached coordinator is not (or no longer) the group's coordinator.
COORDINATOR_MOVED = frozenset({ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE})
# Answers saying the coordinator is right but not ready yet.
COORDINATOR_LOADING = frozenset({ErrorCode.COORDINATOR_LOAD_IN_PROGRESS})


def coordinator_error(response: Any) -> tuple[int, str]:
    """The coordinator error of an OffsetCommit / OffsetFetch answer, (0, "") when there is none.

    The answer's own error counts first, then the first partition error that is one of
    COORDINATOR_MOVED or COORDINATOR_LOADING (Kafka reports NOT_COORDINATOR per partition in
    OffsetCommit).
    """
    wanted = COORDINATOR_MOVED | COORDINATOR_LOADING
    if response.error_code in wanted:
        return response.error_code, response.error_message
    for topic in response.topics:
        for partition in topic.partitions:
            if partition.error_code in wanted:
                return partition.error_code, partition.error_message
    return 0, ""


class GroupCoordinators:
    """Coordinator addresses cached per group, and calls routed to them (see the module docstring)."""

    def __init__(self, cluster: Cluster, key_type: broker_pb2.CoordinatorKeyType = broker_pb2.COORDINATOR_KEY_TYPE_GROUP) -> None:
        """``key_type`` COORDINATOR_KEY_TYPE_TRANSACTION: the keys are transactional ids, and their transaction coordinators are found."""
        self._cluster = cluster
        self._key_type = key_type
        self._lock = threading.Lock()
        self._addresses: dict[str, str] = {}
        # The node id of each cached address, for results that name the coordinator (describe).
        self._node_ids: dict[str, int] = {}

    def address(self, group_id: str, *, timeout: float) -> str:
        """``host:port`` of ``group_id``'s coordinator: cached, else asked of any broker (retrying within ``timeout`` s).

        Raises KafkaException with the broker's error (GROUP_AUTHORIZATION_FAILED...) or, after
        ``timeout``, the last retriable one (COORDINATOR_NOT_AVAILABLE, ``_TRANSPORT``...).
        """
        cached = self._addresses.get(group_id)
        if cached is not None:
            return cached
        return self._find(group_id, time.monotonic() + timeout)

    def cached_address(self, group_id: str) -> str | None:
        """``host:port`` of ``group_id``'s coordinator if known, without asking any broker."""
        return self._addresses.get(group_id)

    def forget(self, group_id: str, address: str | None = None) -> None:
        """Look ``group_id``'s coordinator up again on next use; only if it still is ``address`` when given."""
        with self._lock:
            if address is None or self._addresses.get(group_id) == address:
                self._addresses.pop(group_id, None)

    def _find(self, group_id: str, deadline: float) -> str:
        request = broker_pb2.FindCoordinatorRequest(group_ids=[group_id], key_type=self._key_type)
        for attempt in range(1_000_000):  # ends at the deadline long before
            response = self._cluster.call_any("FindCoordinator", request, timeout=max(deadline - time.monotonic(), 0.001))
            if not response.coordinators:
                raise KafkaException(KafkaError(KafkaError._BAD_MSG, f"FindCoordinator for group {group_id!r}: the broker's answer names no coordinator"))
            found = response.coordinators[0]
            if not found.error_code and found.node_id >= 0:
                address = f"{found.host}:{found.port}"
                with self._lock:
                    self._addresses[group_id] = address
                    self._node_ids[address] = found.node_id
                return address
            code = found.error_code or ErrorCode.COORDINATOR_NOT_AVAILABLE
            error = KafkaError(code, f"FindCoordinator for group {group_id!r}: {found.error_message or KafkaError(code).str()}")
            if not error.retriable():
                raise KafkaException(error)
            pause = self._cluster.backoff(attempt)
            if time.monotonic() + pause >= deadline:
                raise KafkaException(error)
            time.sleep(pause)
        raise AssertionError("unreachable: the loop ends at its deadline")

    def node_id(self, address: str) -> int:
        """The node id FindCoordinator gave for ``address``; -1 when it was never a coordinator here."""
        return self._node_ids.get(address, -1)

    def call(self, group_id: str, method: str, request: Any, *, timeout: float, error_of: Callable[[Any], tuple[int, str]] = coordinator_error) -> Any:
        """Call ``method`` at ``group_id``'s coordinator, retrying within ``timeout`` s.

        ``error_of`` reads the coordinator error of an answer ((0, "") when none); the default
        reads OffsetCommit / OffsetFetch answers. Returns the answer, whose other errors (per
        partition, authorization...) are the caller's to read. Raises KafkaException for a
        non-retriable failure, or for the last retriable one once ``timeout`` has passed.
        """
        deadline = time.monotonic() + timeout
        for attempt in range(1_000_000):  # ends at the deadline long before
            address = self.address(group_id, timeout=max(deadline - time.monotonic(), 0.001))
            try:
                response = self._cluster.call(method, request, address=address, timeout=max(deadline - time.monotonic(), 0.001))
            except KafkaException as exception:
                if not exception.error.retriable():
                    raise
                self.forget(group_id, address)
                error = exception.error
            else:
                code, message = error_of(response)
                if not code:
                    return response
                if code in COORDINATOR_MOVED:
                    self.forget(group_id, address)
                error = KafkaError(code, f"{method} of group {group_id!r} at {address}: {message or KafkaError(code).str()}")
            pause = self._cluster.backoff(attempt)
            if time.monotonic() + pause >= deadline:
                raise KafkaException(KafkaError(error.code(), f"{error.str()} (gave up after {timeout:.1f}s)"))
            time.sleep(pause)
        raise AssertionError("unreachable: the loop ends at its deadline")

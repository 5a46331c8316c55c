"""What every coordinator of an internal topic does alike: lead some of its partitions and load each from its log.

The offsets store (``__consumer_offsets``, the group coordinator's) and the transaction
coordinator (``__transaction_state``) keep one in-memory state per led partition and
leadership (topic id and leader epoch). A standalone broker leads every partition and loads
them at startup; a managed broker follows the cluster map and loads a newly led partition on
a loader thread, while requests for it are answered COORDINATOR_LOAD_IN_PROGRESS. A
partition no longer led (or led again with a higher epoch, or of a recreated topic) is
dropped at once, and a load whose leadership ended stops at its next step. A failed load
drops the leadership, so the partition's requests get NOT_COORDINATOR instead of loading
forever, and the next map that makes this broker leader loads it again.

:class:`PartitionLeadership` is the base class of both: a subclass names its topic, makes
its partition state and loads it (replaying the log through :meth:`_replay_log`).

Thread-safety: the led partitions are a dict changed under :attr:`_leadership_lock` and read
without it (a dict read is atomic).
"""

from __future__ import annotations

import logging
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from concurrent.futures import Executor
from contextlib import AbstractContextManager, nullcontext
from typing import ClassVar, Generic, Protocol, TypeVar

from broker_nodes.clock import Clock
from broker_nodes.replica_manager import LEADER_EPOCH, ReplicaManager
from broker_nodes.topic_registry import TopicRegistry
from weir.records import iter_batch_positions

logger = logging.getLogger(__name__)

LOAD_READ_BYTES = 1024 * 1024  # bytes read per step while loading a partition's log


class LedPartition(Protocol):
    """One leadership of one partition: loading, then active."""

    @property
    def partition(self) -> int: ...

    @property
    def leader_epoch(self) -> int: ...

    @property
    def topic_id(self) -> str: ...

    @property
    def active(self) -> bool: ...


S = TypeVar("S", bound=LedPartition)


class PartitionLeadership(ABC, Generic[S]):
    """The led partitions of :attr:`topic` and their loading. See the module docstring.

    Lifecycle: standalone, :meth:`lead_every_partition` at startup; managed,
    :meth:`follow_leadership` with every cluster map; the subclass's shutdown calls
    :meth:`_stop_leading`.
    """

    topic: ClassVar[str]  # the internal topic
    coordinates: ClassVar[str]  # what a led partition holds, for log lines ("its groups")

    def __init__(self, replica_manager: ReplicaManager, registry: TopicRegistry, clock: Clock, loader: Executor) -> None:
        self._replica_manager = replica_manager
        self._registry = registry
        self._clock = clock
        self._leadership_lock = threading.Lock()
        self._partitions: dict[int, S] = {}
        self._loader = loader  # one thread loads newly led partitions one after another, as Kafka's loaders do
        self._stopping = threading.Event()

    @abstractmethod
    def _new_partition(self, partition: int, leader_epoch: int, topic_id: str) -> S:
        """The state of a leadership that starts now, not loaded."""

    @abstractmethod
    def _load(self, state: S) -> int:
        """Replay the partition's log into ``state`` (see :meth:`_replay_log`) and activate it; returns the records read."""

    def _loaded_summary(self, state: S) -> str:
        """What a loaded partition holds, for the log line of its load."""
        return self.coordinates

    def is_loaded(self, partition: int) -> bool:
        """Whether this broker leads the partition and has loaded it."""
        state = self._partitions.get(partition)
        return state is not None and state.active

    # ------------------------------------------------------------------ leadership

    def lead_every_partition(self) -> int:
        """Standalone: lead every partition and load them all now; returns the records read."""
        topic = self._registry.require(self.topic)
        with self._leadership_lock:
            self._partitions.clear()
            states = [self._new_partition(partition, LEADER_EPOCH, topic.topic_id) for partition in range(topic.partitions)]
            self._partitions.update((state.partition, state) for state in states)
        return sum(self._load(state) for state in states)

    def follow_leadership(self, led: Mapping[int, int]) -> None:
        """Managed: lead exactly the partitions in ``led`` (partition -> leader epoch), as the cluster map says.

        A partition led anew (or again with a higher epoch, or of a recreated topic) starts
        loading on the loader thread; one no longer led is dropped at once. The caller applies
        the map to the registry and the replication first, so the log no longer changes under
        a follower's fetcher.
        """
        topic = self._registry.get(self.topic)
        topic_id = topic.topic_id if topic is not None else None
        partition_count = topic.partitions if topic is not None else 0
        with self._leadership_lock:
            for partition, state in list(self._partitions.items()):
                epoch = led.get(partition)
                if epoch is None or state.topic_id != topic_id or epoch > state.leader_epoch:
                    del self._partitions[partition]
                    logger.info("partition %d of %s: no longer coordinating %s (leader epoch %d)", partition, self.topic, self.coordinates, state.leader_epoch)
            if topic_id is None or self._stopping.is_set():
                return
            for partition, epoch in sorted(led.items()):
                if partition in self._partitions or partition >= partition_count:
                    continue
                state = self._new_partition(partition, epoch, topic_id)
                self._partitions[partition] = state
                self._loader.submit(self._load_in_background, state)

    def _is_current(self, state: S) -> bool:
        """Whether ``state``'s leadership still holds (neither replaced nor dropped nor shut down)."""
        return self._partitions.get(state.partition) is state and not self._stopping.is_set()

    def _load_in_background(self, state: S) -> None:
        try:
            loaded = self._load(state)
        except Exception:
            logger.exception("partition %d of %s: loading %s failed", state.partition, self.topic, self.coordinates)
            with self._leadership_lock:
                if self._partitions.get(state.partition) is state:
                    del self._partitions[state.partition]
            return
        if self._is_current(state):
            logger.info(
                "partition %d of %s: loaded %d records; coordinating %s with leader epoch %d",
                state.partition,
                self.topic,
                loaded,
                self._loaded_summary(state),
                state.leader_epoch,
            )

    def _replay_log(self, state: S, replay: Callable[[bytes, int], int]) -> int:
        """Read the partition's log from its start to its end, ``replay(batches, min_offset)`` each piece; stops when the leadership ends."""
        log = self._replica_manager.partition_log(self.topic, state.partition)
        offset = log.log_start_offset
        end = log.log_end_offset  # as leader this broker's log is the partition's truth, up to its end
        loaded = 0
        while offset < end and self._is_current(state):
            data = log.read(offset, LOAD_READ_BYTES, max_offset=end).records
            next_offset = offset
            for _, header in iter_batch_positions(data):
                next_offset = header.next_offset
            if next_offset <= offset:
                break
            loaded += replay(data, offset)
            offset = next_offset
        return loaded

    def _stop_leading(self) -> None:
        """Stop loading (a running load ends at its next step) and drop every leadership."""
        self._stopping.set()
        with self._leadership_lock:
            self._partitions.clear()
        self._loader.shutdown(wait=True, cancel_futures=True)

    # ------------------------------------------------------------------ acks=all writes

    def _wait_slot(self) -> AbstractContextManager[None]:
        """One of the replication manager's acks=all wait slots (see ReplicationManager.wait_slot); none needed without replication."""
        replication = self._replica_manager.replication
        return replication.wait_slot() if replication is not None else nullcontext()

    def _wait_for_replicas(self, partition: int, next_offset: int, timeout_ms: int) -> None:
        """acks=all: block until the in-sync replicas hold the log up to ``next_offset`` (no-op for a partition without followers)."""
        replication = self._replica_manager.replication
        if replication is None or not replication.is_replicated_leader(self.topic, partition):
            return
        deadline = self._clock.monotonic() + timeout_ms / 1000.0
        replication.wait_for_replication(self.topic, partition, next_offset, deadline, timeout_ms)

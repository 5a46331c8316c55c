"""The transaction coordinator: the transactional ids of the ``__transaction_state`` partitions this broker leads.

Transactional id T (qualified, ``tenant~id``) lives in partition
``partition_for_transactional_id(T, N)``; its coordinator is that partition's leader, as in
Kafka. Each led partition is a :class:`TransactionsPartition`, loaded from the partition's
log when the leadership begins (Kafka's ``loadTransactionsForTxnTopicPartition``): meanwhile
its ids are answered COORDINATOR_LOAD_IN_PROGRESS, and NOT_COORDINATOR once the leadership
has ended. Loading finishes what the previous coordinator left half done: every
transaction found in PrepareCommit / PrepareAbort has its markers written again and is
completed.

Every state change (``state``: pure transitions) is written to the partition as Kafka's
TransactionLogValue record and waits for the in-sync replicas (acks=all, bounded by
request.timeout.ms) before it becomes the id's state, so an acknowledged change survives the
loss of the coordinator. EndTxn answers once PrepareCommit / PrepareAbort is stored; the
markers are then written on a completer thread through the injected :class:`MarkerWriter`
(partitions whose leader moved are retried after a backoff, for as long as this leadership
lasts, since a decided transaction must complete), and CompleteCommit / CompleteAbort is
stored later, if at all. The producer's next AddPartitionsToTxn, usually sent while that
completion runs, waits for it (bounded by ``completion_wait_ms``) and is woken when it ends,
rather than being answered CONCURRENT_TRANSACTIONS and retried by the client after a fixed
backoff. It waits only for the markers: once every marker is durable the transaction is
complete in memory (``markers_written``): every decision and every description sees it as
CompleteCommit / CompleteAbort, and the next change of the id (the next transaction's Ongoing
record, InitProducerId's Empty) is stored in place of the completion record (the record that
follows PrepareCommit says the markers are done either way, as a loading coordinator reads it).
The completion record itself is stored only by the periodic pass (:meth:`store_completions`,
run with the timeout aborts) for the ids no later change superseded meanwhile, so a producer
that commits in a loop never stores one: one acks=all round trip of ``__transaction_state``
less per transaction, and no completion write racing the next transaction's records. Until
then the log ends in PrepareCommit, as after a coordinator lost between the markers and the
completion record: a loading coordinator writes those markers again (a marker without an open
transaction is harmless) and completes the transaction.

Transactions version 2 (the epoch bumped at the prepare, so its markers are above every batch of
the transaction): the next AddPartitionsToTxn does not wait for those markers either. It is
decided on the completed state at once and its Ongoing record names the markers still being
written (``unwritten_markers``), so that record's replication and the markers' run at the same
time instead of one after the other; it answers once both are durable, as before. A
coordinator that loads such a record writes those markers again before anything else of the id
(a partition whose producer already holds their epoch or a later one takes none, see
``marker_appender``), and while they are not durable no other change of the id is decided and
no partition is verified for the next transaction, so none of its batches can precede the
previous transaction's marker in a partition. Transactions version 1 (EndTxn before v5, e.g.
librdkafka) keeps the epoch, so its markers cannot be told from the next transaction's batches:
its AddPartitionsToTxn still waits for them. Two periodic tasks of the broker call
:meth:`abort_timed_out_transactions` (transaction.timeout.ms, then :meth:`store_completions`)
and :meth:`expire_transactional_ids` (transactional.id.expiration.ms).

Thread-safe: the led partitions are a dict changed under one lock and read without it; each
partition's state is guarded by its own lock, which is never held across a wait for replicas
or a marker write.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Iterable
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import TypeVar

from broker_nodes.clock import Clock
from broker_nodes.cluster_state import NotLeaderOrFollowerError
from broker_nodes.coordinator.offset_store import OFFSETS_TOPIC
from broker_nodes.coordinator.partition_leadership import PartitionLeadership
from broker_nodes.coordinator.transactions import state as machine
from broker_nodes.coordinator.transactions.errors import (
    ConcurrentTransactionsError,
    InvalidTransactionalIdError,
    NotTransactionCoordinatorError,
    TransactionalIdNotFoundError,
    TransactionCoordinatorLoadingError,
    TransactionCoordinatorNotAvailableError,
)
from broker_nodes.coordinator.transactions.markers import MarkerRequest, MarkerWriter
from broker_nodes.coordinator.transactions.partition import MarkerJob, TransactionsPartition
from broker_nodes.coordinator.transactions.state import TopicPartition, TransactionMarkers, TransactionMetadata
from broker_nodes.replica_manager import ACKS_ALL, ReplicaManager
from broker_nodes.topic_registry import TopicRegistry, UnknownTopicOrPartitionError
from log_formats.offset_commit_records import partition_for_group
from log_formats.transaction_log_records import (
    TransactionLogSchemaError,
    decode_key,
    decode_value,
    encode_key,
    encode_value,
    partition_for_transactional_id,
)
from weir.records import BatchHeader, RecordBatchBuilder, RecordFormatError, batch_records_bytes, decode_records, iter_batch_positions

logger = logging.getLogger(__name__)

TRANSACTION_STATE_TOPIC = "__transaction_state"  # Kafka's name for the internal topic of transaction states
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class TransactionSettings:
    """The coordinator's settings, Kafka's keys."""

    max_timeout_ms: int  # transaction.max.timeout.ms
    id_expiration_ms: int  # transactional.id.expiration.ms
    write_timeout_ms: int  # request.timeout.ms: how long a state change waits for the in-sync replicas
    marker_retry_backoff_ms: int = 100  # between rounds of markers whose partition leader could not take them
    # Longest AddPartitionsToTxn waits for the id's previous transaction to complete (its markers
    # and CompleteCommit/CompleteAbort) before answering CONCURRENT_TRANSACTIONS.
    completion_wait_ms: int = 1000


@dataclass(frozen=True, slots=True)
class ProducerIdAndEpoch:
    producer_id: int
    producer_epoch: int


class TransactionCoordinator(PartitionLeadership[TransactionsPartition]):
    """Coordinates the transactional ids of the led ``__transaction_state`` partitions. See the module docstring.

    Lifecycle: standalone, :meth:`lead_every_partition` at startup; managed,
    :meth:`follow_leadership` with every cluster map; :meth:`shutdown` at the end (see
    ``partition_leadership``).
    """

    topic = TRANSACTION_STATE_TOPIC
    coordinates = "its transactions"

    def __init__(
        self,
        replica_manager: ReplicaManager,
        registry: TopicRegistry,
        clock: Clock,
        *,
        allocate_producer_id: Callable[[], int],
        markers: MarkerWriter,
        settings: TransactionSettings,
        loader: Executor | None = None,
        completer: Executor | None = None,
    ) -> None:
        # Injected so that tests decide when a load or a completion runs.
        super().__init__(replica_manager, registry, clock, loader if loader is not None else ThreadPoolExecutor(max_workers=1, thread_name_prefix="txn-loader"))
        self._allocate = allocate_producer_id
        self._markers = markers
        self._settings = settings
        self._completer = completer if completer is not None else ThreadPoolExecutor(max_workers=4, thread_name_prefix="txn-markers")

    # ------------------------------------------------------------------ placement

    def partition_for(self, transactional_id: str) -> int:
        """The id's ``__transaction_state`` partition; TransactionCoordinatorNotAvailableError while the topic does not exist."""
        topic = self._registry.get(TRANSACTION_STATE_TOPIC)
        if topic is None:
            raise TransactionCoordinatorNotAvailableError(transactional_id, f"{TRANSACTION_STATE_TOPIC} does not exist yet")
        return partition_for_transactional_id(transactional_id, topic.partitions)

    def coordinating(self, transactional_id: str) -> TransactionsPartition:
        """The led, loaded partition of the id; NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS / COORDINATOR_NOT_AVAILABLE errors otherwise."""
        if not transactional_id:
            raise InvalidTransactionalIdError()
        partition = self.partition_for(transactional_id)
        state = self._partitions.get(partition)
        if state is None:
            raise NotTransactionCoordinatorError(transactional_id, partition)
        if not state.active:
            raise TransactionCoordinatorLoadingError(transactional_id, partition)
        return state

    # ------------------------------------------------------------------ leadership

    def _new_partition(self, partition: int, leader_epoch: int, topic_id: str) -> TransactionsPartition:
        return TransactionsPartition(partition, leader_epoch, topic_id)

    def _loaded_summary(self, state: TransactionsPartition) -> str:
        return f"{len(state.transactions)} transactional ids"

    def _load(self, state: TransactionsPartition) -> int:
        """Replay the partition's log into ``state``, activate it and complete the transactions it left decided."""
        loaded = self._replay_log(state, lambda data, min_offset: self._replay_batches(state, data, min_offset))
        with state.lock:
            if not self._is_current(state):
                return loaded
            state.activate()
            decided = [
                transactional_id
                for transactional_id, metadata in state.transactions.items()
                if metadata.state.completing or metadata.unwritten_markers is not None
            ]
        for transactional_id in decided:
            logger.info(
                "%s-%d: completing transaction of %r left in %s%s",
                TRANSACTION_STATE_TOPIC,
                state.partition,
                transactional_id,
                state.transactions[transactional_id].state.kafka_name,
                "" if state.transactions[transactional_id].unwritten_markers is None else " (the previous transaction's markers)",
            )
            self._start_completion(state, transactional_id)
        return loaded

    def _replay_batches(self, state: TransactionsPartition, data: bytes, min_offset: int) -> int:
        """Replay the data batches of ``data`` from ``min_offset`` (markers hold no state of this topic); return the records replayed."""
        return sum(
            self._replay_batch(state, data, position, header, min_offset)
            for position, header in iter_batch_positions(data)
            if header.next_offset > min_offset and not header.is_control
        )

    def _replay_batch(self, state: TransactionsPartition, data: bytes, position: int, header: BatchHeader, min_offset: int) -> int:
        """Replay one batch's records; an undecodable batch or record is skipped with a warning (one bad record must not orphan a partition)."""
        try:
            decoded = decode_records(batch_records_bytes(data, position, header), header, min_offset)
        except RecordFormatError as error:
            logger.warning(
                "%s-%d: skipping a batch at position %d that cannot be decoded: %s", TRANSACTION_STATE_TOPIC, state.partition, position, error.reason
            )
            return 0
        replayed = 0
        for offset, _, key, value, _ in decoded:
            if key is None:
                continue
            try:
                state.replay(decode_key(bytes(key)), None if value is None else decode_value(bytes(value)))
            except TransactionLogSchemaError as error:
                logger.warning("skipping undecodable record at offset %d of %s-%d: %s", offset, TRANSACTION_STATE_TOPIC, state.partition, error)
                continue
            replayed += 1
        return replayed

    def shutdown(self) -> None:
        """Stop loads and completions at their next step and drop every leadership."""
        self._stop_leading()
        self._completer.shutdown(wait=True, cancel_futures=True)

    # ------------------------------------------------------------------ operations

    def init_producer_id(self, transactional_id: str, timeout_ms: int, *, producer_id: int = -1, producer_epoch: int = -1) -> ProducerIdAndEpoch:
        """InitProducerId with a transactional id: the producer id and epoch to use (see ``state.init_producer_id``).

        When an ongoing transaction of an older producer had to be aborted first, the abort is
        stored and started and ConcurrentTransactionsError is raised: the producer retries and
        gets its epoch once the abort completed.
        """
        machine.check_timeout(timeout_ms, self._settings.max_timeout_ms)
        state = self.coordinating(transactional_id)
        now = self._clock.milliseconds()
        outcome = self._change(
            state,
            transactional_id,
            lambda current: machine.init_producer_id(
                current, transactional_id, timeout_ms, producer_id=producer_id, producer_epoch=producer_epoch, now_ms=now, allocate=self._allocate
            ),
            lambda decided: decided.metadata,
        )
        if outcome.abort_first:
            self._start_completion(state, transactional_id)
            raise ConcurrentTransactionsError(transactional_id, "aborting the transaction of the fenced producer")
        return ProducerIdAndEpoch(outcome.metadata.producer_id, outcome.metadata.producer_epoch)

    def add_partitions(self, transactional_id: str, producer_id: int, producer_epoch: int, partitions: Iterable[TopicPartition]) -> None:
        """AddPartitionsToTxn: the partitions join the producer's transaction (which begins if none is open).

        Decided on the completed state once the previous transaction's markers are durable, or
        at once while they are written for transactions version 2 (see the module docstring);
        answered once they are durable (at most completion_wait_ms, else CONCURRENT_TRANSACTIONS:
        the retry finds the partitions added and waits again).
        """
        state = self.coordinating(transactional_id)
        wanted = list(partitions)
        self._await_settled(state, transactional_id, ahead=True)
        now = self._clock.milliseconds()
        self._change(
            state,
            transactional_id,
            lambda current: machine.add_partitions(current, transactional_id, producer_id, producer_epoch, wanted, now_ms=now),
            lambda metadata: metadata,
            ahead=True,
        )
        self._await_settled(state, transactional_id)
        with state.lock:
            current = state.transactions.get(transactional_id)
            if current is not None and current.unwritten_markers is not None and state.durable_markers.get(transactional_id) is not current.unwritten_markers:
                raise ConcurrentTransactionsError(transactional_id, "the previous transaction's markers are still being written")

    def _await_settled(self, state: TransactionsPartition, transactional_id: str, *, ahead: bool = False) -> None:
        """Wait (at most completion_wait_ms) while the id's previous transaction completes or a state change of it is written.

        A producer begins its next transaction as soon as EndTxn answers, while the markers
        and CompleteCommit / CompleteAbort are still being written (two acks=all round trips).
        Answering its AddPartitionsToTxn CONCURRENT_TRANSACTIONS makes the client retry after a
        fixed backoff (librdkafka: 20 ms, then another full round trip each time); waiting here
        and being woken by the completion (``TransactionsPartition.settled``) lets the next
        transaction begin the moment the previous one is complete. The decision itself is
        unchanged: ``_change`` then decides on the state as it is, CONCURRENT_TRANSACTIONS
        included when the wait ran out (markers retried for a moved leader). ``ahead``: markers
        above their transaction's batches being written need no wait (see :meth:`_view`).
        """
        with state.lock:
            if self._settled(state, transactional_id, ahead=ahead):
                return
            state.waiting += 1
            try:
                # A real-time bound, as every wait on a condition; a shutdown or a lost leadership ends it at the bound.
                state.settled.wait_for(
                    lambda: self._settled(state, transactional_id, ahead=ahead) or not self._is_current(state),
                    timeout=self._settings.completion_wait_ms / 1000.0,
                )
            finally:
                state.waiting -= 1

    @staticmethod
    def _settled(state: TransactionsPartition, transactional_id: str, *, ahead: bool = False) -> bool:
        """No state change of the id is being written and no marker of it is still to write (``ahead``: none that the next
        transaction must wait for, see :meth:`_view`). Under the lock."""
        if transactional_id in state.pending:
            return False
        current = state.transactions.get(transactional_id)
        if current is None:
            return True
        if current.state.completing:
            if state.markers_written.get(transactional_id) is current:
                return True
            return ahead and TransactionCoordinator._ahead_of(state, transactional_id, current) is not None
        return ahead or current.unwritten_markers is None or state.durable_markers.get(transactional_id) is current.unwritten_markers

    @staticmethod
    def _ahead_of(state: TransactionsPartition, transactional_id: str, prepared: TransactionMetadata) -> TransactionMarkers | None:
        """The markers of ``prepared`` being written now when they are above its batches (the next transaction may begin ahead of them)."""
        job = state.completing.get(transactional_id)
        if job is None or job.prepared is not prepared or not job.markers.above_batches:
            return None
        return job.markers

    def _view(self, state: TransactionsPartition, transactional_id: str, *, ahead: bool = False) -> TransactionMetadata | None:
        """The id's state as decisions see it. Under the lock.

        A decided transaction whose markers are all durable is its CompleteCommit / CompleteAbort;
        with ``ahead`` (AddPartitionsToTxn), so is one whose markers above its batches are being
        written, naming them as ``unwritten_markers``. Unwritten markers that are durable now are
        dropped, so the next record no longer names them.
        """
        current = state.transactions.get(transactional_id)
        if current is None:
            return None
        if current.state.completing:
            if state.markers_written.get(transactional_id) is current:
                return machine.complete(current, now_ms=current.last_update_timestamp_ms)
            unwritten = self._ahead_of(state, transactional_id, current) if ahead else None
            if unwritten is not None:
                return machine.complete(current, now_ms=current.last_update_timestamp_ms, unwritten=unwritten)
            return current
        if current.unwritten_markers is not None and state.durable_markers.get(transactional_id) is current.unwritten_markers:
            return replace(current, unwritten_markers=None)
        return current

    def add_offsets(self, transactional_id: str, producer_id: int, producer_epoch: int, group_id: str) -> TopicPartition:
        """AddOffsetsToTxn: the group's ``__consumer_offsets`` partition joins the transaction; returns it."""
        offsets = self._registry.get(OFFSETS_TOPIC)
        if offsets is None:
            raise TransactionCoordinatorNotAvailableError(transactional_id, f"{OFFSETS_TOPIC} does not exist yet")
        topic_partition = (OFFSETS_TOPIC, partition_for_group(group_id, offsets.partitions))
        self.add_partitions(transactional_id, producer_id, producer_epoch, [topic_partition])
        return topic_partition

    def verify_partitions(
        self, transactional_id: str, producer_id: int, producer_epoch: int, partitions: Iterable[TopicPartition]
    ) -> dict[TopicPartition, Exception | None]:
        """KIP-890 part 1: whether each partition is in the producer's ongoing transaction (None) or why not. Changes nothing."""
        state = self.coordinating(transactional_id)
        with state.lock:
            if transactional_id in state.pending:
                error = ConcurrentTransactionsError(transactional_id, "a state change is being written")
                return dict.fromkeys(partitions, error)
            current = self._view(state, transactional_id)
        return machine.verify_partitions(current, transactional_id, producer_id, producer_epoch, partitions)

    def end_transaction(self, transactional_id: str, producer_id: int, producer_epoch: int, *, commit: bool, bump_epoch: bool = True) -> ProducerIdAndEpoch:
        """EndTxn: store PrepareCommit / PrepareAbort (epoch bumped), start the markers, answer the id and epoch to use next.

        A retry of the EndTxn that ended the latest transaction is answered from the state.
        ``bump_epoch`` False for clients of transactions version 1 (see ``state.end_transaction``).
        """
        state = self.coordinating(transactional_id)
        now = self._clock.milliseconds()
        outcome = self._change(
            state,
            transactional_id,
            lambda current: machine.end_transaction(
                current, transactional_id, producer_id, producer_epoch, commit=commit, now_ms=now, allocate=self._allocate, bump_epoch=bump_epoch
            ),
            lambda decided: decided.metadata,
        )
        if outcome.metadata is not None:
            self._start_completion(state, transactional_id)
        return ProducerIdAndEpoch(outcome.producer_id, outcome.producer_epoch)

    def abort_transaction(self, transactional_id: str) -> TransactionMetadata:
        """An operator's abort of the id's ongoing transaction: store PrepareAbort (epoch bumped, fencing its producer), start the markers.

        Returns the stored PrepareAbort state; errors as ``state.abort_by_operator``.
        """
        state = self.coordinating(transactional_id)
        now = self._clock.milliseconds()
        prepared = self._change(
            state,
            transactional_id,
            lambda current: machine.abort_by_operator(current, transactional_id, now_ms=now, allocate=self._allocate),
            lambda metadata: metadata,
        )
        logger.info("%s: aborting its transaction at an operator's request (producer epoch now %d)", transactional_id, prepared.producer_epoch)
        self._start_completion(state, transactional_id)
        return prepared

    def describe(self, transactional_id: str) -> TransactionMetadata:
        """The id's state (DescribeTransactions); TransactionalIdNotFoundError for an unknown id."""
        state = self.coordinating(transactional_id)
        with state.lock:
            metadata = self._view(state, transactional_id)
        if metadata is None:
            raise TransactionalIdNotFoundError(transactional_id)
        return metadata

    def list_transactions(self, *, states: Collection[str] = (), producer_ids: Collection[int] = (), min_duration_ms: int = -1) -> list[TransactionMetadata]:
        """The ids of every loaded partition (ListTransactions), filtered by Kafka state name, producer id and open duration.

        ``min_duration_ms`` >= 0 keeps only transactions open at least that long: the
        "hanging transactions" view (an open transaction holds back its partitions' last stable offset).
        """
        now = self._clock.milliseconds()
        found = []
        for state in list(self._partitions.values()):
            if not state.active:
                continue
            with state.lock:
                candidates = [self._view(state, transactional_id) or metadata for transactional_id, metadata in state.transactions.items()]
            for metadata in candidates:
                if states and metadata.state.kafka_name not in states:
                    continue
                if producer_ids and metadata.producer_id not in producer_ids:
                    continue
                if min_duration_ms >= 0 and (metadata.state.idle or now - metadata.start_timestamp_ms < min_duration_ms):
                    continue
                found.append(metadata)
        return sorted(found, key=lambda metadata: metadata.transactional_id)

    # ------------------------------------------------------------------ periodic work

    def abort_timed_out_transactions(self) -> int:
        """Abort every ongoing transaction open past its timeout (epoch bumped: its producer is fenced); returns how many.

        Then stores the completions no later change superseded (:meth:`store_completions`).
        """
        try:
            return self._abort_timed_out_transactions()
        finally:
            self.store_completions()

    def store_completions(self) -> int:
        """Store CompleteCommit / CompleteAbort for each transaction whose markers are durable and whose id changed no further since.

        Returns how many are done (stored, superseded meanwhile, or left to the next leader); one that could not be stored waits for the next pass.
        """
        stored = 0
        for state in list(self._partitions.values()):
            if not state.active:
                continue
            with state.lock:
                candidates = [
                    (transactional_id, prepared) for transactional_id, prepared in state.markers_written.items() if transactional_id not in state.pending
                ]
            for transactional_id, prepared in candidates:
                if self._store_completion(state, transactional_id, prepared) is True:
                    stored += 1
        return stored

    def _abort_timed_out_transactions(self) -> int:
        aborted = 0
        for state in list(self._partitions.values()):
            if not state.active:
                continue
            with state.lock:
                candidates = [transactional_id for transactional_id in state.transactions if transactional_id not in state.pending]
            for transactional_id in candidates:
                try:
                    prepared = self._change(state, transactional_id, self._timeout_abort, lambda metadata: metadata)
                except (ConcurrentTransactionsError, NotTransactionCoordinatorError, TransactionCoordinatorNotAvailableError) as error:
                    logger.info("%s: the timeout abort waits for the next round: %s", transactional_id, error)
                    continue
                if prepared is not None:
                    logger.info("%s: aborting its transaction, open longer than %d ms", transactional_id, prepared.timeout_ms)
                    self._start_completion(state, transactional_id)
                    aborted += 1
        return aborted

    def _timeout_abort(self, current: TransactionMetadata | None) -> TransactionMetadata | None:
        if current is None:
            return None
        return machine.abort_timed_out(current, now_ms=self._clock.milliseconds(), allocate=self._allocate)

    def expire_transactional_ids(self) -> int:
        """Remove idle ids unused for transactional.id.expiration.ms with tombstones; returns how many."""
        removed = 0
        for state in list(self._partitions.values()):
            if not state.active:
                continue
            now = self._clock.milliseconds()
            with state.lock:
                candidates = [
                    transactional_id
                    for transactional_id, metadata in state.transactions.items()
                    if transactional_id not in state.pending and machine.expired(metadata, now_ms=now, expiration_ms=self._settings.id_expiration_ms)
                ]
                state.pending.update(candidates)
            for transactional_id in candidates:
                try:
                    self._write(state, transactional_id, None)
                    with state.lock:
                        state.transactions.pop(transactional_id, None)
                        state.markers_written.pop(transactional_id, None)
                    removed += 1
                except Exception as error:
                    logger.info("%s: expiry waits for the next round: %s", transactional_id, error)
                finally:
                    with state.lock:
                        state.pending.discard(transactional_id)
                        state.settled.notify_all()
                        if transactional_id not in state.transactions:
                            state.durable_markers.pop(transactional_id, None)
        if removed:
            logger.info("expired %d transactional ids unused for %d ms", removed, self._settings.id_expiration_ms)
        return removed

    # ------------------------------------------------------------------ state changes

    def _change(
        self,
        state: TransactionsPartition,
        transactional_id: str,
        decide: Callable[[TransactionMetadata | None], T],
        to_store: Callable[[T], TransactionMetadata | None],
        *,
        as_completed: bool = True,
        ahead: bool = False,
    ) -> T:
        """Decide a change under the partition's lock, store it (acks=all) with the id pending, then make it current.

        ``decide`` sees a transaction whose markers are durable as completed (``as_completed``,
        see :meth:`_view`, with ``ahead``); the stored record then takes the completion record's place.
        """
        with state.lock:
            if not self._is_current(state):
                raise NotTransactionCoordinatorError(transactional_id, state.partition)
            if transactional_id in state.pending:
                raise ConcurrentTransactionsError(transactional_id, "a state change is being written")
            current = self._view(state, transactional_id, ahead=ahead) if as_completed else state.transactions.get(transactional_id)
            decided = decide(current)
            metadata = to_store(decided)
            if metadata is None or metadata == state.transactions.get(transactional_id):
                return decided
            state.pending.add(transactional_id)
        try:
            self._write(state, transactional_id, metadata)
            with state.lock:
                state.transactions[transactional_id] = metadata
                state.markers_written.pop(transactional_id, None)  # superseded: the log no longer ends in its PrepareCommit
        finally:
            with state.lock:
                state.pending.discard(transactional_id)
                state.settled.notify_all()
        return decided

    def _write(self, state: TransactionsPartition, transactional_id: str, metadata: TransactionMetadata | None) -> None:
        """Append the id's record (None: a tombstone) and wait for the in-sync replicas.

        NotTransactionCoordinatorError when the leadership ended; TransactionCoordinatorNotAvailableError
        (retriable) when the record could not be appended or replicated in request.timeout.ms.
        """
        now = self._clock.milliseconds()
        builder = RecordBatchBuilder()
        builder.append(now, encode_key(transactional_id), None if metadata is None else encode_value(metadata.to_log_value()))
        try:
            with self._wait_slot():
                with state.lock:
                    if not self._is_current(state):
                        raise NotTransactionCoordinatorError(transactional_id, state.partition)
                    info = self._replica_manager.append_to_partition(TRANSACTION_STATE_TOPIC, state.partition, builder.build(), acks=ACKS_ALL)
                self._wait_for_replicas(state.partition, info.last_offset + 1, self._settings.write_timeout_ms)
        except NotTransactionCoordinatorError:
            raise
        except NotLeaderOrFollowerError:
            raise NotTransactionCoordinatorError(transactional_id, state.partition) from None
        except Exception as error:  # ReplicationWaitersFullError, NotEnoughReplicasError, a timeout...
            raise TransactionCoordinatorNotAvailableError(
                transactional_id, f"its state could not be stored in partition {state.partition} of {TRANSACTION_STATE_TOPIC}: {error}"
            ) from error

    # ------------------------------------------------------------------ completion (markers)

    @staticmethod
    def _job_needed(state: TransactionsPartition, transactional_id: str) -> MarkerJob | None:
        """The markers the id still needs written (its decided transaction's, or those its record names as unwritten). Under the lock."""
        current = state.transactions.get(transactional_id)
        if current is None:
            return None
        if current.state.completing:
            return None if state.markers_written.get(transactional_id) is current else MarkerJob(TransactionMarkers.of(current), current)
        unwritten = current.unwritten_markers
        if unwritten is not None and state.durable_markers.get(transactional_id) is not unwritten:
            return MarkerJob(unwritten, None)
        return None

    def _start_completion(self, state: TransactionsPartition, transactional_id: str) -> None:
        with state.lock:
            if transactional_id in state.completing:
                return
            job = self._job_needed(state, transactional_id)
            if job is None:
                return
            state.completing[transactional_id] = job
        try:
            self._completer.submit(self._complete, state, transactional_id, job)
        except RuntimeError:  # the completer is shut down: the next leader completes it
            with state.lock:
                if state.completing.get(transactional_id) is job:
                    del state.completing[transactional_id]
                state.settled.notify_all()

    def _complete(self, state: TransactionsPartition, transactional_id: str, job: MarkerJob) -> None:
        """Write the job's markers until every partition has its own; they are then durable (``durable_markers``).

        When the job ends a PrepareCommit / PrepareAbort that is still the id's state, the
        transaction is then complete in memory (``markers_written``): the id's next change is
        stored in place of CompleteCommit / CompleteAbort, or :meth:`store_completions` stores that
        record. The job goes on when the next transaction began ahead of its markers (its record
        names them) and ends when neither is the id's state any more. The id leaves ``completing``
        in the step that makes the markers durable, so the next decision starts its own
        completion; should one be needed when this one ends otherwise, it is started then.
        """
        try:
            done: set[TopicPartition] = set()
            while self._is_current(state):
                with state.lock:
                    current = state.transactions.get(transactional_id)
                    needed = current is not None and (current is job.prepared or current.unwritten_markers is job.markers)
                if not needed:
                    return
                remaining = sorted(job.markers.partitions - done)
                if remaining:
                    done |= self._write_markers(state, transactional_id, job.markers, remaining)
                if job.markers.partitions <= done:
                    with state.lock:
                        state.durable_markers[transactional_id] = job.markers
                        if job.prepared is not None and state.transactions.get(transactional_id) is job.prepared:
                            state.markers_written[transactional_id] = job.prepared
                        # In the step that makes the markers durable: the id's next decision starts a completion of its own.
                        if state.completing.get(transactional_id) is job:
                            del state.completing[transactional_id]
                        state.settled.notify_all()
                    return
                self._stopping.wait(self._settings.marker_retry_backoff_ms / 1000.0)
        except Exception:
            logger.exception("%s: completing its transaction failed; the next leader of partition %d completes it", transactional_id, state.partition)
        finally:
            with state.lock:
                ended_here = state.completing.get(transactional_id) is job
                if ended_here:
                    del state.completing[transactional_id]
                state.settled.notify_all()
                again = ended_here and self._is_current(state) and self._job_needed(state, transactional_id) is not None
            if again:
                self._start_completion(state, transactional_id)

    def _write_markers(
        self, state: TransactionsPartition, transactional_id: str, markers: TransactionMarkers, partitions: list[TopicPartition]
    ) -> set[TopicPartition]:
        """The partitions that got their marker (or no longer exist); logs the rest, which are retried."""
        request = MarkerRequest(
            transactional_id=transactional_id,
            producer_id=markers.producer_id,
            producer_epoch=markers.producer_epoch,
            commit=markers.commit,
            coordinator_epoch=state.leader_epoch,
            partitions=partitions,
            above_batches=markers.above_batches,
        )
        try:
            results = self._markers.write_markers(request)
        except Exception as error:
            logger.warning("%s: writing markers failed, retrying: %s", transactional_id, error)
            return set()
        written: set[TopicPartition] = set()
        for topic_partition in partitions:
            outcome = results.get(topic_partition, TransactionCoordinatorNotAvailableError(transactional_id, "no answer for the partition"))
            if outcome is None:
                written.add(topic_partition)
            elif isinstance(outcome, UnknownTopicOrPartitionError) and self._registry.get(topic_partition[0]) is None:
                logger.info("%s: partition %d of %r no longer exists; it needs no marker", transactional_id, topic_partition[1], topic_partition[0])
                written.add(topic_partition)
            else:
                logger.info(
                    "%s: marker for partition %d of %r not written yet (%s); retrying",
                    transactional_id,
                    topic_partition[1],
                    topic_partition[0],
                    outcome,
                )
        return written

    def _store_completion(self, state: TransactionsPartition, transactional_id: str, prepared: TransactionMetadata) -> bool | None:
        """True when the completion is stored or no longer needed, None while another change of the id is written, False to retry."""
        now = self._clock.milliseconds()
        try:
            self._change(
                state,
                transactional_id,
                lambda current: machine.complete(prepared, now_ms=now) if current is prepared else None,
                lambda metadata: metadata,
                as_completed=False,
            )
        except ConcurrentTransactionsError:
            return None
        except TransactionCoordinatorNotAvailableError as error:
            logger.info("%s: storing the completion failed, retrying: %s", transactional_id, error)
            return False
        except NotTransactionCoordinatorError:
            return True  # the next leader completes it
        return True

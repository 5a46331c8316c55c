"""The transaction state machine of one transactional id: pure functions over immutable metadata.

Kafka's states and transitions (``TransactionState``), with transactions version 2 (KIP-890
part 2) throughout::

    Empty ──AddPartitions──> Ongoing ──EndTxn(commit)──> PrepareCommit ──markers──> CompleteCommit
      ^                        │  └──EndTxn(abort), timeout, InitProducerId──> PrepareAbort ──markers──> CompleteAbort
      └──InitProducerId── CompleteCommit / CompleteAbort ──AddPartitions──> Ongoing
    Empty / Complete* ──expiry──> Dead (tombstone)

Every operation takes the current metadata (None for an unknown id), checks the caller's
producer id and epoch, and returns the metadata to persist (or raises a typed error from
``transactions.errors``; nothing changes then). The coordinator persists the result before
it becomes current, and while a write is in flight no other call on the id is accepted
(CONCURRENT_TRANSACTIONS), as Kafka's pending state does.

KIP-890's epoch rule: every commit and abort bumps the producer epoch when it is *prepared*;
the markers carry the bumped epoch and EndTxn answers it. A late EndTxn or a delayed marker
of an older transaction therefore carries an older epoch than anything the later transaction
wrote and is refused (PRODUCER_FENCED) instead of ending the later transaction. A retried
EndTxn of the transaction that just ended (same producer id, the epoch before the bump, same
outcome) is answered from the state, never applied again. When an epoch would reach
``MAX_PRODUCER_EPOCH``, a new producer id is allocated at the prepare and the producer moves
to it (epoch 0) once the transaction completes, as Kafka's NextProducerId does.

Markers ahead of the next transaction (transactions version 2 only): once a commit or abort is
prepared with a bumped epoch, its markers carry an epoch above every batch of that transaction,
and a partition leader can tell them from the next transaction's batches. The producer's next
AddPartitionsToTxn may then begin the next transaction while those markers are still being
written (:func:`complete` with ``unwritten``): the Ongoing record names them
(:class:`TransactionMarkers`, ``unwritten_markers``), so a coordinator that loads it writes them
again. Until they are durable no other change of the id is decided (CONCURRENT_TRANSACTIONS)
and no partition is verified for the next transaction, so nothing of it is appended before the
previous transaction's marker in any partition.

Aborts the producer did not ask for (the transaction timed out, or a new producer with the
same transactional id fenced it with InitProducerId) bump the epoch too but are no "retry"
target: the old producer's EndTxn is PRODUCER_FENCED.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace

from broker_nodes.coordinator.transactions.errors import (
    ConcurrentTransactionsError,
    InvalidProducerIdMappingError,
    InvalidTransactionStateError,
    InvalidTransactionTimeoutError,
    ProducerFencedError,
    TransactionalIdNotFoundError,
)
from broker_nodes.producer_ids import MAX_PRODUCER_EPOCH
from log_formats import transaction_log_records as log_records
from log_formats.transaction_log_records import TransactionLogValue, UnwrittenMarkers, partitions_by_topic

TopicPartition = tuple[str, int]
NO_EPOCH = -1
AllocateProducerId = Callable[[], int]


class TransactionState(enum.Enum):
    """Kafka's transaction states: value = the id persisted in TransactionLogValue."""

    EMPTY = log_records.STATE_EMPTY
    ONGOING = log_records.STATE_ONGOING
    PREPARE_COMMIT = log_records.STATE_PREPARE_COMMIT
    PREPARE_ABORT = log_records.STATE_PREPARE_ABORT
    COMPLETE_COMMIT = log_records.STATE_COMPLETE_COMMIT
    COMPLETE_ABORT = log_records.STATE_COMPLETE_ABORT
    DEAD = log_records.STATE_DEAD
    PREPARE_EPOCH_FENCE = log_records.STATE_PREPARE_EPOCH_FENCE

    @property
    def kafka_name(self) -> str:
        """The name DescribeTransactions and ListTransactions answer (Kafka's ``TransactionState.name``)."""
        return _KAFKA_NAMES[self]

    @property
    def completing(self) -> bool:
        """PrepareCommit / PrepareAbort: the outcome is decided and markers are being written."""
        return self in (TransactionState.PREPARE_COMMIT, TransactionState.PREPARE_ABORT)

    @property
    def idle(self) -> bool:
        """No transaction open: a new one may begin, and the id may expire."""
        return self in (TransactionState.EMPTY, TransactionState.COMPLETE_COMMIT, TransactionState.COMPLETE_ABORT)


_KAFKA_NAMES = {
    TransactionState.EMPTY: "Empty",
    TransactionState.ONGOING: "Ongoing",
    TransactionState.PREPARE_COMMIT: "PrepareCommit",
    TransactionState.PREPARE_ABORT: "PrepareAbort",
    TransactionState.COMPLETE_COMMIT: "CompleteCommit",
    TransactionState.COMPLETE_ABORT: "CompleteAbort",
    TransactionState.DEAD: "Dead",
    TransactionState.PREPARE_EPOCH_FENCE: "PrepareEpochFence",
}

# Kafka's TransactionState.validPreviousStates: every transition below is checked against it.
VALID_PREVIOUS_STATES: dict[TransactionState, frozenset[TransactionState]] = {
    TransactionState.EMPTY: frozenset({TransactionState.EMPTY, TransactionState.COMPLETE_COMMIT, TransactionState.COMPLETE_ABORT}),
    TransactionState.ONGOING: frozenset({TransactionState.ONGOING, TransactionState.EMPTY, TransactionState.COMPLETE_COMMIT, TransactionState.COMPLETE_ABORT}),
    TransactionState.PREPARE_COMMIT: frozenset({TransactionState.ONGOING}),
    TransactionState.PREPARE_ABORT: frozenset(
        {
            TransactionState.ONGOING,
            TransactionState.PREPARE_EPOCH_FENCE,
            TransactionState.EMPTY,
            TransactionState.COMPLETE_COMMIT,
            TransactionState.COMPLETE_ABORT,
        }
    ),
    TransactionState.COMPLETE_COMMIT: frozenset({TransactionState.PREPARE_COMMIT}),
    TransactionState.COMPLETE_ABORT: frozenset({TransactionState.PREPARE_ABORT}),
    TransactionState.DEAD: frozenset({TransactionState.EMPTY, TransactionState.COMPLETE_COMMIT, TransactionState.COMPLETE_ABORT}),
    TransactionState.PREPARE_EPOCH_FENCE: frozenset({TransactionState.ONGOING}),
}


class IllegalTransitionError(RuntimeError):
    """A transition Kafka's state machine does not allow: a coordinator bug, never a client's error."""

    def __init__(self, transactional_id: str, source: TransactionState, target: TransactionState) -> None:
        super().__init__(f"transactional id {transactional_id!r}: illegal transition {source.kafka_name} -> {target.kafka_name}")


@dataclass(frozen=True, slots=True)
class TransactionMarkers:
    """The markers that end one decided transaction: every partition gets a control batch of this producer id and epoch.

    ``above_batches``: the epoch was bumped at the prepare (transactions version 2), so it is
    above every batch of the transaction; a partition whose producer already holds this epoch
    or a later one has this marker, or the next transaction's batches and no batch of this one,
    and takes no marker (see ``marker_appender``). False for a decision replayed from the log
    (whose version is not recorded) and for transactions version 1, whose markers keep the epoch.
    """

    producer_id: int
    producer_epoch: int
    commit: bool
    partitions: frozenset[TopicPartition]
    above_batches: bool

    @classmethod
    def of(cls, prepared: TransactionMetadata) -> TransactionMarkers:
        """The markers of a PrepareCommit / PrepareAbort."""
        commit = prepared.state is TransactionState.PREPARE_COMMIT
        return cls(prepared.producer_id, prepared.producer_epoch, commit, prepared.partitions, prepared.epoch_bumped)

    def to_log(self) -> UnwrittenMarkers:
        return UnwrittenMarkers(self.producer_id, self.producer_epoch, self.commit, partitions_by_topic(self.partitions))

    @classmethod
    def from_log(cls, value: UnwrittenMarkers) -> TransactionMarkers:
        """Markers a record names as unwritten: only ever those of a bumped epoch (see the module docstring)."""
        partitions = frozenset((topic, partition) for topic, partitions in value.partitions.items() for partition in partitions)
        return cls(value.producer_id, value.producer_epoch, value.commit, partitions, above_batches=True)


@dataclass(frozen=True, slots=True)
class TransactionMetadata:
    """One transactional id's state (Kafka's ``TransactionMetadata``), immutable: transitions return a new one.

    ``ended_by`` is the (producer id, epoch) of the EndTxn that ended the latest transaction,
    kept so that its retry is recognised; None when that transaction was aborted by the
    coordinator (timeout, fencing) or none ended yet. ``ended_by_inferred``: it was inferred
    from a replayed record, which cannot say who ended an aborted transaction (a coordinator
    abort bumps the epoch as the producer's own EndTxn does): a retry with the same outcome is
    taken for the producer's own, and a commit after such an abort is a fenced producer's
    (Kafka's TV2 answer to a timed-out producer's late EndTxn).

    ``unwritten_markers``: the previous transaction's markers, which may not all be durable
    (stored; see the module docstring). ``epoch_bumped`` (memory only): a PrepareCommit /
    PrepareAbort whose epoch was bumped here, whose markers are therefore ``above_batches``.
    """

    transactional_id: str  # qualified: tenant~id
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    state: TransactionState
    partitions: frozenset[TopicPartition]
    start_timestamp_ms: int  # when the current transaction began (-1: none)
    last_update_timestamp_ms: int
    previous_producer_id: int = log_records.NO_PRODUCER_ID
    next_producer_id: int = log_records.NO_PRODUCER_ID
    ended_by: tuple[int, int] | None = None
    ended_by_inferred: bool = False
    unwritten_markers: TransactionMarkers | None = None
    epoch_bumped: bool = False

    def transition(self, target: TransactionState, **changes: object) -> TransactionMetadata:
        """This metadata in ``target`` with ``changes``; IllegalTransitionError when Kafka forbids it."""
        if self.state not in VALID_PREVIOUS_STATES[target]:
            raise IllegalTransitionError(self.transactional_id, self.state, target)
        return replace(self, state=target, **changes)  # type: ignore[arg-type]  # dataclasses.replace takes the fields as keywords

    def to_log_value(self) -> TransactionLogValue:
        return TransactionLogValue(
            producer_id=self.producer_id,
            producer_epoch=self.producer_epoch,
            timeout_ms=self.timeout_ms,
            state=self.state.value,
            partitions=partitions_by_topic(self.partitions),
            last_update_timestamp_ms=self.last_update_timestamp_ms,
            start_timestamp_ms=self.start_timestamp_ms,
            previous_producer_id=self.previous_producer_id,
            next_producer_id=self.next_producer_id,
            unwritten_markers=None if self.unwritten_markers is None else self.unwritten_markers.to_log(),
        )

    @classmethod
    def from_log_value(cls, transactional_id: str, value: TransactionLogValue) -> TransactionMetadata:
        """The metadata a replayed record describes; ``ended_by`` is inferred as KIP-890 implies (the epoch before the bump)."""
        state = TransactionState(value.state)
        ended_by = None
        if state in (TransactionState.PREPARE_COMMIT, TransactionState.PREPARE_ABORT):
            ended_by = (value.producer_id, value.producer_epoch - 1)
        elif state in (TransactionState.COMPLETE_COMMIT, TransactionState.COMPLETE_ABORT):
            rotated = value.previous_producer_id != log_records.NO_PRODUCER_ID and value.producer_epoch == 0
            ended_by = (value.previous_producer_id, MAX_PRODUCER_EPOCH - 1) if rotated else (value.producer_id, value.producer_epoch - 1)
        return cls(
            transactional_id=transactional_id,
            producer_id=value.producer_id,
            producer_epoch=value.producer_epoch,
            timeout_ms=value.timeout_ms,
            state=state,
            partitions=frozenset((topic, partition) for topic, partitions in value.partitions.items() for partition in partitions),
            start_timestamp_ms=value.start_timestamp_ms,
            last_update_timestamp_ms=value.last_update_timestamp_ms,
            previous_producer_id=value.previous_producer_id,
            next_producer_id=value.next_producer_id,
            ended_by=ended_by,
            ended_by_inferred=ended_by is not None,
            unwritten_markers=None if value.unwritten_markers is None else TransactionMarkers.from_log(value.unwritten_markers),
        )


@dataclass(frozen=True, slots=True)
class InitOutcome:
    """What InitProducerId decided: persist ``metadata``; answer ``producer_id``/``epoch``, or CONCURRENT_TRANSACTIONS
    after persisting when ``abort_first`` (an ongoing transaction of a fenced producer is being aborted)."""

    metadata: TransactionMetadata
    abort_first: bool = False


@dataclass(frozen=True, slots=True)
class EndOutcome:
    """What EndTxn decided: persist ``metadata`` (None: a retry, nothing to persist) and answer the id and epoch the producer uses next."""

    metadata: TransactionMetadata | None
    producer_id: int
    producer_epoch: int


# ---------------------------------------------------------------------- InitProducerId


def check_timeout(timeout_ms: int, max_timeout_ms: int) -> None:
    if timeout_ms <= 0 or timeout_ms > max_timeout_ms:
        raise InvalidTransactionTimeoutError(timeout_ms, max_timeout_ms)


def init_producer_id(
    current: TransactionMetadata | None,
    transactional_id: str,
    timeout_ms: int,
    *,
    producer_id: int,
    producer_epoch: int,
    now_ms: int,
    allocate: AllocateProducerId,
) -> InitOutcome:
    """InitProducerId with a transactional id. The caller checked the timeout (:func:`check_timeout`).

    An unknown id gets a new producer id with epoch 0. A known one gets its epoch bumped (a
    new producer id when the epoch runs out), which fences every older producer of the id;
    an open transaction is aborted first (``abort_first``). KIP-360: a producer that names
    its id and epoch must name the current ones (or, for a retried InitProducerId whose
    answer was lost, the epoch just before, which is answered from the state).
    """
    if current is None or current.state is TransactionState.DEAD:
        return InitOutcome(TransactionMetadata(transactional_id, allocate(), 0, timeout_ms, TransactionState.EMPTY, frozenset(), -1, now_ms))
    _check_not_busy(current)
    _check_markers_written(current)
    if producer_id >= 0:
        if producer_id != current.producer_id:
            raise ProducerFencedError(transactional_id, producer_epoch, current.producer_epoch)
        if producer_epoch == current.producer_epoch - 1 and current.state is TransactionState.EMPTY:
            return InitOutcome(current)  # a retry of the InitProducerId that produced this epoch
        if producer_epoch != current.producer_epoch:
            raise ProducerFencedError(transactional_id, producer_epoch, current.producer_epoch)
    if current.state is TransactionState.ONGOING:
        return InitOutcome(_prepare(current, TransactionState.PREPARE_ABORT, now_ms, allocate, ended_by=None), abort_first=True)
    if current.producer_epoch + 1 >= MAX_PRODUCER_EPOCH:
        bumped = {"producer_id": allocate(), "producer_epoch": 0, "previous_producer_id": current.producer_id}
    else:
        bumped = {"producer_epoch": current.producer_epoch + 1}
    return InitOutcome(
        current.transition(
            TransactionState.EMPTY,
            timeout_ms=timeout_ms,
            partitions=frozenset(),
            start_timestamp_ms=-1,
            last_update_timestamp_ms=now_ms,
            next_producer_id=log_records.NO_PRODUCER_ID,
            ended_by=None,
            ended_by_inferred=False,
            **bumped,
        )
    )


# ---------------------------------------------------------------------- AddPartitionsToTxn / AddOffsetsToTxn


def add_partitions(
    current: TransactionMetadata | None,
    transactional_id: str,
    producer_id: int,
    producer_epoch: int,
    partitions: Iterable[TopicPartition],
    *,
    now_ms: int,
) -> TransactionMetadata | None:
    """Add partitions to the producer's transaction (beginning one when idle); None when they are all in it already."""
    current = _check_producer(current, transactional_id, producer_id, producer_epoch)
    _check_not_busy(current)
    added = frozenset(partitions)
    if current.state is TransactionState.ONGOING:
        if added <= current.partitions:
            return None
        return current.transition(TransactionState.ONGOING, partitions=current.partitions | added, last_update_timestamp_ms=now_ms)
    if not current.state.idle:
        raise InvalidTransactionStateError(transactional_id, f"partitions cannot be added in state {current.state.kafka_name}")
    # A new transaction: a late EndTxn of the previous one is no retry any more (PRODUCER_FENCED by its epoch).
    return current.transition(
        TransactionState.ONGOING, partitions=added, start_timestamp_ms=now_ms, last_update_timestamp_ms=now_ms, ended_by=None, ended_by_inferred=False
    )


def verify_partitions(
    current: TransactionMetadata | None, transactional_id: str, producer_id: int, producer_epoch: int, partitions: Iterable[TopicPartition]
) -> dict[TopicPartition, Exception | None]:
    """KIP-890 part 1: for each partition, None when it is in the producer's ongoing transaction, else the error a write to it gets.

    The producer's id and epoch must be current (else every partition gets the error), and
    the transaction must be ongoing: a partition of a transaction that is being completed is
    no longer one a batch may be appended to.
    """
    wanted = list(partitions)
    try:
        current = _check_producer(current, transactional_id, producer_id, producer_epoch)
    except Exception as error:
        return dict.fromkeys(wanted, error)
    if current.unwritten_markers is not None:
        # Nothing of the next transaction may precede the previous one's marker in a partition.
        return dict.fromkeys(wanted, ConcurrentTransactionsError(transactional_id, "the previous transaction's markers are being written"))
    outcome: dict[TopicPartition, Exception | None] = {}
    for topic_partition in wanted:
        if current.state is TransactionState.ONGOING and topic_partition in current.partitions:
            outcome[topic_partition] = None
        else:
            outcome[topic_partition] = InvalidTransactionStateError(
                transactional_id, f"partition {topic_partition[1]} of {topic_partition[0]!r} is not in its ongoing transaction ({current.state.kafka_name})"
            )
    return outcome


# ---------------------------------------------------------------------- EndTxn


def end_transaction(
    current: TransactionMetadata | None,
    transactional_id: str,
    producer_id: int,
    producer_epoch: int,
    *,
    commit: bool,
    now_ms: int,
    allocate: AllocateProducerId,
    bump_epoch: bool = True,
) -> EndOutcome:
    """EndTxn: prepare the commit or abort of the producer's transaction, bumping its epoch (see the module docstring).

    ``bump_epoch`` False serves clients of transactions version 1 (EndTxn before v5), which
    cannot learn a new epoch from the answer: the epoch stays, as Kafka keeps it for them,
    and only a retry of the same EndTxn is recognised (KIP-890's defence needs version 2).
    """
    if current is not None and current.ended_by == (producer_id, producer_epoch):
        return _retried_end(current, transactional_id, producer_epoch, commit)
    current = _check_producer(current, transactional_id, producer_id, producer_epoch)
    _check_not_busy(current)
    _check_markers_written(current)
    target = TransactionState.PREPARE_COMMIT if commit else TransactionState.PREPARE_ABORT
    completed = TransactionState.COMPLETE_COMMIT if commit else TransactionState.COMPLETE_ABORT
    if not bump_epoch and current.state is completed:
        # Transactions version 1 (Kafka's rule): the same outcome again at the same epoch is a
        # retry, also after a reload, which cannot tell who ended the transaction.
        return EndOutcome(None, current.producer_id, current.producer_epoch)
    if current.state is TransactionState.ONGOING or (not commit and bump_epoch and current.state.idle):
        # KIP-890 (version 2 only): an abort without an open transaction is accepted (the client
        # may not know whether its last call began one); it bumps the epoch and writes no marker.
        prepared = _prepare(current, target, now_ms, allocate, ended_by=(producer_id, producer_epoch), bump_epoch=bump_epoch)
        return EndOutcome(prepared, *next_producer(prepared))
    raise InvalidTransactionStateError(transactional_id, f"cannot {'commit' if commit else 'abort'} in state {current.state.kafka_name}")


def _retried_end(current: TransactionMetadata, transactional_id: str, producer_epoch: int, commit: bool) -> EndOutcome:
    committed = current.state in (TransactionState.PREPARE_COMMIT, TransactionState.COMPLETE_COMMIT)
    aborted = current.state in (TransactionState.PREPARE_ABORT, TransactionState.COMPLETE_ABORT)
    if (commit and not committed) or (not commit and not aborted):
        if current.ended_by_inferred and aborted:
            # After a reload an abort may have been the coordinator's (a timeout): the late commit is a fenced producer's.
            raise ProducerFencedError(transactional_id, producer_epoch, current.producer_epoch)
        raise InvalidTransactionStateError(
            transactional_id, f"a retried {'commit' if commit else 'abort'} of a transaction that ended otherwise ({current.state.kafka_name})"
        )
    if current.state.completing:
        raise ConcurrentTransactionsError(transactional_id, current.state.kafka_name)
    return EndOutcome(None, current.producer_id, current.producer_epoch)


def abort_timed_out(current: TransactionMetadata, *, now_ms: int, allocate: AllocateProducerId) -> TransactionMetadata | None:
    """PrepareAbort of an ongoing transaction open longer than its timeout; None when it is not one."""
    if current.state is not TransactionState.ONGOING or current.start_timestamp_ms + current.timeout_ms > now_ms:
        return None
    if current.unwritten_markers is not None:
        return None  # the next round, once the previous transaction's markers are durable
    return _prepare(current, TransactionState.PREPARE_ABORT, now_ms, allocate, ended_by=None)


def abort_by_operator(current: TransactionMetadata | None, transactional_id: str, *, now_ms: int, allocate: AllocateProducerId) -> TransactionMetadata:
    """PrepareAbort of the id's ongoing transaction at an operator's request, its epoch bumped (the producer is fenced).

    TransactionalIdNotFoundError for an unknown id, CONCURRENT_TRANSACTIONS while a commit or
    abort completes, INVALID_TXN_STATE when no transaction is open. Like a timeout abort it is
    no retry target: the producer's own EndTxn then answers PRODUCER_FENCED.
    """
    if current is None or current.state is TransactionState.DEAD:
        raise TransactionalIdNotFoundError(transactional_id)
    _check_not_busy(current)
    _check_markers_written(current)
    if current.state is not TransactionState.ONGOING:
        raise InvalidTransactionStateError(transactional_id, f"no transaction is open (state {current.state.kafka_name})")
    return _prepare(current, TransactionState.PREPARE_ABORT, now_ms, allocate, ended_by=None)


def complete(current: TransactionMetadata, *, now_ms: int, unwritten: TransactionMarkers | None = None) -> TransactionMetadata:
    """CompleteCommit / CompleteAbort once every marker is written; moves to the next producer id when one was allocated.

    ``unwritten``: the markers are still being written and the next transaction begins ahead of
    them (only for markers ``above_batches``); the completed state names them, and so does every
    state decided from it until they are durable.
    """
    if unwritten is not None and not unwritten.above_batches:
        raise ValueError("only markers above their transaction's batches may be written behind the next transaction")
    target = TransactionState.COMPLETE_COMMIT if current.state is TransactionState.PREPARE_COMMIT else TransactionState.COMPLETE_ABORT
    changes: dict[str, object] = {"partitions": frozenset(), "last_update_timestamp_ms": now_ms, "unwritten_markers": unwritten, "epoch_bumped": False}
    if current.next_producer_id != log_records.NO_PRODUCER_ID:
        changes.update(
            producer_id=current.next_producer_id,
            producer_epoch=0,
            previous_producer_id=current.producer_id,
            next_producer_id=log_records.NO_PRODUCER_ID,
        )
    return current.transition(target, **changes)


def next_producer(metadata: TransactionMetadata) -> tuple[int, int]:
    """The producer id and epoch the producer continues with after ``metadata``'s transaction (EndTxn's answer)."""
    if metadata.next_producer_id != log_records.NO_PRODUCER_ID:
        return metadata.next_producer_id, 0
    return metadata.producer_id, metadata.producer_epoch


def expired(current: TransactionMetadata, *, now_ms: int, expiration_ms: int) -> bool:
    """transactional.id.expiration.ms: an idle id unused that long is removed (a tombstone)."""
    return current.state.idle and current.last_update_timestamp_ms + expiration_ms <= now_ms


# ---------------------------------------------------------------------- helpers


def _prepare(
    current: TransactionMetadata,
    target: TransactionState,
    now_ms: int,
    allocate: AllocateProducerId,
    *,
    ended_by: tuple[int, int] | None,
    bump_epoch: bool = True,
) -> TransactionMetadata:
    """PrepareCommit/PrepareAbort with the epoch bumped (unless ``bump_epoch`` is False); the markers carry that epoch."""
    epoch = current.producer_epoch + 1 if bump_epoch else current.producer_epoch
    next_producer_id = allocate() if bump_epoch and epoch >= MAX_PRODUCER_EPOCH else log_records.NO_PRODUCER_ID
    start = current.start_timestamp_ms if current.state is TransactionState.ONGOING else now_ms
    return current.transition(
        target,
        producer_epoch=epoch,
        next_producer_id=next_producer_id,
        start_timestamp_ms=start,
        last_update_timestamp_ms=now_ms,
        ended_by=ended_by,
        ended_by_inferred=False,
        epoch_bumped=bump_epoch,
    )


def _check_producer(current: TransactionMetadata | None, transactional_id: str, producer_id: int, producer_epoch: int) -> TransactionMetadata:
    if current is None or current.state is TransactionState.DEAD or producer_id != current.producer_id:
        raise InvalidProducerIdMappingError(transactional_id, producer_id)
    if producer_epoch != current.producer_epoch:
        raise ProducerFencedError(transactional_id, producer_epoch, current.producer_epoch)
    return current


def _check_not_busy(current: TransactionMetadata) -> None:
    if current.state.completing or current.state is TransactionState.PREPARE_EPOCH_FENCE:
        raise ConcurrentTransactionsError(current.transactional_id, current.state.kafka_name)


def _check_markers_written(current: TransactionMetadata) -> None:
    """Only AddPartitionsToTxn may change an id whose previous transaction's markers are not known durable."""
    if current.unwritten_markers is not None:
        raise ConcurrentTransactionsError(current.transactional_id, "the previous transaction's markers are being written")

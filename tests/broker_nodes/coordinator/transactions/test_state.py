"""The transaction state machine: Kafka's transitions, fencing, KIP-890's epoch bump at every end, retried EndTxn, timeouts."""

from __future__ import annotations

import itertools

import pytest

from broker_nodes.coordinator.transactions import state as machine
from broker_nodes.coordinator.transactions.errors import (
    ConcurrentTransactionsError,
    InvalidProducerIdMappingError,
    InvalidTransactionStateError,
    InvalidTransactionTimeoutError,
    ProducerFencedError,
)
from broker_nodes.coordinator.transactions.state import (
    VALID_PREVIOUS_STATES,
    IllegalTransitionError,
    TransactionMetadata,
    TransactionState,
)
from broker_nodes.producer_ids import MAX_PRODUCER_EPOCH

TXN = "t~app"
NOW = 1_000_000
ORDERS = ("t~orders", 0)
PAYMENTS = ("t~payments", 1)


@pytest.fixture
def ids():
    counter = itertools.count(100)
    return lambda: next(counter)


def initialised(ids, current=None, **kwargs) -> TransactionMetadata:
    return machine.init_producer_id(current, TXN, 60_000, producer_id=-1, producer_epoch=-1, now_ms=NOW, allocate=ids, **kwargs).metadata


def ongoing(ids) -> TransactionMetadata:
    empty = initialised(ids)
    added = machine.add_partitions(empty, TXN, empty.producer_id, empty.producer_epoch, [ORDERS], now_ms=NOW)
    assert added is not None
    return added


# ---------------------------------------------------------------------- transitions


@pytest.mark.parametrize(("source", "target"), [(s, t) for t in TransactionState for s in TransactionState])
def test_every_transition_follows_kafkas_valid_previous_states(source, target):
    metadata = TransactionMetadata(TXN, 1, 0, 1000, source, frozenset(), -1, NOW)
    if source in VALID_PREVIOUS_STATES[target]:
        assert metadata.transition(target).state is target
    else:
        with pytest.raises(IllegalTransitionError):
            metadata.transition(target)


def test_log_value_round_trip_keeps_everything_but_the_retry_marker():
    metadata = TransactionMetadata(TXN, 5, 2, 1000, TransactionState.ONGOING, frozenset({ORDERS, PAYMENTS}), 10, 20, previous_producer_id=4)
    assert TransactionMetadata.from_log_value(TXN, metadata.to_log_value()) == metadata


# ---------------------------------------------------------------------- InitProducerId


def test_init_of_unknown_id_allocates_a_producer_with_epoch_zero(ids):
    metadata = initialised(ids)
    assert (metadata.producer_id, metadata.producer_epoch, metadata.state) == (100, 0, TransactionState.EMPTY)


def test_init_again_bumps_the_epoch_and_keeps_the_id(ids):
    again = initialised(ids, initialised(ids))
    assert (again.producer_id, again.producer_epoch) == (100, 1)


def test_init_while_a_transaction_is_open_aborts_it_first_with_a_bumped_epoch(ids):
    current = ongoing(ids)
    outcome = machine.init_producer_id(current, TXN, 60_000, producer_id=-1, producer_epoch=-1, now_ms=NOW, allocate=ids)
    assert outcome.abort_first
    assert outcome.metadata.state is TransactionState.PREPARE_ABORT
    assert outcome.metadata.producer_epoch == current.producer_epoch + 1
    assert outcome.metadata.partitions == {ORDERS}
    assert outcome.metadata.ended_by is None  # the fenced producer's EndTxn is no retry


@pytest.mark.parametrize("state", [TransactionState.PREPARE_COMMIT, TransactionState.PREPARE_ABORT, TransactionState.PREPARE_EPOCH_FENCE])
def test_init_while_completing_is_concurrent_transactions(ids, state):
    current = TransactionMetadata(TXN, 1, 3, 1000, state, frozenset({ORDERS}), NOW, NOW)
    with pytest.raises(ConcurrentTransactionsError):
        machine.init_producer_id(current, TXN, 60_000, producer_id=-1, producer_epoch=-1, now_ms=NOW, allocate=ids)


def test_init_when_the_epoch_runs_out_moves_to_a_new_producer_id(ids):
    current = TransactionMetadata(TXN, 1, MAX_PRODUCER_EPOCH - 1, 1000, TransactionState.COMPLETE_COMMIT, frozenset(), -1, NOW)
    bumped = initialised(ids, current)
    assert (bumped.producer_id, bumped.producer_epoch, bumped.previous_producer_id) == (100, 0, 1)


def test_kip360_init_with_the_current_id_and_epoch_bumps(ids):
    current = initialised(ids)
    outcome = machine.init_producer_id(current, TXN, 60_000, producer_id=100, producer_epoch=0, now_ms=NOW, allocate=ids)
    assert outcome.metadata.producer_epoch == 1


def test_kip360_retried_init_is_answered_from_state(ids):
    current = initialised(ids, initialised(ids))  # epoch 1, Empty
    outcome = machine.init_producer_id(current, TXN, 60_000, producer_id=100, producer_epoch=0, now_ms=NOW, allocate=ids)
    assert outcome.metadata is current


@pytest.mark.parametrize(("producer_id", "producer_epoch"), [(100, 5), (999, 0)])
def test_kip360_init_with_a_stale_or_foreign_producer_is_fenced(ids, producer_id, producer_epoch):
    current = initialised(ids, initialised(ids, initialised(ids)))  # epoch 2
    with pytest.raises(ProducerFencedError):
        machine.init_producer_id(current, TXN, 60_000, producer_id=producer_id, producer_epoch=producer_epoch, now_ms=NOW, allocate=ids)


@pytest.mark.parametrize("timeout_ms", [0, -1, 900_001])
def test_timeouts_outside_the_bounds_are_refused(timeout_ms):
    with pytest.raises(InvalidTransactionTimeoutError):
        machine.check_timeout(timeout_ms, 900_000)


# ---------------------------------------------------------------------- AddPartitions / verify


def test_add_partitions_begins_a_transaction_and_adding_them_again_changes_nothing(ids):
    current = ongoing(ids)
    assert current.state is TransactionState.ONGOING and current.start_timestamp_ms == NOW
    assert machine.add_partitions(current, TXN, current.producer_id, current.producer_epoch, [ORDERS], now_ms=NOW + 5) is None
    grown = machine.add_partitions(current, TXN, current.producer_id, current.producer_epoch, [PAYMENTS], now_ms=NOW + 5)
    assert grown is not None and grown.partitions == {ORDERS, PAYMENTS} and grown.start_timestamp_ms == NOW


def test_add_partitions_refuses_unknown_ids_other_producers_and_old_epochs(ids):
    with pytest.raises(InvalidProducerIdMappingError):
        machine.add_partitions(None, TXN, 1, 0, [ORDERS], now_ms=NOW)
    current = initialised(ids, initialised(ids))
    with pytest.raises(InvalidProducerIdMappingError):
        machine.add_partitions(current, TXN, 555, 1, [ORDERS], now_ms=NOW)
    with pytest.raises(ProducerFencedError):
        machine.add_partitions(current, TXN, 100, 0, [ORDERS], now_ms=NOW)


def test_add_partitions_while_completing_is_concurrent_transactions(ids):
    prepared = machine.end_transaction(ongoing(ids), TXN, 100, 0, commit=True, now_ms=NOW, allocate=ids).metadata
    assert prepared is not None
    with pytest.raises(ConcurrentTransactionsError):
        machine.add_partitions(prepared, TXN, 100, prepared.producer_epoch, [PAYMENTS], now_ms=NOW)


def test_verify_answers_per_partition_whether_it_is_in_the_ongoing_transaction(ids):
    current = ongoing(ids)
    outcome = machine.verify_partitions(current, TXN, 100, 0, [ORDERS, PAYMENTS])
    assert outcome[ORDERS] is None
    assert isinstance(outcome[PAYMENTS], InvalidTransactionStateError)
    stale = machine.verify_partitions(current, TXN, 100, 7, [ORDERS])
    assert isinstance(stale[ORDERS], ProducerFencedError)


# ---------------------------------------------------------------------- EndTxn and KIP-890


def test_commit_bumps_the_epoch_and_completion_clears_the_partitions(ids):
    outcome = machine.end_transaction(ongoing(ids), TXN, 100, 0, commit=True, now_ms=NOW, allocate=ids)
    assert outcome.metadata is not None and outcome.metadata.state is TransactionState.PREPARE_COMMIT
    assert (outcome.producer_id, outcome.producer_epoch) == (100, 1)
    completed = machine.complete(outcome.metadata, now_ms=NOW + 1)
    assert (completed.state, completed.partitions, completed.producer_epoch) == (TransactionState.COMPLETE_COMMIT, frozenset(), 1)


def test_retried_end_of_the_just_completed_transaction_is_answered_from_state(ids):
    prepared = machine.end_transaction(ongoing(ids), TXN, 100, 0, commit=True, now_ms=NOW, allocate=ids).metadata
    assert prepared is not None
    with pytest.raises(ConcurrentTransactionsError):  # still writing markers
        machine.end_transaction(prepared, TXN, 100, 0, commit=True, now_ms=NOW, allocate=ids)
    completed = machine.complete(prepared, now_ms=NOW)
    retried = machine.end_transaction(completed, TXN, 100, 0, commit=True, now_ms=NOW, allocate=ids)
    assert retried.metadata is None and (retried.producer_id, retried.producer_epoch) == (100, 1)
    with pytest.raises(InvalidTransactionStateError):
        machine.end_transaction(completed, TXN, 100, 0, commit=False, now_ms=NOW, allocate=ids)


def test_late_end_of_an_older_transaction_never_ends_the_next_one(ids):
    # Jepsen's delayed-EndTxn anomaly: T1 commits at epoch 0 -> 1, T2 begins at epoch 1; T1's
    # EndTxn arrives again late. It must not commit (or abort) T2.
    first = machine.complete(machine.end_transaction(ongoing(ids), TXN, 100, 0, commit=True, now_ms=NOW, allocate=ids).metadata, now_ms=NOW)  # type: ignore[arg-type]
    second = machine.add_partitions(first, TXN, 100, 1, [PAYMENTS], now_ms=NOW)
    assert second is not None
    for commit in (True, False):
        with pytest.raises(ProducerFencedError):
            machine.end_transaction(second, TXN, 100, 0, commit=commit, now_ms=NOW, allocate=ids)


def test_commit_without_a_transaction_is_invalid_but_abort_is_accepted(ids):
    empty = initialised(ids)
    with pytest.raises(InvalidTransactionStateError):
        machine.end_transaction(empty, TXN, 100, 0, commit=True, now_ms=NOW, allocate=ids)
    aborted = machine.end_transaction(empty, TXN, 100, 0, commit=False, now_ms=NOW, allocate=ids)
    assert aborted.metadata is not None and aborted.metadata.state is TransactionState.PREPARE_ABORT and not aborted.metadata.partitions
    assert aborted.producer_epoch == 1


def test_end_with_an_old_epoch_or_another_producer_is_refused(ids):
    current = ongoing(ids)
    with pytest.raises(ProducerFencedError):
        machine.end_transaction(current, TXN, 100, 3, commit=True, now_ms=NOW, allocate=ids)
    with pytest.raises(InvalidProducerIdMappingError):
        machine.end_transaction(current, TXN, 7, 0, commit=True, now_ms=NOW, allocate=ids)


def test_an_epoch_that_runs_out_at_the_end_moves_the_producer_to_a_new_id(ids):
    current = TransactionMetadata(TXN, 1, MAX_PRODUCER_EPOCH - 1, 1000, TransactionState.ONGOING, frozenset({ORDERS}), NOW, NOW)
    outcome = machine.end_transaction(current, TXN, 1, MAX_PRODUCER_EPOCH - 1, commit=True, now_ms=NOW, allocate=ids)
    assert outcome.metadata is not None
    assert outcome.metadata.producer_epoch == MAX_PRODUCER_EPOCH  # the markers' epoch, above every batch
    assert (outcome.producer_id, outcome.producer_epoch) == (100, 0)
    completed = machine.complete(outcome.metadata, now_ms=NOW)
    assert (completed.producer_id, completed.producer_epoch, completed.previous_producer_id) == (100, 0, 1)
    reloaded = TransactionMetadata.from_log_value(TXN, completed.to_log_value())
    assert machine.end_transaction(reloaded, TXN, 1, MAX_PRODUCER_EPOCH - 1, commit=True, now_ms=NOW, allocate=ids).producer_id == 100


# ---------------------------------------------------------------------- timeout and expiry


def test_a_transaction_past_its_timeout_is_aborted_with_the_epoch_bumped(ids):
    current = ongoing(ids)
    assert machine.abort_timed_out(current, now_ms=NOW + 59_999, allocate=ids) is None
    aborted = machine.abort_timed_out(current, now_ms=NOW + 60_000, allocate=ids)
    assert aborted is not None and aborted.state is TransactionState.PREPARE_ABORT and aborted.producer_epoch == 1
    with pytest.raises(ProducerFencedError):  # the timed-out producer's own EndTxn is no retry
        machine.end_transaction(machine.complete(aborted, now_ms=NOW), TXN, 100, 0, commit=False, now_ms=NOW, allocate=ids)


@pytest.mark.parametrize("completed", [False, True])
def test_after_a_reload_a_timed_out_producers_late_commit_is_fenced(ids, completed):
    # The coordinator aborted the transaction at epoch 0 -> 1; the log cannot say who ended it.
    aborted = machine.abort_timed_out(ongoing(ids), now_ms=NOW + 60_000, allocate=ids)
    assert aborted is not None
    stored = machine.complete(aborted, now_ms=NOW) if completed else aborted
    reloaded = TransactionMetadata.from_log_value(TXN, stored.to_log_value())
    with pytest.raises(ProducerFencedError):
        machine.end_transaction(reloaded, TXN, 100, 0, commit=True, now_ms=NOW, allocate=ids)
    # Without a reload the coordinator knows: fenced as well.
    with pytest.raises(ProducerFencedError):
        machine.end_transaction(stored, TXN, 100, 0, commit=True, now_ms=NOW, allocate=ids)


@pytest.mark.parametrize("commit", [False, True])
def test_after_a_reload_the_producers_own_end_is_still_a_retry(ids, commit):
    prepared = machine.end_transaction(ongoing(ids), TXN, 100, 0, commit=commit, now_ms=NOW, allocate=ids).metadata
    assert prepared is not None
    reloaded = TransactionMetadata.from_log_value(TXN, machine.complete(prepared, now_ms=NOW).to_log_value())
    retried = machine.end_transaction(reloaded, TXN, 100, 0, commit=commit, now_ms=NOW, allocate=ids)
    assert retried.metadata is None and (retried.producer_id, retried.producer_epoch) == (100, 1)
    # The other outcome at the ended epoch: a commit after an abort the log shows is a fenced producer's.
    with pytest.raises(ProducerFencedError if commit is False else InvalidTransactionStateError):
        machine.end_transaction(reloaded, TXN, 100, 0, commit=not commit, now_ms=NOW, allocate=ids)
    # Before a reload the coordinator knows the producer ended it itself: INVALID_TXN_STATE, as Kafka.
    with pytest.raises(InvalidTransactionStateError):
        machine.end_transaction(machine.complete(prepared, now_ms=NOW), TXN, 100, 0, commit=not commit, now_ms=NOW, allocate=ids)


def test_only_idle_ids_expire(ids):
    assert machine.expired(initialised(ids), now_ms=NOW + 10, expiration_ms=10)
    assert not machine.expired(initialised(ids), now_ms=NOW + 9, expiration_ms=10)
    assert not machine.expired(ongoing(ids), now_ms=NOW + 10**9, expiration_ms=10)


def test_clients_of_transactions_version_1_keep_their_epoch_and_retries_are_still_recognised(ids):
    outcome = machine.end_transaction(ongoing(ids), TXN, 100, 0, commit=True, now_ms=NOW, allocate=ids, bump_epoch=False)
    assert outcome.metadata is not None and outcome.metadata.producer_epoch == 0 and outcome.producer_epoch == 0
    completed = machine.complete(outcome.metadata, now_ms=NOW)
    assert machine.end_transaction(completed, TXN, 100, 0, commit=True, now_ms=NOW, allocate=ids, bump_epoch=False).metadata is None
    assert machine.add_partitions(completed, TXN, 100, 0, [ORDERS], now_ms=NOW) is not None  # the next transaction, same epoch


def test_a_version_1_retry_is_recognised_after_a_reload_too(ids):
    prepared = machine.end_transaction(ongoing(ids), TXN, 100, 0, commit=True, now_ms=NOW, allocate=ids, bump_epoch=False).metadata
    assert prepared is not None
    reloaded = TransactionMetadata.from_log_value(TXN, machine.complete(prepared, now_ms=NOW).to_log_value())
    assert machine.end_transaction(reloaded, TXN, 100, 0, commit=True, now_ms=NOW, allocate=ids, bump_epoch=False).metadata is None
    with pytest.raises(InvalidTransactionStateError):
        machine.end_transaction(reloaded, TXN, 100, 0, commit=False, now_ms=NOW, allocate=ids, bump_epoch=False)

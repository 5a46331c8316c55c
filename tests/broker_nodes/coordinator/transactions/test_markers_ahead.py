"""Transactions version 2: the next transaction begins while the previous one's markers are written.

The Ongoing record names the markers not known durable; AddPartitionsToTxn answers once both are
durable; meanwhile nothing else of the id is decided and no partition is verified for the next
transaction; a coordinator that loads such a record writes those markers again first. Version 1
(the epoch kept at EndTxn) still waits for the markers before deciding.
"""

from __future__ import annotations

import threading

import pytest

from broker_nodes.coordinator.transactions.errors import ConcurrentTransactionsError
from broker_nodes.coordinator.transactions.state import TransactionMarkers, TransactionState
from log_formats.transaction_log_records import decode_key, decode_value, partition_for_transactional_id
from tests.broker_nodes.coordinator.transactions.test_coordinator import (  # noqa: F401 - fixtures
    ORDERS,
    PAYMENTS,
    TRANSACTION_STATE_TOPIC,
    TXN,
    FakeMarkers,
    ManualExecutor,
    begin,
    broker,
    clock,
    completer,
    coordinator,
    make_coordinator,
    markers,
    stored_states,
)
from tests.support.waiting import wait_until
from weir.records import batch_records_bytes, decode_records, iter_batch_positions


def stored_values(broker, transactional_id: str):  # type: ignore[no-untyped-def]
    partition = partition_for_transactional_id(transactional_id, 3)
    log = broker.replica_manager.partition_log(TRANSACTION_STATE_TOPIC, partition)
    data = log.read(log.log_start_offset, 1 << 20, max_offset=log.log_end_offset).records
    values = []
    for position, header in iter_batch_positions(data):
        for _, _, key, value, _ in decode_records(batch_records_bytes(data, position, header), header):
            if key is not None and decode_key(bytes(key)) == transactional_id and value is not None:
                values.append(decode_value(bytes(value)))
    return values


class Call:
    """Runs a coordinator call on a thread; ``outcome`` holds None or what it raised once it returned."""

    def __init__(self, target) -> None:  # type: ignore[no-untyped-def]
        self.outcome: list[BaseException | None] = []
        self._thread = threading.Thread(target=self._run, args=(target,))
        self._thread.start()

    def _run(self, target) -> None:  # type: ignore[no-untyped-def]
        try:
            target()
            self.outcome.append(None)
        except BaseException as error:  # noqa: BLE001 - the test reports what the call raised
            self.outcome.append(error)

    def join(self) -> list[BaseException | None]:
        self._thread.join(10)
        return self.outcome


def test_the_next_transactions_record_is_stored_while_the_markers_are_written_and_names_them(broker, coordinator, markers, completer):
    ids = begin(coordinator)
    bumped = coordinator.end_transaction(TXN, ids.producer_id, ids.producer_epoch, commit=True)
    call = Call(lambda: coordinator.add_partitions(TXN, bumped.producer_id, bumped.producer_epoch, [ORDERS]))
    # Stored before a single marker was written (the completer has not run): one replicated write off the sequential path.
    wait_until(lambda: len(stored_states(broker, TXN)) == 4 or call.outcome, "the Ongoing record stored ahead of the markers")
    assert markers.requests == []
    ongoing = stored_values(broker, TXN)[-1]
    assert ongoing.state == TransactionState.ONGOING.value
    assert ongoing.unwritten_markers is not None
    assert (ongoing.unwritten_markers.producer_epoch, ongoing.unwritten_markers.commit) == (bumped.producer_epoch, True)
    assert ongoing.unwritten_markers.partitions == {"t~orders": (0,), "t~payments": (1,)}
    # It answers only once the markers are durable; meanwhile nothing of the next transaction is verified or ended.
    wait_until(lambda: coordinator.coordinating(TXN).waiting == 1 or call.outcome, "AddPartitionsToTxn waiting for the markers")
    assert call.outcome == []
    refused = coordinator.verify_partitions(TXN, bumped.producer_id, bumped.producer_epoch, [ORDERS])
    assert isinstance(refused[ORDERS], ConcurrentTransactionsError)
    with pytest.raises(ConcurrentTransactionsError):
        coordinator.end_transaction(TXN, bumped.producer_id, bumped.producer_epoch, commit=True)
    completer.run_all()
    assert call.join() == [None]
    assert [(r.producer_epoch, r.commit, r.above_batches, sorted(r.partitions)) for r in markers.requests] == [
        (bumped.producer_epoch, True, True, sorted([ORDERS, PAYMENTS]))
    ]
    assert coordinator.verify_partitions(TXN, bumped.producer_id, bumped.producer_epoch, [ORDERS]) == {ORDERS: None}
    described = coordinator.describe(TXN)
    assert (described.state, described.partitions, described.unwritten_markers) == (TransactionState.ONGOING, frozenset([ORDERS]), None)
    # The next record no longer names the durable markers.
    coordinator.add_partitions(TXN, bumped.producer_id, bumped.producer_epoch, [PAYMENTS])
    assert stored_values(broker, TXN)[-1].unwritten_markers is None
    coordinator.end_transaction(TXN, bumped.producer_id, bumped.producer_epoch, commit=False)
    completer.run_all()
    assert coordinator.describe(TXN).state is TransactionState.COMPLETE_ABORT
    assert coordinator.store_completions() == 1


def test_transactions_version_1_waits_for_the_markers_before_storing_the_next_transaction(broker, coordinator, markers, completer):
    ids = begin(coordinator)
    coordinator.end_transaction(TXN, ids.producer_id, ids.producer_epoch, commit=True, bump_epoch=False)
    call = Call(lambda: coordinator.add_partitions(TXN, ids.producer_id, ids.producer_epoch, [ORDERS]))
    wait_until(lambda: coordinator.coordinating(TXN).waiting == 1 or call.outcome, "AddPartitionsToTxn waiting for the markers")
    assert len(stored_states(broker, TXN)) == 3  # nothing stored ahead: its markers keep the epoch of its batches
    completer.run_all()
    assert call.join() == [None]
    assert [r.above_batches for r in markers.requests] == [False]
    assert stored_values(broker, TXN)[-1].unwritten_markers is None


def test_a_coordinator_loading_a_record_that_names_unwritten_markers_writes_them_first(broker, clock, coordinator, markers, completer):
    ids = begin(coordinator)
    bumped = coordinator.end_transaction(TXN, ids.producer_id, ids.producer_epoch, commit=True)
    call = Call(lambda: coordinator.add_partitions(TXN, bumped.producer_id, bumped.producer_epoch, [ORDERS]))
    wait_until(lambda: len(stored_states(broker, TXN)) == 4 or call.outcome, "the Ongoing record stored ahead of the markers")
    # The coordinator is lost before its markers were written: the successor loads the Ongoing record.
    successor_markers, successor_completer = FakeMarkers(), ManualExecutor()
    successor = make_coordinator(broker, clock, successor_markers, successor_completer)
    successor.lead_every_partition()
    loaded = successor.describe(TXN)
    assert loaded.state is TransactionState.ONGOING
    assert loaded.unwritten_markers == TransactionMarkers(bumped.producer_id, bumped.producer_epoch, True, frozenset([ORDERS, PAYMENTS]), above_batches=True)
    with pytest.raises(ConcurrentTransactionsError):
        successor.end_transaction(TXN, bumped.producer_id, bumped.producer_epoch, commit=True)
    assert isinstance(successor.verify_partitions(TXN, bumped.producer_id, bumped.producer_epoch, [ORDERS])[ORDERS], ConcurrentTransactionsError)
    successor_completer.run_all()
    assert [(r.producer_epoch, r.commit, r.above_batches, sorted(r.partitions)) for r in successor_markers.requests] == [
        (bumped.producer_epoch, True, True, sorted([ORDERS, PAYMENTS]))
    ]
    # The producer's retried AddPartitionsToTxn is answered; its transaction goes on and commits.
    successor.add_partitions(TXN, bumped.producer_id, bumped.producer_epoch, [ORDERS])
    assert successor.verify_partitions(TXN, bumped.producer_id, bumped.producer_epoch, [ORDERS]) == {ORDERS: None}
    ended = successor.end_transaction(TXN, bumped.producer_id, bumped.producer_epoch, commit=True)
    successor_completer.run_all()
    assert successor_markers.requests[-1].producer_epoch == ended.producer_epoch
    assert successor.describe(TXN).state is TransactionState.COMPLETE_COMMIT
    assert stored_values(broker, TXN)[-1].unwritten_markers is None
    coordinator.shutdown()
    call.join()


def test_timeout_aborts_wait_until_the_previous_markers_are_durable(broker, coordinator, markers, completer, clock):
    ids = begin(coordinator)
    bumped = coordinator.end_transaction(TXN, ids.producer_id, ids.producer_epoch, commit=True)
    call = Call(lambda: coordinator.add_partitions(TXN, bumped.producer_id, bumped.producer_epoch, [ORDERS]))
    wait_until(lambda: coordinator.coordinating(TXN).waiting == 1 or call.outcome, "AddPartitionsToTxn waiting for the markers")
    clock.advance(60_000)
    assert coordinator.abort_timed_out_transactions() == 0
    completer.run_all()
    assert call.join() == [None]
    assert coordinator.abort_timed_out_transactions() == 1
    completer.run_all()
    assert [(r.commit, sorted(r.partitions)) for r in markers.requests] == [(True, sorted([ORDERS, PAYMENTS])), (False, [ORDERS])]

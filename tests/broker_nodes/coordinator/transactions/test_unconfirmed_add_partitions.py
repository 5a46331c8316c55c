"""AddPartitionsToTxn answers once its Ongoing record is appended; KIP-890's verification answers only from durable state.

The coordinator runs over a standalone broker's logs (as in ``test_coordinator``); the wait for
the in-sync replicas is replaced by a gate, so that each test decides when the replicas "hold"
a record and sees what is answered before that.
"""

from __future__ import annotations

import threading

import pytest

from broker_nodes.coordinator.transactions.coordinator import TransactionCoordinator
from broker_nodes.coordinator.transactions.errors import NotTransactionCoordinatorError, TransactionCoordinatorNotAvailableError
from broker_nodes.coordinator.transactions.state import TransactionState
from tests.broker_nodes.coordinator.transactions.test_coordinator import (  # noqa: F401 - fixtures
    ORDERS,
    PAYMENTS,
    TXN,
    broker,
    clock,
    completer,
    coordinator,
    markers,
    stored_states,
)
from tests.support.waiting import wait_until

GATE_SECONDS = 10.0  # longest a gated wait blocks before failing the test


class ReplicaGate:
    """Stands in for the wait for the in-sync replicas: records each wait and blocks it until opened (or fails it)."""

    def __init__(self) -> None:
        self.waits: list[int] = []
        self.opened = threading.Event()
        self.failure: Exception | None = None

    def wait(self, partition: int, next_offset: int, timeout_ms: int) -> None:
        self.waits.append(next_offset)
        if self.failure is not None:
            raise self.failure
        assert self.opened.wait(GATE_SECONDS), "the replicas were waited for while the test held them"


@pytest.fixture
def gate(coordinator: TransactionCoordinator, monkeypatch: pytest.MonkeyPatch) -> ReplicaGate:
    gate = ReplicaGate()
    monkeypatch.setattr(coordinator, "_wait_for_replicas", gate.wait)
    return gate


def _producer(coordinator: TransactionCoordinator, gate: ReplicaGate) -> tuple[int, int]:
    gate.opened.set()
    ids = coordinator.init_producer_id(TXN, 60_000)
    gate.opened.clear()
    gate.waits.clear()
    return ids.producer_id, ids.producer_epoch


def test_add_partitions_answers_before_the_replicas_hold_its_record(broker, coordinator, gate):
    producer_id, epoch = _producer(coordinator, gate)
    coordinator.add_partitions(TXN, producer_id, epoch, [ORDERS])
    assert gate.waits == []
    assert coordinator.describe(TXN).state is TransactionState.ONGOING
    assert stored_states(broker, TXN)[-1] is TransactionState.ONGOING  # appended: its replication is under way


def test_verification_waits_until_the_replicas_hold_the_ongoing_record(coordinator, gate):
    producer_id, epoch = _producer(coordinator, gate)
    coordinator.add_partitions(TXN, producer_id, epoch, [ORDERS])
    answers: list[object] = []
    verifier = threading.Thread(target=lambda: answers.append(coordinator.verify_partitions(TXN, producer_id, epoch, [ORDERS, PAYMENTS])))
    verifier.start()
    try:
        wait_until(lambda: gate.waits, "the verification waits for the replicas", timeout=GATE_SECONDS)
        assert answers == [] and verifier.is_alive()  # no batch may be appended before the membership is durable
    finally:
        gate.opened.set()
        verifier.join(GATE_SECONDS)
    [outcome] = answers
    assert outcome[ORDERS] is None
    assert isinstance(outcome[PAYMENTS], Exception)  # not in the transaction
    gate.waits.clear()
    coordinator.verify_partitions(TXN, producer_id, epoch, [ORDERS])
    assert gate.waits == []  # seen durable once: later batches' verifications need no wait


def test_verification_refuses_with_a_retriable_error_when_the_replicas_do_not_catch_up(coordinator, gate):
    producer_id, epoch = _producer(coordinator, gate)
    coordinator.add_partitions(TXN, producer_id, epoch, [ORDERS])
    gate.failure = TimeoutError("replicas away")
    outcome = coordinator.verify_partitions(TXN, producer_id, epoch, [ORDERS])
    assert isinstance(outcome[ORDERS], TransactionCoordinatorNotAvailableError) and outcome[ORDERS].retriable
    gate.failure = None
    gate.opened.set()
    assert coordinator.verify_partitions(TXN, producer_id, epoch, [ORDERS]) == {ORDERS: None}  # asked again once they hold it


def test_verification_refuses_when_the_leadership_ends_while_it_waits(coordinator, gate):
    producer_id, epoch = _producer(coordinator, gate)
    coordinator.add_partitions(TXN, producer_id, epoch, [ORDERS])
    answers: list[object] = []
    verifier = threading.Thread(target=lambda: answers.append(coordinator.verify_partitions(TXN, producer_id, epoch, [ORDERS])))
    verifier.start()
    try:
        wait_until(lambda: gate.waits, "the verification waits for the replicas", timeout=GATE_SECONDS)
        coordinator._stop_leading()  # the next leader's log may lack the record
    finally:
        gate.opened.set()
        verifier.join(GATE_SECONDS)
    [outcome] = answers
    assert isinstance(outcome[ORDERS], NotTransactionCoordinatorError)


def test_a_later_durable_record_confirms_the_ongoing_one(coordinator, gate):
    producer_id, epoch = _producer(coordinator, gate)
    coordinator.add_partitions(TXN, producer_id, epoch, [ORDERS])
    gate.opened.set()
    coordinator.end_transaction(TXN, producer_id, epoch, commit=True)  # PrepareCommit waits for the replicas, so the Ongoing before it is held too
    gate.waits.clear()
    outcome = coordinator.verify_partitions(TXN, producer_id, epoch + 1, [ORDERS])
    assert gate.waits == [] and isinstance(outcome[ORDERS], Exception)


def test_add_offsets_waits_for_the_replicas_before_answering(coordinator, gate):
    producer_id, epoch = _producer(coordinator, gate)
    gate.opened.set()
    coordinator.add_offsets(TXN, producer_id, epoch, "t~group")
    assert len(gate.waits) == 1  # TxnOffsetCommit is not verified with the coordinator: the answer must be durable

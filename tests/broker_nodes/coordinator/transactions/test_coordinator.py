"""The transaction coordinator over a standalone broker's logs: state stored in ``__transaction_state``, markers
through a fake MarkerWriter, loads and completions run by manual executors so each state can be observed."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import Executor, Future

import pytest

from broker_nodes.clock import ManualClock
from broker_nodes.cluster_state import NotLeaderOrFollowerError
from broker_nodes.config import load_broker_config
from broker_nodes.coordinator.offset_store import OFFSETS_TOPIC
from broker_nodes.coordinator.transactions.coordinator import TRANSACTION_STATE_TOPIC, TransactionCoordinator, TransactionSettings
from broker_nodes.coordinator.transactions.errors import (
    ConcurrentTransactionsError,
    NotTransactionCoordinatorError,
    ProducerFencedError,
    TransactionalIdNotFoundError,
    TransactionCoordinatorLoadingError,
    TransactionCoordinatorNotAvailableError,
)
from broker_nodes.coordinator.transactions.markers import MarkerRequest, TopicPartition
from broker_nodes.coordinator.transactions.state import TransactionState
from broker_nodes.server.broker import Broker
from broker_nodes.topic_registry import UnknownTopicOrPartitionError
from log_formats.offset_commit_records import partition_for_group
from log_formats.transaction_log_records import decode_key, decode_value, partition_for_transactional_id
from tests.support.waiting import wait_until
from weir.records import batch_records_bytes, decode_records, iter_batch_positions

TXN = "t~app"
ORDERS = ("t~orders", 0)
PAYMENTS = ("t~payments", 1)
SETTINGS = TransactionSettings(max_timeout_ms=900_000, id_expiration_ms=3_600_000, write_timeout_ms=1000, marker_retry_backoff_ms=0)


class ManualExecutor(Executor):
    """Queues submitted calls; ``run_all`` runs them (and what they queue) in the test's thread."""

    def __init__(self) -> None:
        self.queued: list[tuple[Callable[..., object], tuple[object, ...]]] = []

    def submit(self, fn, /, *args, **kwargs):  # type: ignore[no-untyped-def, override]
        self.queued.append((fn, args))
        return Future()

    def run_all(self) -> None:
        while self.queued:
            fn, args = self.queued.pop(0)
            fn(*args)


class FakeMarkers:
    """Records every marker request; ``failures`` lists per-round errors for partitions (popped as used)."""

    def __init__(self) -> None:
        self.requests: list[MarkerRequest] = []
        self.failures: list[dict[TopicPartition, Exception]] = []

    def write_markers(self, request: MarkerRequest) -> Mapping[TopicPartition, Exception | None]:
        self.requests.append(request)
        failing = self.failures.pop(0) if self.failures else {}
        return {topic_partition: failing.get(topic_partition) for topic_partition in request.partitions}


@pytest.fixture
def clock():
    return ManualClock()


@pytest.fixture
def broker(tmp_path, clock):
    broker = Broker(load_broker_config(node_id=1, listen="127.0.0.1:0", data_dir=tmp_path, configs=["offsets.topic.num.partitions=4"]), clock=clock)
    broker.start()
    broker.topic_admin.create_topic(TRANSACTION_STATE_TOPIC, 3, 1, {"cleanup.policy": "compact"}, internal=True)
    yield broker
    broker.shutdown()


@pytest.fixture
def markers():
    return FakeMarkers()


@pytest.fixture
def completer():
    return ManualExecutor()


def make_coordinator(broker, clock, markers, completer, loader=None, settings=SETTINGS) -> TransactionCoordinator:
    return TransactionCoordinator(
        broker.replica_manager,
        broker.registry,
        clock,
        allocate_producer_id=broker.producer_ids.allocate,
        markers=markers,
        settings=settings,
        loader=loader,
        completer=completer,
    )


@pytest.fixture
def coordinator(broker, clock, markers, completer):
    coordinator = make_coordinator(broker, clock, markers, completer)
    coordinator.lead_every_partition()
    return coordinator


def stored_states(broker, transactional_id: str) -> list[TransactionState]:
    """The states written for the id, in log order."""
    partition = partition_for_transactional_id(transactional_id, 3)
    log = broker.replica_manager.partition_log(TRANSACTION_STATE_TOPIC, partition)
    data = log.read(log.log_start_offset, 1 << 20, max_offset=log.log_end_offset).records
    states = []
    for position, header in iter_batch_positions(data):
        for _, _, key, value, _ in decode_records(batch_records_bytes(data, position, header), header):
            if key is not None and decode_key(bytes(key)) == transactional_id and value is not None:
                states.append(TransactionState(decode_value(bytes(value)).state))
    return states


def begin(coordinator, partitions=(ORDERS, PAYMENTS)):
    ids = coordinator.init_producer_id(TXN, 60_000)
    coordinator.add_partitions(TXN, ids.producer_id, ids.producer_epoch, list(partitions))
    return ids


def test_commit_stores_prepare_writes_markers_with_the_bumped_epoch_and_the_periodic_pass_stores_complete(broker, coordinator, markers, completer):
    ids = begin(coordinator)
    answered = coordinator.end_transaction(TXN, ids.producer_id, ids.producer_epoch, commit=True)
    assert (answered.producer_id, answered.producer_epoch) == (ids.producer_id, ids.producer_epoch + 1)
    assert coordinator.describe(TXN).state is TransactionState.PREPARE_COMMIT
    completer.run_all()
    assert [(r.producer_id, r.producer_epoch, r.commit, r.coordinator_epoch, sorted(r.partitions)) for r in markers.requests] == [
        (ids.producer_id, ids.producer_epoch + 1, True, 0, sorted([ORDERS, PAYMENTS]))
    ]
    # Complete once the markers are durable; its record waits for the periodic pass, unless a later change supersedes it.
    assert coordinator.describe(TXN).state is TransactionState.COMPLETE_COMMIT
    assert stored_states(broker, TXN) == [TransactionState.EMPTY, TransactionState.ONGOING, TransactionState.PREPARE_COMMIT]
    assert coordinator.abort_timed_out_transactions() == 0
    assert stored_states(broker, TXN) == [TransactionState.EMPTY, TransactionState.ONGOING, TransactionState.PREPARE_COMMIT, TransactionState.COMPLETE_COMMIT]
    assert coordinator.coordinating(TXN).markers_written == {}
    assert coordinator.store_completions() == 0
    assert coordinator.describe(TXN).state is TransactionState.COMPLETE_COMMIT


def test_retried_end_txn_is_answered_without_new_markers(coordinator, markers, completer):
    ids = begin(coordinator)
    coordinator.end_transaction(TXN, ids.producer_id, ids.producer_epoch, commit=True)
    with pytest.raises(ConcurrentTransactionsError):
        coordinator.end_transaction(TXN, ids.producer_id, ids.producer_epoch, commit=True)
    completer.run_all()
    again = coordinator.end_transaction(TXN, ids.producer_id, ids.producer_epoch, commit=True)
    assert again.producer_epoch == ids.producer_epoch + 1
    completer.run_all()
    assert len(markers.requests) == 1


def test_markers_refused_by_a_moved_leader_are_retried_and_deleted_partitions_dropped(broker, coordinator, markers, completer):
    ids = begin(coordinator)
    markers.failures = [
        {ORDERS: NotLeaderOrFollowerError("t~orders", 0, 2), PAYMENTS: UnknownTopicOrPartitionError("t~payments", 1)},
    ]
    coordinator.end_transaction(TXN, ids.producer_id, ids.producer_epoch, commit=False)
    completer.run_all()
    assert [sorted(request.partitions) for request in markers.requests] == [sorted([ORDERS, PAYMENTS]), [ORDERS]]
    assert coordinator.describe(TXN).state is TransactionState.COMPLETE_ABORT


def test_add_partitions_of_the_next_transaction_is_woken_by_the_completion_instead_of_refused(broker, coordinator, markers, completer):
    """The producer's next AddPartitionsToTxn, sent while the markers of its commit are written, waits for the
    completion and is answered when it ends, not CONCURRENT_TRANSACTIONS (which librdkafka retries after 20 ms)."""
    ids = begin(coordinator)
    bumped = coordinator.end_transaction(TXN, ids.producer_id, ids.producer_epoch, commit=True)
    outcome: list[BaseException | None] = []

    def add_next() -> None:
        try:
            coordinator.add_partitions(TXN, bumped.producer_id, bumped.producer_epoch, [ORDERS])
            outcome.append(None)
        except BaseException as error:  # noqa: BLE001 - the test reports what the call raised
            outcome.append(error)

    caller = threading.Thread(target=add_next)
    caller.start()
    partition = coordinator.coordinating(TXN)
    wait_until(lambda: partition.waiting == 1 or outcome, "AddPartitionsToTxn waiting for the completion")
    assert outcome == [], "AddPartitionsToTxn was answered before the previous transaction completed"
    completer.run_all()
    caller.join(10)
    assert outcome == [None]
    assert len(markers.requests) == 1
    assert coordinator.describe(TXN).state is TransactionState.ONGOING
    assert coordinator.describe(TXN).partitions == frozenset([ORDERS])
    # The completion let the waiting request store its record in place of CompleteCommit.
    assert stored_states(broker, TXN)[-2:] == [TransactionState.PREPARE_COMMIT, TransactionState.ONGOING]


def test_the_next_transaction_begins_once_the_markers_are_durable_and_its_record_replaces_the_completion(broker, coordinator, markers, completer):
    """One acks=all round trip less per transaction: AddPartitionsToTxn needs the markers, not a stored CompleteCommit."""
    ids = begin(coordinator)
    bumped = coordinator.end_transaction(TXN, ids.producer_id, ids.producer_epoch, commit=True)
    completer.run_all()
    coordinator.add_partitions(TXN, bumped.producer_id, bumped.producer_epoch, [ORDERS])
    described = coordinator.describe(TXN)
    assert (described.state, described.partitions, described.producer_epoch) == (TransactionState.ONGOING, frozenset([ORDERS]), bumped.producer_epoch)
    assert stored_states(broker, TXN) == [TransactionState.EMPTY, TransactionState.ONGOING, TransactionState.PREPARE_COMMIT, TransactionState.ONGOING]
    assert coordinator.coordinating(TXN).markers_written == {}
    assert coordinator.store_completions() == 0  # nothing left to store: the Ongoing record superseded it
    # The previous commit's retry is no retry any more; the new transaction commits as usual.
    with pytest.raises(ProducerFencedError):
        coordinator.end_transaction(TXN, ids.producer_id, ids.producer_epoch, commit=True)
    coordinator.end_transaction(TXN, bumped.producer_id, bumped.producer_epoch, commit=True)
    completer.run_all()
    assert coordinator.describe(TXN).state is TransactionState.COMPLETE_COMMIT
    assert [sorted(request.partitions) for request in markers.requests] == [sorted([ORDERS, PAYMENTS]), [ORDERS]]


def test_a_transaction_decided_right_after_the_previous_markers_gets_markers_of_its_own(broker, coordinator, markers, completer):
    ids = begin(coordinator)
    bumped = coordinator.end_transaction(TXN, ids.producer_id, ids.producer_epoch, commit=True)
    completer.run_all()
    coordinator.add_partitions(TXN, bumped.producer_id, bumped.producer_epoch, [PAYMENTS])
    ended = coordinator.end_transaction(TXN, bumped.producer_id, bumped.producer_epoch, commit=False)
    completer.run_all()
    assert [(request.commit, request.producer_epoch, sorted(request.partitions)) for request in markers.requests] == [
        (True, bumped.producer_epoch, sorted([ORDERS, PAYMENTS])),
        (False, ended.producer_epoch, [PAYMENTS]),
    ]
    assert coordinator.describe(TXN).state is TransactionState.COMPLETE_ABORT
    assert coordinator.store_completions() == 1
    assert stored_states(broker, TXN)[2:] == [
        TransactionState.PREPARE_COMMIT,
        TransactionState.ONGOING,
        TransactionState.PREPARE_ABORT,
        TransactionState.COMPLETE_ABORT,
    ]


def test_a_retried_end_txn_and_a_new_producer_are_served_from_the_completed_state_before_it_is_stored(broker, coordinator, markers, completer):
    ids = begin(coordinator)
    coordinator.end_transaction(TXN, ids.producer_id, ids.producer_epoch, commit=True)
    completer.run_all()
    # Neither waits for a CompleteCommit record (nor is answered CONCURRENT_TRANSACTIONS until one is stored).
    assert coordinator.end_transaction(TXN, ids.producer_id, ids.producer_epoch, commit=True).producer_epoch == ids.producer_epoch + 1
    assert coordinator.init_producer_id(TXN, 60_000).producer_epoch == ids.producer_epoch + 2
    assert stored_states(broker, TXN)[2:] == [TransactionState.PREPARE_COMMIT, TransactionState.EMPTY]
    assert coordinator.store_completions() == 0
    assert len(markers.requests) == 1


def test_a_failed_write_of_the_next_transaction_leaves_the_completion_to_be_stored(broker, coordinator, markers, completer, monkeypatch):
    ids = begin(coordinator)
    bumped = coordinator.end_transaction(TXN, ids.producer_id, ids.producer_epoch, commit=True)
    completer.run_all()
    write = coordinator._write

    def failing(*args):  # type: ignore[no-untyped-def]
        monkeypatch.setattr(coordinator, "_write", write)
        raise TransactionCoordinatorNotAvailableError(TXN, "replicas away")

    monkeypatch.setattr(coordinator, "_write", failing)
    with pytest.raises(TransactionCoordinatorNotAvailableError):
        coordinator.add_partitions(TXN, bumped.producer_id, bumped.producer_epoch, [ORDERS])
    assert coordinator.describe(TXN).state is TransactionState.COMPLETE_COMMIT
    assert coordinator.store_completions() == 1
    assert stored_states(broker, TXN)[2:] == [TransactionState.PREPARE_COMMIT, TransactionState.COMPLETE_COMMIT]


def test_a_log_ending_in_prepare_commit_after_durable_markers_is_completed_by_the_next_leader(broker, clock, coordinator, markers, completer):
    """The completion record not stored yet when the coordinator is lost: the successor writes the markers again (harmless) and completes."""
    ids = begin(coordinator)
    coordinator.end_transaction(TXN, ids.producer_id, ids.producer_epoch, commit=True)
    completer.run_all()
    successor_markers, successor_completer = FakeMarkers(), ManualExecutor()
    successor = make_coordinator(broker, clock, successor_markers, successor_completer)
    successor.lead_every_partition()
    successor_completer.run_all()
    assert [(r.commit, r.producer_epoch) for r in successor_markers.requests] == [(True, ids.producer_epoch + 1)]
    assert successor.describe(TXN).state is TransactionState.COMPLETE_COMMIT
    assert successor.store_completions() == 1
    assert stored_states(broker, TXN)[-1] is TransactionState.COMPLETE_COMMIT


def test_add_partitions_still_refused_when_the_completion_outlasts_the_wait(broker, clock, markers, completer):
    coordinator = make_coordinator(broker, clock, markers, completer, settings=dataclasses.replace(SETTINGS, completion_wait_ms=0))
    coordinator.lead_every_partition()
    ids = begin(coordinator)
    bumped = coordinator.end_transaction(TXN, ids.producer_id, ids.producer_epoch, commit=True)
    with pytest.raises(ConcurrentTransactionsError):
        coordinator.add_partitions(TXN, bumped.producer_id, bumped.producer_epoch, [ORDERS])
    completer.run_all()
    coordinator.add_partitions(TXN, bumped.producer_id, bumped.producer_epoch, [ORDERS])
    assert coordinator.describe(TXN).state is TransactionState.ONGOING


def test_a_new_producer_fences_the_old_one_and_aborts_its_transaction_first(coordinator, markers, completer):
    old = begin(coordinator)
    with pytest.raises(ConcurrentTransactionsError):
        coordinator.init_producer_id(TXN, 60_000)
    completer.run_all()
    assert markers.requests[-1].commit is False and markers.requests[-1].producer_epoch == old.producer_epoch + 1
    new = coordinator.init_producer_id(TXN, 60_000)
    assert (new.producer_id, new.producer_epoch) == (old.producer_id, old.producer_epoch + 2)
    with pytest.raises(ProducerFencedError):
        coordinator.add_partitions(TXN, old.producer_id, old.producer_epoch, [ORDERS])
    with pytest.raises(ProducerFencedError):
        coordinator.end_transaction(TXN, old.producer_id, old.producer_epoch, commit=True)


def test_transactions_past_their_timeout_are_aborted_by_the_periodic_task(coordinator, markers, completer, clock):
    ids = begin(coordinator)
    clock.advance(59_999)
    assert coordinator.abort_timed_out_transactions() == 0
    clock.advance(1)
    assert coordinator.abort_timed_out_transactions() == 1
    completer.run_all()
    assert coordinator.describe(TXN).state is TransactionState.COMPLETE_ABORT
    assert markers.requests[-1].commit is False
    with pytest.raises(ProducerFencedError):
        coordinator.end_transaction(TXN, ids.producer_id, ids.producer_epoch, commit=True)


def test_add_offsets_adds_the_groups_offsets_partition(coordinator):
    ids = coordinator.init_producer_id(TXN, 60_000)
    added = coordinator.add_offsets(TXN, ids.producer_id, ids.producer_epoch, "t~group")
    assert added == (OFFSETS_TOPIC, partition_for_group("t~group", 4))
    assert coordinator.verify_partitions(TXN, ids.producer_id, ids.producer_epoch, [added, ORDERS])[added] is None


def test_loading_a_log_that_ends_in_prepare_commit_completes_the_transaction(broker, clock, coordinator, markers, completer):
    ids = begin(coordinator)
    coordinator.end_transaction(TXN, ids.producer_id, ids.producer_epoch, commit=True)
    # The coordinator dies before writing a marker: a new leadership loads the log.
    successor_markers, successor_completer = FakeMarkers(), ManualExecutor()
    successor = make_coordinator(broker, clock, successor_markers, successor_completer)
    successor.lead_every_partition()
    assert successor.describe(TXN).state is TransactionState.PREPARE_COMMIT
    successor_completer.run_all()
    assert [(r.commit, r.producer_epoch, sorted(r.partitions)) for r in successor_markers.requests] == [
        (True, ids.producer_epoch + 1, sorted([ORDERS, PAYMENTS]))
    ]
    assert successor.describe(TXN).state is TransactionState.COMPLETE_COMMIT
    # The retry of the EndTxn that the dead coordinator had answered is recognised after the reload too.
    assert successor.end_transaction(TXN, ids.producer_id, ids.producer_epoch, commit=True).producer_epoch == ids.producer_epoch + 1


def test_a_partition_answers_loading_until_loaded_and_not_coordinator_after_the_leadership_ends(broker, clock, markers, completer):
    loader = ManualExecutor()
    coordinator = make_coordinator(broker, clock, markers, completer, loader=loader)
    partition = partition_for_transactional_id(TXN, 3)
    with pytest.raises(NotTransactionCoordinatorError):
        coordinator.init_producer_id(TXN, 60_000)
    coordinator.follow_leadership({partition: 4})
    with pytest.raises(TransactionCoordinatorLoadingError):
        coordinator.init_producer_id(TXN, 60_000)
    loader.run_all()
    assert coordinator.init_producer_id(TXN, 60_000).producer_epoch == 0
    ids = coordinator.describe(TXN)
    coordinator.add_partitions(TXN, ids.producer_id, ids.producer_epoch, [ORDERS])
    coordinator.end_transaction(TXN, ids.producer_id, ids.producer_epoch, commit=True)
    completer.run_all()
    assert markers.requests[-1].coordinator_epoch == 4  # the partition's leader epoch
    coordinator.follow_leadership({})
    with pytest.raises(NotTransactionCoordinatorError):
        coordinator.describe(TXN)


def test_idle_ids_expire_with_a_tombstone(broker, clock, coordinator, markers, completer):
    coordinator.init_producer_id(TXN, 60_000)
    clock.advance(SETTINGS.id_expiration_ms)
    assert coordinator.expire_transactional_ids() == 1
    with pytest.raises(TransactionalIdNotFoundError):
        coordinator.describe(TXN)
    reloaded = make_coordinator(broker, clock, markers, completer)
    reloaded.lead_every_partition()
    with pytest.raises(TransactionalIdNotFoundError):
        reloaded.describe(TXN)


def test_list_shows_hanging_transactions(coordinator, clock):
    begin(coordinator)
    assert [m.transactional_id for m in coordinator.list_transactions(states=["Ongoing"])] == [TXN]
    assert coordinator.list_transactions(min_duration_ms=1000) == []
    clock.advance(1000)
    assert [m.transactional_id for m in coordinator.list_transactions(min_duration_ms=1000)] == [TXN]

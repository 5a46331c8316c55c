"""A standalone broker's transaction coordinator end to end: __transaction_state created on first use, markers
appended to the partitions as control batches by the broker's own MarkerAppender, state completed."""

from __future__ import annotations

import time

import pytest

from broker_nodes.config import load_broker_config
from broker_nodes.coordinator.transactions.coordinator import TRANSACTION_STATE_TOPIC
from broker_nodes.coordinator.transactions.errors import InvalidTransactionStateError, ProducerFencedError
from broker_nodes.coordinator.transactions.state import TransactionState
from broker_nodes.server.broker import Broker
from log_formats.control_records import decode_marker
from weir.records import RecordBatchBuilder, batch_records_bytes, decode_records, iter_batch_positions

TXN = "app"


@pytest.fixture
def broker(tmp_path):
    broker = Broker(
        load_broker_config(
            node_id=1, listen="127.0.0.1:0", data_dir=tmp_path, configs=["offsets.topic.num.partitions=1", "transaction.state.log.num.partitions=2"]
        )
    )
    broker.start()
    broker.topic_admin.create_topic("orders", 2, 1, {})
    yield broker
    broker.shutdown()


def wait_for_state(broker, state: TransactionState) -> None:
    deadline = time.monotonic() + 10
    while broker.transaction_coordinator.describe(TXN).state is not state:
        assert time.monotonic() < deadline, f"still {broker.transaction_coordinator.describe(TXN).state}"
        time.sleep(0.01)


def control_batches(broker, topic: str, partition: int) -> list[tuple[int, int, bool]]:
    log = broker.replica_manager.partition_log(topic, partition)
    data = log.read(log.log_start_offset, 1 << 20, max_offset=log.log_end_offset).records
    found = []
    for position, header in iter_batch_positions(data):
        if header.is_control:
            ((_, _, key, value, _),) = decode_records(batch_records_bytes(data, position, header), header)
            marker = decode_marker(key, value)
            found.append((header.producer_id, header.producer_epoch, marker.commit))
    return found


def test_the_topic_is_created_on_first_use_and_markers_land_in_each_partition(broker):
    assert broker.registry.get(TRANSACTION_STATE_TOPIC) is None  # brokers without transactional producers never hold it
    broker.ensure_transaction_state()
    assert broker.registry.require(TRANSACTION_STATE_TOPIC).partitions == 2
    coordinator = broker.transaction_coordinator
    ids = coordinator.init_producer_id(TXN, 60_000)
    coordinator.add_partitions(TXN, ids.producer_id, ids.producer_epoch, [("orders", 0), ("orders", 1)])
    coordinator.end_transaction(TXN, ids.producer_id, ids.producer_epoch, commit=True)
    wait_for_state(broker, TransactionState.COMPLETE_COMMIT)
    for partition in (0, 1):
        assert control_batches(broker, "orders", partition) == [(ids.producer_id, ids.producer_epoch + 1, True)]
    coordinator.add_partitions(TXN, ids.producer_id, ids.producer_epoch + 1, [("orders", 1)])
    coordinator.end_transaction(TXN, ids.producer_id, ids.producer_epoch + 1, commit=False)
    wait_for_state(broker, TransactionState.COMPLETE_ABORT)
    assert control_batches(broker, "orders", 1)[-1] == (ids.producer_id, ids.producer_epoch + 2, False)


def test_a_restarted_standalone_broker_loads_its_transactions(tmp_path, broker):
    broker.ensure_transaction_state()
    ids = broker.transaction_coordinator.init_producer_id(TXN, 60_000)
    broker.shutdown()
    restarted = Broker(broker.config)
    restarted.start()
    try:
        assert restarted.transaction_coordinator.describe(TXN).producer_id == ids.producer_id
    finally:
        restarted.shutdown()


def transactional_batch(producer_id: int, epoch: int, sequence: int = 0) -> bytes:
    builder = RecordBatchBuilder(producer_id=producer_id, producer_epoch=epoch, base_sequence=sequence, transactional=True)
    builder.append(1_700_000_000_000, None, b"value")
    return builder.build()


def test_kip890_a_transactional_batch_is_appended_only_to_a_partition_of_the_ongoing_transaction(broker):
    broker.ensure_transaction_state()
    coordinator = broker.transaction_coordinator
    ids = coordinator.init_producer_id(TXN, 60_000)
    coordinator.add_partitions(TXN, ids.producer_id, ids.producer_epoch, [("orders", 0)])
    batch = transactional_batch(ids.producer_id, ids.producer_epoch)
    results = broker.replica_manager.append_records(1, [("orders", 0, batch), ("orders", 1, batch)], transactional_id=TXN)
    assert not isinstance(results[0], Exception)
    assert isinstance(results[1], InvalidTransactionStateError)
    assert broker.replica_manager.partition_log("orders", 1).log_end_offset == 0
    # A late batch of the ended transaction (old epoch) is refused too, even for a partition it had.
    coordinator.end_transaction(TXN, ids.producer_id, ids.producer_epoch, commit=True)
    wait_for_state(broker, TransactionState.COMPLETE_COMMIT)
    late = broker.replica_manager.append_records(1, [("orders", 0, transactional_batch(ids.producer_id, ids.producer_epoch, 1))], transactional_id=TXN)
    assert isinstance(late[0], ProducerFencedError)


def test_the_brokers_periodic_task_aborts_a_transaction_past_its_timeout(tmp_path):
    configs = ["offsets.topic.num.partitions=1", "transaction.state.log.num.partitions=1", "transaction.abort.timed.out.transaction.cleanup.interval.ms=20"]
    broker = Broker(load_broker_config(node_id=1, listen="127.0.0.1:0", data_dir=tmp_path, configs=configs))
    broker.start()
    try:
        broker.topic_admin.create_topic("orders", 1, 1, {})
        broker.ensure_transaction_state()
        ids = broker.transaction_coordinator.init_producer_id(TXN, 200)
        broker.transaction_coordinator.add_partitions(TXN, ids.producer_id, ids.producer_epoch, [("orders", 0)])
        wait_for_state(broker, TransactionState.COMPLETE_ABORT)
        assert control_batches(broker, "orders", 0) == [(ids.producer_id, ids.producer_epoch + 1, False)]
    finally:
        broker.shutdown()


def test_kip890_only_the_first_batch_of_a_transaction_in_a_partition_is_verified(broker, monkeypatch):
    broker.ensure_transaction_state()
    coordinator = broker.transaction_coordinator
    ids = coordinator.init_producer_id(TXN, 60_000)
    coordinator.add_partitions(TXN, ids.producer_id, ids.producer_epoch, [("orders", 0)])
    asked = []
    verify = coordinator.verify_partitions
    monkeypatch.setattr(coordinator, "verify_partitions", lambda *args: asked.append(args[3]) or verify(*args))
    for sequence in range(3):
        (result,) = broker.replica_manager.append_records(
            1, [("orders", 0, transactional_batch(ids.producer_id, ids.producer_epoch, sequence))], transactional_id=TXN
        )
        assert not isinstance(result, Exception)
    assert asked == [[("orders", 0)]]
    coordinator.end_transaction(TXN, ids.producer_id, ids.producer_epoch, commit=True)
    wait_for_state(broker, TransactionState.COMPLETE_COMMIT)
    # The marker closed the transaction there: the next batch is verified again (and refused: old epoch).
    (late,) = broker.replica_manager.append_records(1, [("orders", 0, transactional_batch(ids.producer_id, ids.producer_epoch, 3))], transactional_id=TXN)
    assert isinstance(late, ProducerFencedError) and len(asked) == 2

"""Operators' transaction tools in process (requests/transaction_admin.py): abort by id through the coordinator,
find-hanging from the partitions' producer state, abort-hanging with a marker; tenants and ACLs."""

from __future__ import annotations

import time

import pytest

from broker_nodes.config import load_broker_config
from broker_nodes.coordinator.transactions import state as machine
from broker_nodes.coordinator.transactions.errors import ConcurrentTransactionsError, ProducerFencedError
from broker_nodes.coordinator.transactions.state import TransactionMetadata, TransactionState
from broker_nodes.requests.transaction_admin import abort_hanging, abort_transaction, find_hanging
from broker_nodes.security.access import CallContext, CallerKind, anonymous_context
from broker_nodes.security.authorizer import CLUSTER_RESOURCE_NAME, AclEntry, Operation, PatternType, Permission, ResourceType
from broker_nodes.server.broker import Broker
from weir.errors import ErrorCode
from weir.records import RecordBatchBuilder

ANONYMOUS = anonymous_context("127.0.0.1")
OLD_TIMESTAMP_MS = 1_700_000_000_000  # long before now: older than any transaction.max.timeout.ms


@pytest.fixture
def broker(tmp_path):
    configs = ["offsets.topic.num.partitions=1", "transaction.state.log.num.partitions=1", "transaction.max.timeout.ms=60000"]
    broker = Broker(load_broker_config(node_id=1, listen="127.0.0.1:0", data_dir=tmp_path, configs=configs))
    broker.start()
    broker.topic_admin.create_topic("orders", 2, 1, {})
    broker.ensure_transaction_state()
    yield broker
    broker.shutdown()


def client(*grants: tuple[ResourceType, str, Operation], tenant_id: str = "tn-a") -> CallContext:
    """An API key's caller with these ACLs; ``tenant_id`` "" reaches the standalone broker's own (unqualified) names."""
    acls = tuple(AclEntry("User:sa-1", kind, name, PatternType.LITERAL, operation, Permission.ALLOW) for kind, name, operation in grants)
    return CallContext(tenant_id, "User:sa-1", "127.0.0.1", CallerKind.CLIENT, acls)


def append_transactional(broker, topic: str, partition: int, producer_id: int, epoch: int, timestamp_ms: int = OLD_TIMESTAMP_MS) -> None:
    """A transactional batch straight into the log, as a late batch after an abort lands without its coordinator knowing."""
    builder = RecordBatchBuilder(producer_id=producer_id, producer_epoch=epoch, base_sequence=0, transactional=True)
    builder.append(timestamp_ms, None, b"value")
    log = broker.replica_manager.partition_log(topic, partition)
    log.append_as_leader(builder.build(), broker.replica_manager.leader_epoch(topic, partition))
    log.update_high_watermark(log.log_end_offset)


def wait_for_state(broker, transactional_id: str, state: TransactionState) -> None:
    deadline = time.monotonic() + 10
    while broker.transaction_coordinator.describe(transactional_id).state is not state:
        assert time.monotonic() < deadline, broker.transaction_coordinator.describe(transactional_id).state
        time.sleep(0.01)


def test_an_operator_aborts_an_ongoing_transaction_and_fences_its_producer(broker):
    coordinator = broker.transaction_coordinator
    ids = coordinator.init_producer_id("app", 60_000)
    coordinator.add_partitions("app", ids.producer_id, ids.producer_epoch, [("orders", 1)])
    answer = abort_transaction(broker, ANONYMOUS, "app")
    assert (answer.error_code, answer.state, answer.producer_epoch) == (ErrorCode.NO_ERROR, "PrepareAbort", ids.producer_epoch + 1)
    wait_for_state(broker, "app", TransactionState.COMPLETE_ABORT)
    assert broker.replica_manager.partition_log("orders", 1).last_stable_offset == broker.replica_manager.partition_log("orders", 1).log_end_offset
    # The producer's own EndTxn is fenced; a second abort finds nothing open.
    with pytest.raises(ProducerFencedError):
        coordinator.end_transaction("app", ids.producer_id, ids.producer_epoch, commit=True)
    assert abort_transaction(broker, ANONYMOUS, "app").error_code == ErrorCode.INVALID_TXN_STATE


def test_abort_by_id_answers_kafka_codes(broker):
    assert abort_transaction(broker, ANONYMOUS, "unknown").error_code == ErrorCode.TRANSACTIONAL_ID_NOT_FOUND
    broker.transaction_coordinator.init_producer_id("idle", 60_000)
    assert abort_transaction(broker, ANONYMOUS, "idle").error_code == ErrorCode.INVALID_TXN_STATE
    assert abort_transaction(broker, ANONYMOUS, "").error_code == ErrorCode.INVALID_REQUEST


def test_a_tenant_aborts_only_its_own_ids_and_needs_alter_on_the_cluster(broker):
    coordinator = broker.transaction_coordinator
    ids = coordinator.init_producer_id("tn-a~app", 60_000)
    coordinator.add_partitions("tn-a~app", ids.producer_id, ids.producer_epoch, [("orders", 0)])
    writer = client((ResourceType.TOPIC, "orders", Operation.WRITE))
    assert abort_transaction(broker, writer, "app").error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    operator = client((ResourceType.TOPIC, "orders", Operation.WRITE), (ResourceType.CLUSTER, CLUSTER_RESOURCE_NAME, Operation.ALTER))
    other = CallContext("tn-b", "User:sa-1", "127.0.0.1", CallerKind.CLIENT, operator.acls)
    assert abort_transaction(broker, other, "app").error_code == ErrorCode.TRANSACTIONAL_ID_NOT_FOUND  # tn-b's "app" is another id
    answer = abort_transaction(broker, operator, "app")
    assert (answer.error_code, answer.transactional_id, answer.state, answer.producer_epoch) == (
        ErrorCode.NO_ERROR,
        "app",
        "PrepareAbort",
        ids.producer_epoch + 1,
    )


def test_find_hanging_reports_open_transactions_no_coordinator_keeps(broker):
    coordinator = broker.transaction_coordinator
    append_transactional(broker, "orders", 0, producer_id=900, epoch=3)  # hanging: old, unknown to the coordinator
    append_transactional(broker, "orders", 1, producer_id=901, epoch=0, timestamp_ms=broker.clock.milliseconds())  # open, but young
    ids = coordinator.init_producer_id("app", 60_000)
    coordinator.add_partitions("app", ids.producer_id, ids.producer_epoch, [("orders", 1)])
    append_transactional(broker, "orders", 1, ids.producer_id, ids.producer_epoch)  # old batch, but its coordinator holds it Ongoing
    first, second = find_hanging(broker, ANONYMOUS, "orders")
    assert (first.partition, first.error_code, [(item.producer_id, item.producer_epoch, item.start_offset) for item in first.hanging]) == (
        0,
        ErrorCode.NO_ERROR,
        [(900, 3, 0)],
    )
    assert first.hanging[0].open_for_ms > 60_000 and first.hanging[0].coordinator_epoch == -1
    assert (second.partition, second.hanging) == (1, ())
    assert [outcome.partition for outcome in find_hanging(broker, ANONYMOUS, "orders", [1])] == [1]


def test_abort_hanging_writes_the_abort_marker_and_frees_the_last_stable_offset(broker):
    append_transactional(broker, "orders", 0, producer_id=900, epoch=3)
    log = broker.replica_manager.partition_log("orders", 0)
    assert log.last_stable_offset == 0
    (found,) = find_hanging(broker, ANONYMOUS, "orders", [0])[0].hanging
    stale = abort_hanging(broker, ANONYMOUS, topic="orders", partition=0, producer_id=900, producer_epoch=2, coordinator_epoch=found.coordinator_epoch)
    assert stale.error_code == ErrorCode.INVALID_PRODUCER_EPOCH
    done = abort_hanging(broker, ANONYMOUS, topic="orders", partition=0, producer_id=900, producer_epoch=3, coordinator_epoch=found.coordinator_epoch)
    assert done.error_code == ErrorCode.NO_ERROR
    assert log.last_stable_offset == log.log_end_offset == 2
    assert find_hanging(broker, ANONYMOUS, "orders", [0])[0].hanging == ()
    again = abort_hanging(broker, ANONYMOUS, topic="orders", partition=0, producer_id=900, producer_epoch=3, coordinator_epoch=0)
    assert again.error_code == ErrorCode.INVALID_TXN_STATE  # nothing open any more: no stray marker


def test_find_and_abort_hanging_need_the_grants_kafka_asks_and_stay_in_the_tenant(broker):
    append_transactional(broker, "orders", 0, producer_id=900, epoch=0)
    reader = client((ResourceType.TOPIC, "orders", Operation.READ), tenant_id="")
    (outcome,) = find_hanging(broker, reader, "orders", [0])
    assert (outcome.topic, [item.producer_id for item in outcome.hanging]) == ("orders", [900])
    assert find_hanging(broker, client(tenant_id=""), "orders")[0].error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    # Tenant tn-a's "orders" is another topic (not on this broker): the broker's own "orders" never shows through.
    tenant_reader = client((ResourceType.TOPIC, "orders", Operation.READ))
    assert find_hanging(broker, tenant_reader, "orders")[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    hanging = {"topic": "orders", "partition": 0, "producer_id": 900, "producer_epoch": 0, "coordinator_epoch": -1}
    assert abort_hanging(broker, reader, **hanging).error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    tenant_alter = client((ResourceType.TOPIC, "orders", Operation.ALTER))
    assert abort_hanging(broker, tenant_alter, **hanging).error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert broker.replica_manager.partition_log("orders", 0).last_stable_offset == 0
    assert abort_hanging(broker, client((ResourceType.TOPIC, "orders", Operation.ALTER), tenant_id=""), **hanging).error_code == ErrorCode.NO_ERROR
    assert broker.replica_manager.partition_log("orders", 0).last_stable_offset == 2


def test_the_operators_abort_is_refused_while_the_transaction_completes():
    open_transaction = TransactionMetadata("t~app", 7, 2, 60_000, TransactionState.ONGOING, frozenset({("t~orders", 0)}), 10, 10)
    prepared = machine.abort_by_operator(open_transaction, "t~app", now_ms=20, allocate=lambda: 8)
    assert (prepared.state, prepared.producer_epoch, prepared.start_timestamp_ms, prepared.ended_by) == (TransactionState.PREPARE_ABORT, 3, 10, None)
    with pytest.raises(ConcurrentTransactionsError):
        machine.abort_by_operator(prepared, "t~app", now_ms=30, allocate=lambda: 8)

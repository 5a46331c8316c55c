"""The transactional Kafka APIs in process: FindCoordinator(TRANSACTION), InitProducerId with a transactional id,
AddPartitionsToTxn, AddOffsetsToTxn, EndTxn (v5 bumps the epoch, v3 keeps it), with tenants and ACLs."""

from __future__ import annotations

import datetime
import time

import pytest
from kio.index import load_request_schema
from kio.schema.add_partitions_to_txn.v3.request import AddPartitionsToTxnTopic

from broker_nodes.config import load_broker_config
from broker_nodes.coordinator.transactions.state import TransactionState
from broker_nodes.security.access import CallContext
from broker_nodes.security.authorizer import Operation
from broker_nodes.server.broker import Broker
from tests.kafka_protocol.admin_calls import call_handler
from tests.kafka_protocol.test_data_handlers import ANONYMOUS, tenant_client
from weir.errors import ErrorCode

FIND_COORDINATOR, INIT_PRODUCER_ID, ADD_PARTITIONS, ADD_OFFSETS, END_TXN = 10, 22, 24, 25, 26
TIMEOUT = datetime.timedelta(seconds=60)


@pytest.fixture
def broker(tmp_path):
    broker = Broker(
        load_broker_config(
            node_id=1, listen="127.0.0.1:0", data_dir=tmp_path, configs=["offsets.topic.num.partitions=1", "transaction.state.log.num.partitions=1"]
        )
    )
    broker.start()
    broker.topic_admin.create_topic("events", 2, 1, {})
    yield broker
    broker.shutdown()


def request(api_key: int, version: int, **fields):
    return load_request_schema(api_key, version)(**fields)


def init(broker, call: CallContext, version: int = 4):
    found = call_handler(broker, call, FIND_COORDINATOR, 4, request(FIND_COORDINATOR, 4, key_type=1, coordinator_keys=("app",)))
    assert found.coordinators[0].error_code == ErrorCode.NO_ERROR and found.coordinators[0].node_id == 1
    answer = call_handler(broker, call, INIT_PRODUCER_ID, version, request(INIT_PRODUCER_ID, version, transactional_id="app", transaction_timeout=TIMEOUT))
    assert answer.error_code == ErrorCode.NO_ERROR
    return int(answer.producer_id), int(answer.producer_epoch)


def add(broker, call, producer_id, epoch, topic="events", partitions=(0, 1)):
    schema = load_request_schema(ADD_PARTITIONS, 3)
    answer = call_handler(
        broker,
        call,
        ADD_PARTITIONS,
        3,
        schema(
            v3_and_below_transactional_id="app",
            v3_and_below_producer_id=producer_id,
            v3_and_below_producer_epoch=epoch,
            v3_and_below_topics=(AddPartitionsToTxnTopic(name=topic, partitions=partitions),),
        ),
    )
    return {(t.name, p.partition_index): int(p.partition_error_code) for t in answer.results_by_topic_v3_and_below for p in t.results_by_partition}


def end(broker, call, producer_id, epoch, *, commit=True, version=5):
    return call_handler(
        broker, call, END_TXN, version, request(END_TXN, version, transactional_id="app", producer_id=producer_id, producer_epoch=epoch, committed=commit)
    )


def wait_complete(broker, qualified: str) -> None:
    deadline = time.monotonic() + 10
    while broker.transaction_coordinator.describe(qualified).state.completing:
        assert time.monotonic() < deadline
        time.sleep(0.01)


def test_a_transaction_over_the_kafka_apis_bumps_the_epoch_at_end_txn_v5(broker):
    producer_id, epoch = init(broker, ANONYMOUS)
    assert set(add(broker, ANONYMOUS, producer_id, epoch).values()) == {ErrorCode.NO_ERROR}
    offsets = call_handler(
        broker, ANONYMOUS, ADD_OFFSETS, 3, request(ADD_OFFSETS, 3, transactional_id="app", producer_id=producer_id, producer_epoch=epoch, group_id="g")
    )
    assert offsets.error_code == ErrorCode.NO_ERROR
    ended = end(broker, ANONYMOUS, producer_id, epoch)
    assert (ended.error_code, ended.producer_id, ended.producer_epoch) == (ErrorCode.NO_ERROR, producer_id, epoch + 1)
    wait_complete(broker, "app")
    assert broker.transaction_coordinator.describe("app").state is TransactionState.COMPLETE_COMMIT
    assert end(broker, ANONYMOUS, producer_id, epoch).error_code == ErrorCode.NO_ERROR  # a retry, answered from state
    assert set(add(broker, ANONYMOUS, producer_id, epoch).values()) == {ErrorCode.PRODUCER_FENCED}


def test_end_txn_before_v5_keeps_the_epoch(broker):
    producer_id, epoch = init(broker, ANONYMOUS)
    add(broker, ANONYMOUS, producer_id, epoch)
    assert end(broker, ANONYMOUS, producer_id, epoch, version=3).error_code == ErrorCode.NO_ERROR
    wait_complete(broker, "app")
    assert set(add(broker, ANONYMOUS, producer_id, epoch).values()) == {ErrorCode.NO_ERROR}


def test_tenants_ids_and_topics_are_their_own_and_acls_apply(broker):
    writer = tenant_client(Operation.WRITE)
    reader = tenant_client(Operation.READ)
    found = call_handler(broker, reader, FIND_COORDINATOR, 4, request(FIND_COORDINATOR, 4, key_type=1, coordinator_keys=("app",)))
    assert found.coordinators[0].error_code == ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    producer_id, epoch = init(broker, writer)
    assert broker.transaction_coordinator.describe(writer.qualify("app")).producer_id == producer_id
    # WRITE on "orders" only: "events" is refused; the tenant's "orders" does not exist on this standalone broker.
    assert add(broker, writer, producer_id, epoch, topic="events", partitions=(0,)) == {("events", 0): ErrorCode.TOPIC_AUTHORIZATION_FAILED}
    assert add(broker, writer, producer_id, epoch, topic="orders", partitions=(0,)) == {("orders", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    assert end(broker, writer, producer_id, epoch).error_code == ErrorCode.INVALID_TXN_STATE  # no transaction was begun
    assert broker.transaction_coordinator.describe(writer.qualify("app")).state is TransactionState.EMPTY


DESCRIBE_TRANSACTIONS, LIST_TRANSACTIONS = 65, 66


def test_describe_and_list_show_the_tenants_open_transactions(broker):
    producer_id, epoch = init(broker, ANONYMOUS)
    add(broker, ANONYMOUS, producer_id, epoch, partitions=(1,))
    described = call_handler(broker, ANONYMOUS, DESCRIBE_TRANSACTIONS, 0, request(DESCRIBE_TRANSACTIONS, 0, transactional_ids=("app", "unknown")))
    first, unknown = described.transaction_states
    assert (first.error_code, first.transaction_state, first.producer_id, first.producer_epoch) == (ErrorCode.NO_ERROR, "Ongoing", producer_id, epoch)
    assert [(topic.topic, tuple(topic.partitions)) for topic in first.topics] == [("events", (1,))]
    assert first.transaction_start_time is not None
    assert unknown.error_code == ErrorCode.TRANSACTIONAL_ID_NOT_FOUND
    listed = call_handler(
        broker, ANONYMOUS, LIST_TRANSACTIONS, 1, request(LIST_TRANSACTIONS, 1, state_filters=("Ongoing", "Bogus"), producer_id_filters=(), duration_filter=0)
    )
    assert [(item.transactional_id, item.transaction_state) for item in listed.transaction_states] == [("app", "Ongoing")]
    assert listed.unknown_state_filters == ("Bogus",)
    other_tenant = tenant_client(Operation.WRITE)
    assert (
        call_handler(broker, other_tenant, LIST_TRANSACTIONS, 0, request(LIST_TRANSACTIONS, 0, state_filters=(), producer_id_filters=())).transaction_states
        == ()
    )

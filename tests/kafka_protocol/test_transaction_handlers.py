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
from tests.kafka_protocol.admin_calls import call_handler, request_module
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


def batched_add(broker, call, version: int, *transactions: tuple[str, int, int, bool, dict[str, tuple[int, ...]]]):
    """AddPartitionsToTxn v4+: (error code, {(transactional id, topic, partition): code})."""
    schema = load_request_schema(ADD_PARTITIONS, version)
    module = request_module(ADD_PARTITIONS, version)
    answer = call_handler(
        broker,
        call,
        ADD_PARTITIONS,
        version,
        schema(
            transactions=tuple(
                module.AddPartitionsToTxnTransaction(
                    transactional_id=transactional_id,
                    producer_id=producer_id,
                    producer_epoch=epoch,
                    verify_only=verify_only,
                    topics=tuple(module.AddPartitionsToTxnTopic(name=topic, partitions=partitions) for topic, partitions in topics.items()),
                )
                for transactional_id, producer_id, epoch, verify_only, topics in transactions
            )
        ),
    )
    codes = {
        (result.transactional_id, topic.name, partition.partition_index): int(partition.partition_error_code)
        for result in answer.results_by_transaction
        for topic in result.topic_results
        for partition in topic.results_by_partition
    }
    return int(answer.error_code), codes


@pytest.mark.parametrize("version", [4, 5])
def test_batched_add_partitions_adds_and_verifies_several_transactions(broker, version):
    versions = call_handler(broker, ANONYMOUS, 18, 3, request(18, 3, client_software_name="test", client_software_version="1"))
    assert [(int(key.min_version), int(key.max_version)) for key in versions.api_keys if key.api_key == ADD_PARTITIONS] == [(0, 5)]
    producer_id, epoch = init(broker, ANONYMOUS)
    # One request: "app" adds partition 0; an unknown id is refused on its own.
    code, added = batched_add(broker, ANONYMOUS, version, ("app", producer_id, epoch, False, {"events": (0,)}), ("nobody", 9, 0, False, {"events": (1,)}))
    assert code == ErrorCode.NO_ERROR
    assert added == {("app", "events", 0): ErrorCode.NO_ERROR, ("nobody", "events", 1): ErrorCode.INVALID_PRODUCER_ID_MAPPING}
    # VerifyOnly (what a partition leader asks before appending a transactional batch) changes nothing.
    code, verified = batched_add(broker, ANONYMOUS, version, ("app", producer_id, epoch, True, {"events": (0, 1)}))
    assert verified == {("app", "events", 0): ErrorCode.NO_ERROR, ("app", "events", 1): ErrorCode.INVALID_TXN_STATE}
    assert broker.transaction_coordinator.describe("app").partitions == frozenset({("events", 0)})
    _, stale = batched_add(broker, ANONYMOUS, version, ("app", producer_id, epoch - 1 if epoch else epoch + 1, True, {"events": (0,)}))
    assert stale == {("app", "events", 0): ErrorCode.PRODUCER_FENCED}
    # A transactional id named twice is an invalid request; nothing is added.
    code, none = batched_add(
        broker, ANONYMOUS, version, ("app", producer_id, epoch, False, {"events": (1,)}), ("app", producer_id, epoch, True, {"events": (0,)})
    )
    assert (code, none) == (ErrorCode.INVALID_REQUEST, {})
    # Kafka's brokers send this version (CLUSTER_ACTION); in Weir a caller needs ALTER on its cluster.
    writer = tenant_client(Operation.WRITE)
    code, none = batched_add(broker, writer, version, ("app", producer_id, epoch, True, {"orders": (0,)}))
    assert (code, none) == (ErrorCode.CLUSTER_AUTHORIZATION_FAILED, {})
    assert broker.transaction_coordinator.describe("app").partitions == frozenset({("events", 0)})


def test_transactional_id_acls_decide_as_kafkas_authorizer(broker):
    from broker_nodes.security.access import CallerKind
    from broker_nodes.security.authorizer import AclEntry, PatternType, Permission, ResourceType

    acls = (
        AclEntry("User:sa-1", ResourceType.TOPIC, "orders", PatternType.LITERAL, Operation.WRITE, Permission.ALLOW),
        AclEntry("User:sa-1", ResourceType.TRANSACTIONAL_ID, "app", PatternType.LITERAL, Operation.WRITE, Permission.ALLOW),
    )
    caller = CallContext("tn-a", "User:sa-1", "127.0.0.1", CallerKind.CLIENT, acls)
    producer_id, epoch = init(broker, caller)  # WRITE on the id "app": FindCoordinator and InitProducerId pass
    for transactional_id in ("other", "x"):
        found = call_handler(broker, caller, FIND_COORDINATOR, 4, request(FIND_COORDINATOR, 4, key_type=1, coordinator_keys=(transactional_id,)))
        assert found.coordinators[0].error_code == ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        answer = call_handler(broker, caller, INIT_PRODUCER_ID, 4, request(INIT_PRODUCER_ID, 4, transactional_id=transactional_id, transaction_timeout=TIMEOUT))
        assert answer.error_code == ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    offsets = call_handler(
        broker, caller, ADD_OFFSETS, 3, request(ADD_OFFSETS, 3, transactional_id="other", producer_id=producer_id, producer_epoch=epoch, group_id="g")
    )
    assert offsets.error_code == ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    ended = call_handler(
        broker, caller, END_TXN, 5, request(END_TXN, 5, transactional_id="other", producer_id=producer_id, producer_epoch=epoch, committed=True)
    )
    assert ended.error_code == ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    described = call_handler(broker, caller, DESCRIBE_TRANSACTIONS, 0, request(DESCRIBE_TRANSACTIONS, 0, transactional_ids=("app", "other")))
    assert [int(state.error_code) for state in described.transaction_states] == [ErrorCode.NO_ERROR, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED]


def transactional_produce(broker, call, transactional_id, producer_id, epoch, topic="orders"):
    from weir.records import build_batch

    records = build_batch([(1_700_000_000_000, b"k", b"v", None)], producer_id=producer_id, producer_epoch=epoch, base_sequence=0, transactional=True)
    schema = request_module(PRODUCE, 9)
    data = schema.TopicProduceData(name=topic, partition_data=(schema.PartitionProduceData(index=0, records=records),))
    answer = call_handler(broker, call, PRODUCE, 9, schema.ProduceRequest(transactional_id=transactional_id, acks=-1, timeout=TIMEOUT, topic_data=(data,)))
    return answer.responses[0].partition_responses[0]


PRODUCE = 0


def test_a_transactional_produce_needs_write_on_the_callers_own_transactional_id(broker):
    """As Kafka: TRANSACTIONAL_ID_AUTHORIZATION_FAILED for every partition, nothing appended; one tenant's
    "app" is not another's, so neither its ACL nor its ongoing transaction reaches across."""
    from broker_nodes.security.access import CallerKind
    from broker_nodes.security.authorizer import AclEntry, PatternType, Permission, ResourceType

    def tenant(tenant_id, transactional_id):
        acls = (
            AclEntry("User:sa-1", ResourceType.TOPIC, "orders", PatternType.LITERAL, Operation.WRITE, Permission.ALLOW),
            AclEntry("User:sa-1", ResourceType.TRANSACTIONAL_ID, transactional_id, PatternType.LITERAL, Operation.WRITE, Permission.ALLOW),
        )
        return CallContext(tenant_id, "User:sa-1", "127.0.0.1", CallerKind.CLIENT, acls)

    owner, stranger = tenant("tn-a", "app"), tenant("tn-b", "other")
    producer_id, epoch = init(broker, owner)
    refused = transactional_produce(broker, stranger, "app", producer_id, epoch)
    assert (refused.error_code, refused.error_message) == (ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, "not authorized to use transactional id 'app'")
    # tn-b's own "app" is another resource: allowed, but no transaction of it holds the partition.
    unverified = transactional_produce(broker, tenant("tn-b", "app"), "app", producer_id, epoch)
    assert unverified.error_code not in (ErrorCode.NO_ERROR, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    # A caller with every right (no tenant): verified and appended.
    producer_id, epoch = init(broker, ANONYMOUS)
    add(broker, ANONYMOUS, producer_id, epoch, partitions=(0,))
    appended = transactional_produce(broker, ANONYMOUS, "app", producer_id, epoch, topic="events")
    assert (appended.error_code, appended.base_offset) == (ErrorCode.NO_ERROR, 0)

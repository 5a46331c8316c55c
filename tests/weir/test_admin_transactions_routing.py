"""The AdminClient's transaction calls on two scripted brokers: list merges both coordinators,
describe and abort go to the id's transaction coordinator (again after NOT_COORDINATOR),
find-hanging asks each partition's leader and drops what another coordinator still holds
Ongoing, abort-hanging goes to the partition's leader."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from grpc_protos.weir.v1 import broker_pb2
from tests.weir.scripted_broker import ScriptedBroker, coordinator_at, metadata
from weir.admin import AdminClient, TransactionListing
from weir.errors import ErrorCode

WAIT = 10.0


class TransactionBroker(ScriptedBroker):
    """A scripted broker that also answers the transaction RPCs from ``answers``."""

    def ListTransactions(self, request, context):  # type: ignore[no-untyped-def]
        return self._answer("ListTransactions", request, context)

    def DescribeTransactions(self, request, context):  # type: ignore[no-untyped-def]
        return self._answer("DescribeTransactions", request, context)

    def AbortTransaction(self, request, context):  # type: ignore[no-untyped-def]
        return self._answer("AbortTransaction", request, context)

    def FindHangingTransactions(self, request, context):  # type: ignore[no-untyped-def]
        return self._answer("FindHangingTransactions", request, context)


@pytest.fixture
def brokers() -> Iterator[list[TransactionBroker]]:
    started = [TransactionBroker(node_id).start() for node_id in (1, 2)]
    cluster = metadata(started, {"orders": [(1, 0), (2, 0)]})  # orders-0 led by broker 1, orders-1 by broker 2
    for broker in started:
        broker.answers["Metadata"] = lambda request: cluster
    try:
        yield started
    finally:
        for broker in started:
            broker.stop()


@pytest.fixture
def admin(brokers: list[TransactionBroker]) -> Iterator[AdminClient]:
    client = AdminClient({"bootstrap.servers": brokers[0].address, "retry.backoff.ms": 10, "retry.backoff.max.ms": 50})
    yield client
    client.close()


def ongoing(transactional_id: str, producer_id: int, partitions: dict[str, list[int]]) -> broker_pb2.TransactionDescription:
    return broker_pb2.TransactionDescription(
        transactional_id=transactional_id,
        state="Ongoing",
        producer_id=producer_id,
        producer_epoch=1,
        transaction_timeout_ms=60_000,
        transaction_start_time_ms=1_000,
        topics=[broker_pb2.TopicPartitions(topic=topic, partitions=numbers) for topic, numbers in partitions.items()],
    )


def open_transaction(partition: int, producer_id: int) -> broker_pb2.OpenTransaction:
    target = broker_pb2.HangingTransaction(topic="orders", partition=partition, producer_id=producer_id, producer_epoch=3, coordinator_epoch=-1)
    return broker_pb2.OpenTransaction(target=target, start_offset=10, last_timestamp_ms=5, open_for_ms=1_000_000)


def test_list_merges_the_transactions_of_every_coordinator(brokers, admin) -> None:
    first, second = brokers
    first.answers["ListTransactions"] = lambda request: broker_pb2.ListTransactionsResponse(transactions=[ongoing("b-app", 7, {})])
    second.answers["ListTransactions"] = lambda request: broker_pb2.ListTransactionsResponse(transactions=[ongoing("a-app", 8, {})])
    listed = admin.list_transactions(states=["Ongoing"], producer_ids=[7, 8], min_duration_ms=5).result(WAIT)
    assert listed == [TransactionListing("a-app", 8, "Ongoing"), TransactionListing("b-app", 7, "Ongoing")]
    (asked,) = second.called("ListTransactions")
    assert (list(asked.state_filters), list(asked.producer_id_filters), asked.duration_filter_ms) == (["Ongoing"], [7, 8], 5)


def test_describe_and_abort_follow_the_transaction_coordinator(brokers, admin) -> None:
    first, second = brokers
    found = iter([first, second, second])
    for broker in brokers:
        broker.answers["FindCoordinator"] = lambda request: coordinator_at(next(found), "app")
    not_coordinator = broker_pb2.TransactionDescription(transactional_id="app", error_code=ErrorCode.NOT_COORDINATOR)
    first.answers["DescribeTransactions"] = lambda request: broker_pb2.DescribeTransactionsResponse(transactions=[not_coordinator])
    second.answers["DescribeTransactions"] = lambda request: broker_pb2.DescribeTransactionsResponse(transactions=[ongoing("app", 7, {"orders": [1, 0]})])
    second.answers["AbortTransaction"] = lambda request: broker_pb2.AbortTransactionResponse()
    described = admin.describe_transactions(["app"])["app"].result(WAIT)
    assert (described.coordinator_id, described.state, [(tp.topic, tp.partition) for tp in described.topic_partitions]) == (
        2,
        "Ongoing",
        [("orders", 0), ("orders", 1)],
    )
    assert first.called("FindCoordinator")[0].key_type == broker_pb2.COORDINATOR_KEY_TYPE_TRANSACTION
    assert admin.abort_transaction("app").result(WAIT) is None
    assert [request.transactional_id for request in second.called("AbortTransaction")] == ["app"]


def test_find_hanging_asks_each_leader_and_drops_what_a_coordinator_still_holds(brokers, admin) -> None:
    first, second = brokers
    first.answers["FindHangingTransactions"] = lambda request: broker_pb2.FindHangingTransactionsResponse(
        partitions=[broker_pb2.HangingPartition(partition=0, transactions=[open_transaction(0, 7)])]
    )
    second.answers["FindHangingTransactions"] = lambda request: broker_pb2.FindHangingTransactionsResponse(
        partitions=[broker_pb2.HangingPartition(partition=1, transactions=[open_transaction(1, 8)])]
    )
    # Broker 2's coordinator still holds producer 7's transaction Ongoing with orders-0: not hanging.
    first.answers["ListTransactions"] = lambda request: broker_pb2.ListTransactionsResponse()
    second.answers["ListTransactions"] = lambda request: broker_pb2.ListTransactionsResponse(transactions=[ongoing("app", 7, {"orders": [0]})])
    (hanging,) = admin.find_hanging_transactions("orders").result(WAIT)
    assert (hanging.partition, hanging.producer_id, hanging.start_offset, hanging.open_for_ms) == (1, 8, 10, 1_000_000)
    assert [list(request.partitions) for request in first.called("FindHangingTransactions")] == [[0]]
    assert [list(request.partitions) for request in second.called("FindHangingTransactions")] == [[1]]
    assert sorted(second.called("ListTransactions")[0].producer_id_filters) == [7, 8]

    second.answers["AbortTransaction"] = lambda request: broker_pb2.AbortTransactionResponse()
    assert admin.abort_hanging_transaction("orders", 1, 8, 3, -1).result(WAIT) is None
    (aborted,) = second.called("AbortTransaction")
    assert (aborted.hanging.topic, aborted.hanging.partition, aborted.hanging.producer_id, aborted.hanging.producer_epoch) == ("orders", 1, 8, 3)
    assert first.called("AbortTransaction") == []

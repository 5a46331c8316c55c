"""The AdminClient's transaction operations against a real broker process: list, describe, abort by id,
find-hanging and abort-hanging (Kafka's kafka-transactions.sh tools, KIP-664)."""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Iterator
from typing import Any

import grpc
import pytest

from grpc_protos.weir.v1 import broker_pb2_grpc
from tests.broker_nodes.server.test_transaction_rpcs import TOPIC, TRANSACTIONAL_ID, add_partition, init, produce_transactional
from tests.support.processes import BrokerProcess
from tests.support.transaction_setup import hang_transaction
from tests.weir.sdk_support import create_topic, wait_for
from weir import KafkaException, TopicPartition
from weir.admin import AdminClient, TransactionListing
from weir.cli import main
from weir.errors import ErrorCode

WAIT = 30.0


@pytest.fixture
def broker(broker_factory: Callable[..., Any]) -> BrokerProcess:
    process: BrokerProcess = broker_factory()
    create_topic(process.address, TOPIC, partitions=2)
    return process


@pytest.fixture
def cluster(broker: BrokerProcess) -> Iterator[tuple[AdminClient, broker_pb2_grpc.BrokerStub]]:
    admin = AdminClient({"bootstrap.servers": broker.address, "retry.backoff.ms": 20})
    with grpc.insecure_channel(broker.address) as channel:
        yield admin, broker_pb2_grpc.BrokerStub(channel)
    admin.close()


def hang_a_transaction(broker: BrokerProcess, partition: int) -> tuple[int, int]:
    """A transaction open in the partition whose coordinator lost its log (the broker restarted without it): its producer id and epoch."""
    return hang_transaction({"bootstrap.servers": broker.address}, broker, TOPIC, partition)


def test_an_operator_lists_describes_and_aborts_a_transaction(cluster) -> None:
    admin, stub = cluster
    producer = init(stub)
    assert add_partition(stub, producer).error_code == ErrorCode.NO_ERROR
    assert produce_transactional(stub, producer, [b"a"], 0).error_code == ErrorCode.NO_ERROR
    assert admin.list_transactions().result(WAIT) == [TransactionListing(TRANSACTIONAL_ID, producer.producer_id, "Ongoing")]
    assert admin.list_transactions(states=["CompleteAbort"]).result(WAIT) == []
    assert admin.list_transactions(min_duration_ms=3_600_000).result(WAIT) == []
    described = admin.describe_transactions([TRANSACTIONAL_ID, "unknown"])
    found = described[TRANSACTIONAL_ID].result(WAIT)
    assert (found.state, found.producer_id, found.producer_epoch, found.topic_partitions) == (
        "Ongoing",
        producer.producer_id,
        producer.producer_epoch,
        [TopicPartition(TOPIC, 0)],
    )
    assert found.coordinator_id == 1 and found.transaction_start_time_ms is not None
    with pytest.raises(KafkaException) as unknown:
        described["unknown"].result(WAIT)
    assert unknown.value.args[0].code() == ErrorCode.TRANSACTIONAL_ID_NOT_FOUND
    assert admin.abort_transaction(TRANSACTIONAL_ID).result(WAIT) is None
    assert wait_for(lambda: admin.describe_transactions([TRANSACTIONAL_ID])[TRANSACTIONAL_ID].result(WAIT).state == "CompleteAbort", WAIT)
    assert admin.describe_transactions([TRANSACTIONAL_ID])[TRANSACTIONAL_ID].result(WAIT).producer_epoch == producer.producer_epoch + 1
    with pytest.raises(KafkaException) as nothing_open:
        admin.abort_transaction(TRANSACTIONAL_ID).result(WAIT)
    assert nothing_open.value.args[0].code() == ErrorCode.INVALID_TXN_STATE


def test_a_hanging_transaction_is_found_and_aborted(broker: BrokerProcess, request: pytest.FixtureRequest) -> None:
    lost_id, lost_epoch = hang_a_transaction(broker, 1)
    admin, stub = request.getfixturevalue("cluster")  # opened once the broker has restarted
    producer = init(stub)  # an open transaction its coordinator holds: old batch timestamps, yet not hanging
    assert add_partition(stub, producer).error_code == ErrorCode.NO_ERROR
    assert produce_transactional(stub, producer, [b"a"], 0).error_code == ErrorCode.NO_ERROR
    (hanging,) = admin.find_hanging_transactions(TOPIC).result(WAIT)
    assert (hanging.topic, hanging.partition, hanging.producer_id, hanging.producer_epoch, hanging.start_offset) == (TOPIC, 1, lost_id, lost_epoch, 0)
    assert hanging.open_for_ms > 900_000  # transaction.max.timeout.ms
    assert admin.find_hanging_transactions(TOPIC, [0]).result(WAIT) == []
    abort = admin.abort_hanging_transaction(TOPIC, 1, hanging.producer_id, hanging.producer_epoch, hanging.coordinator_epoch)
    assert abort.result(WAIT) is None
    assert admin.find_hanging_transactions(TOPIC).result(WAIT) == []
    with pytest.raises(KafkaException) as missing:
        admin.find_hanging_transactions("missing").result(WAIT)
    assert missing.value.args[0].code() in (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.TOPIC_AUTHORIZATION_FAILED)


def weir(address: str, *argv: str) -> tuple[int, str, str]:
    stdout, stderr = io.StringIO(), io.StringIO()
    code = main([*argv, "--bootstrap-server", address], stdout=stdout, stderr=stderr, environ={})
    return code, stdout.getvalue(), stderr.getvalue()


def test_the_weir_transactions_commands(broker_factory: Callable[..., Any]) -> None:
    process: BrokerProcess = broker_factory()
    address = process.address
    create_topic(address, TOPIC, partitions=2)
    lost_id, _ = hang_a_transaction(process, 1)
    with grpc.insecure_channel(address) as channel:
        stub = broker_pb2_grpc.BrokerStub(channel)
        producer = init(stub)
        assert add_partition(stub, producer).error_code == ErrorCode.NO_ERROR
    code, out, err = weir(address, "transactions", "list", "--state", "ongoing", "--output", "json")
    assert (code, json.loads(out)) == (0, [{"transactional_id": TRANSACTIONAL_ID, "producer_id": producer.producer_id, "state": "Ongoing"}]), err
    code, out, _ = weir(address, "transactions", "list", "--state", "CompleteAbort")
    assert code == 0 and TRANSACTIONAL_ID not in out
    code, out, err = weir(address, "transactions", "describe", TRANSACTIONAL_ID, "--output", "json")
    described = json.loads(out)
    assert (code, described["state"], described["partitions"]) == (0, "Ongoing", [{"topic": TOPIC, "partition": 0}]), err
    assert described["open_for_ms"] >= 0
    code, out, _ = weir(address, "transactions", "describe", TRANSACTIONAL_ID)
    assert code == 0 and "Ongoing" in out and f"{TOPIC}[0]" in out
    assert weir(address, "transactions", "list", "--state", "bogus")[0] == 2
    code, _, err = weir(address, "transactions", "describe", "unknown")
    assert code == 1 and "TRANSACTIONAL_ID_NOT_FOUND" in err
    code, out, err = weir(address, "transactions", "find-hanging", TOPIC, "--output", "json")
    (hanging,) = json.loads(out)
    assert (code, hanging["partition"], hanging["producer_id"], hanging["start_offset"]) == (0, 1, lost_id, 0), err
    code, out, _ = weir(address, "transactions", "find-hanging", TOPIC)
    assert code == 0 and str(lost_id) in out
    assert weir(address, "transactions", "abort-hanging", "--topic", TOPIC, "--partition", "1")[0] == 2  # which transaction?
    code, _, err = weir(address, "transactions", "abort-hanging", "--topic", TOPIC, "--partition", "1", "--start-offset", "7")
    assert code == 1 and "no hanging transaction starts at offset 7" in err
    code, out, err = weir(address, "transactions", "abort-hanging", "--topic", TOPIC, "--partition", "1", "--start-offset", "0")
    assert code == 0 and f"Aborted producer {lost_id}" in out, err
    assert json.loads(weir(address, "transactions", "find-hanging", TOPIC, "--output", "json")[1]) == []
    code, out, err = weir(address, "transactions", "abort", TRANSACTIONAL_ID)
    assert code == 0 and "fenced" in out, err
    code, _, err = weir(address, "transactions", "abort", TRANSACTIONAL_ID)
    assert code == 1 and ("INVALID_TXN_STATE" in err or "CONCURRENT_TRANSACTIONS" in err)

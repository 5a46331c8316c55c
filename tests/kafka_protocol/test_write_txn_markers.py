"""WriteTxnMarkers from an admin client (kafka-transactions.sh abort, KIP-664) in process: an ABORT
marker ends a hanging transaction at the partition's leader; COMMIT markers and callers without
ALTER are refused; a tenant reaches only its own topics."""

from __future__ import annotations

import importlib

import pytest

from broker_nodes.config import load_broker_config
from broker_nodes.server.broker import Broker
from tests.kafka_protocol.admin_calls import call_handler
from tests.kafka_protocol.test_data_handlers import ANONYMOUS, tenant_client
from tests.kafka_protocol.test_transaction_handlers import request
from weir.errors import ErrorCode
from weir.records import RecordBatchBuilder

WRITE_TXN_MARKERS = 27


@pytest.fixture
def broker(tmp_path):
    broker = Broker(load_broker_config(node_id=1, listen="127.0.0.1:0", data_dir=tmp_path, configs=["offsets.topic.num.partitions=1"]))
    broker.start()
    broker.topic_admin.create_topic("events", 1, 1, {})
    yield broker
    broker.shutdown()


def hang(broker) -> None:
    builder = RecordBatchBuilder(producer_id=4242, producer_epoch=5, base_sequence=0, transactional=True)
    builder.append(1_700_000_000_000, None, b"late")
    log = broker.replica_manager.partition_log("events", 0)
    log.append_as_leader(builder.build(), broker.replica_manager.leader_epoch("events", 0))
    log.update_high_watermark(log.log_end_offset)


def write_marker(broker, call, *, commit: bool, version: int = 1) -> int:
    schema = importlib.import_module(f"kio.schema.write_txn_markers.v{version}.request")
    extra = {"transaction_version": 2} if version >= 2 else {}
    marker = schema.WritableTxnMarker(
        producer_id=4242,
        producer_epoch=5,
        transaction_result=commit,
        topics=(schema.WritableTxnMarkerTopic(name="events", partition_indexes=(0,)),),
        coordinator_epoch=0,
        **extra,
    )
    answer = call_handler(broker, call, WRITE_TXN_MARKERS, version, request(WRITE_TXN_MARKERS, version, markers=(marker,)))
    ((partition,),) = [topic.partitions for topic in answer.markers[0].topics]
    return int(partition.error_code)


def test_an_admin_clients_abort_marker_ends_a_hanging_transaction(broker) -> None:
    hang(broker)
    log = broker.replica_manager.partition_log("events", 0)
    assert write_marker(broker, ANONYMOUS, commit=True) == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    assert write_marker(broker, tenant_client(), commit=False) == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    assert log.last_stable_offset == 0
    assert write_marker(broker, ANONYMOUS, commit=False, version=2) == ErrorCode.NO_ERROR
    assert log.last_stable_offset == log.log_end_offset == 2
    assert write_marker(broker, ANONYMOUS, commit=False) == ErrorCode.INVALID_TXN_STATE  # nothing open any more

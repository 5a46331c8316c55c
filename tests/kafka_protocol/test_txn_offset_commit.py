"""TxnOffsetCommit and OffsetFetch require_stable in process (KIP-447): a transaction's offsets stay pending, become the
group's committed offsets at COMMIT, vanish at ABORT, survive a restart as the log says, and are fenced by epoch and member."""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kio.index import load_request_schema
from kio.schema.offset_fetch.v7.request import OffsetFetchRequestTopic
from kio.schema.txn_offset_commit.v0.request import TxnOffsetCommitRequestPartition as PartitionV0
from kio.schema.txn_offset_commit.v0.request import TxnOffsetCommitRequestTopic as TopicV0
from kio.schema.txn_offset_commit.v3.request import TxnOffsetCommitRequestPartition, TxnOffsetCommitRequestTopic

from broker_nodes.config import load_broker_config
from broker_nodes.coordinator.groups.classic import ClassicSettings
from broker_nodes.security.access import CallContext
from broker_nodes.security.authorizer import Operation
from broker_nodes.server.broker import Broker
from tests.kafka_protocol.admin_calls import call_handler
from tests.kafka_protocol.test_data_handlers import ANONYMOUS, tenant_client
from tests.kafka_protocol.test_transaction_handlers import end, init, wait_complete
from weir.errors import ErrorCode

OFFSET_COMMIT, OFFSET_FETCH, JOIN_GROUP, ADD_OFFSETS, TXN_OFFSET_COMMIT = 8, 9, 11, 25, 28
GROUP = "readers"
SESSION = datetime.timedelta(seconds=30)


def start(data_dir: Path) -> Broker:
    broker = Broker(
        load_broker_config(
            node_id=1, listen="127.0.0.1:0", data_dir=data_dir, configs=["offsets.topic.num.partitions=1", "transaction.state.log.num.partitions=1"]
        )
    )
    broker.start()
    broker.group_coordinator.classic.settings = ClassicSettings(initial_rebalance_delay_ms=0)
    return broker


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[Broker]:
    broker = start(tmp_path)
    broker.topic_admin.create_topic("events", 2, 1, {})
    yield broker
    broker.shutdown()


def request(api_key: int, version: int, **fields: Any) -> Any:
    return load_request_schema(api_key, version)(**fields)


def add_offsets(broker: Broker, producer_id: int, epoch: int, call: CallContext = ANONYMOUS) -> int:
    answer = call_handler(
        broker, call, ADD_OFFSETS, 3, request(ADD_OFFSETS, 3, transactional_id="app", producer_id=producer_id, producer_epoch=epoch, group_id=GROUP)
    )
    return int(answer.error_code)


def txn_commit(
    broker: Broker,
    producer_id: int,
    epoch: int,
    offsets: dict[int, int],
    *,
    call: CallContext = ANONYMOUS,
    member: str = "",
    generation: int = -1,
    instance: str | None = None,
) -> dict[int, int]:
    """TxnOffsetCommit v3 of ``offsets`` (partition of "events" -> offset); the error code per partition."""
    partitions = tuple(
        TxnOffsetCommitRequestPartition(partition_index=p, committed_offset=o, committed_leader_epoch=-1, committed_metadata="m") for p, o in offsets.items()
    )
    answer = call_handler(
        broker,
        call,
        TXN_OFFSET_COMMIT,
        3,
        request(
            TXN_OFFSET_COMMIT,
            3,
            transactional_id="app",
            group_id=GROUP,
            producer_id=producer_id,
            producer_epoch=epoch,
            generation_id=generation,
            member_id=member,
            group_instance_id=instance,
            topics=(TxnOffsetCommitRequestTopic(name="events", partitions=partitions),),
        ),
    )
    assert [topic.name for topic in answer.topics] == ["events"]
    return {p.partition_index: int(p.error_code) for p in answer.topics[0].partitions}


def fetched(broker: Broker, *, require_stable: bool = False) -> dict[int, tuple[int, int]]:
    """OffsetFetch v7 of both partitions of "events": partition -> (offset, error code)."""
    answer = call_handler(
        broker,
        ANONYMOUS,
        OFFSET_FETCH,
        7,
        request(OFFSET_FETCH, 7, group_id=GROUP, topics=(OffsetFetchRequestTopic(name="events", partition_indexes=(0, 1)),), require_stable=require_stable),
    )
    assert answer.error_code == ErrorCode.NO_ERROR
    return {p.partition_index: (int(p.committed_offset), int(p.error_code)) for topic in answer.topics for p in topic.partitions}


def plain_commit(broker: Broker, partition: int, offset: int) -> None:
    schema = load_request_schema(OFFSET_COMMIT, 8)
    module = __import__(schema.__module__, fromlist=["OffsetCommitRequestTopic"])
    answer = call_handler(
        broker,
        ANONYMOUS,
        OFFSET_COMMIT,
        8,
        schema(
            group_id=GROUP,
            generation_id_or_member_epoch=-1,
            member_id="",
            group_instance_id=None,
            topics=(
                module.OffsetCommitRequestTopic(
                    name="events",
                    partitions=(
                        module.OffsetCommitRequestPartition(
                            partition_index=partition, committed_offset=offset, committed_leader_epoch=-1, committed_metadata=""
                        ),
                    ),
                ),
            ),
        ),
    )
    assert answer.topics[0].partitions[0].error_code == ErrorCode.NO_ERROR


def open_transaction(broker: Broker) -> tuple[int, int]:
    producer_id, epoch = init(broker, ANONYMOUS)
    assert add_offsets(broker, producer_id, epoch) == ErrorCode.NO_ERROR
    return producer_id, epoch


def finish(broker: Broker, producer_id: int, epoch: int, *, commit: bool) -> int:
    ended = end(broker, ANONYMOUS, producer_id, epoch, commit=commit)
    assert ended.error_code == ErrorCode.NO_ERROR
    wait_complete(broker, "app")
    return int(ended.producer_epoch)


NONE = (-1, ErrorCode.NO_ERROR)
UNSTABLE = (-1, ErrorCode.UNSTABLE_OFFSET_COMMIT)


def test_offsets_of_a_transaction_are_pending_until_its_commit(broker: Broker) -> None:
    producer_id, epoch = open_transaction(broker)
    assert txn_commit(broker, producer_id, epoch, {0: 5, 1: 7}) == {0: ErrorCode.NO_ERROR, 1: ErrorCode.NO_ERROR}
    assert fetched(broker) == {0: NONE, 1: NONE}
    assert fetched(broker, require_stable=True) == {0: UNSTABLE, 1: UNSTABLE}
    finish(broker, producer_id, epoch, commit=True)
    assert fetched(broker, require_stable=True) == {0: (5, ErrorCode.NO_ERROR), 1: (7, ErrorCode.NO_ERROR)}


def test_offsets_of_an_aborted_transaction_are_never_committed(broker: Broker) -> None:
    plain_commit(broker, 0, 3)
    producer_id, epoch = open_transaction(broker)
    assert txn_commit(broker, producer_id, epoch, {0: 9}) == {0: ErrorCode.NO_ERROR}
    assert fetched(broker, require_stable=True) == {0: UNSTABLE, 1: NONE}
    finish(broker, producer_id, epoch, commit=False)
    assert fetched(broker, require_stable=True) == {0: (3, ErrorCode.NO_ERROR), 1: NONE}


def test_a_plain_commit_after_the_transactions_record_wins_at_its_commit(broker: Broker) -> None:
    producer_id, epoch = open_transaction(broker)
    assert txn_commit(broker, producer_id, epoch, {0: 5, 1: 5}) == {0: ErrorCode.NO_ERROR, 1: ErrorCode.NO_ERROR}
    plain_commit(broker, 1, 2)  # later in the log than the transaction's record of partition 1
    finish(broker, producer_id, epoch, commit=True)
    assert fetched(broker) == {0: (5, ErrorCode.NO_ERROR), 1: (2, ErrorCode.NO_ERROR)}


def test_without_add_offsets_to_txn_the_commit_is_refused(broker: Broker) -> None:
    producer_id, epoch = init(broker, ANONYMOUS)
    assert txn_commit(broker, producer_id, epoch, {0: 5}) == {0: ErrorCode.INVALID_TXN_STATE}
    assert fetched(broker, require_stable=True) == {0: NONE, 1: NONE}


def test_an_older_producer_epoch_is_fenced(broker: Broker) -> None:
    producer_id, epoch = open_transaction(broker)
    next_epoch = finish(broker, producer_id, epoch, commit=True)
    assert add_offsets(broker, producer_id, next_epoch) == ErrorCode.NO_ERROR
    assert txn_commit(broker, producer_id, epoch, {0: 5}) == {0: ErrorCode.PRODUCER_FENCED}
    assert txn_commit(broker, producer_id, next_epoch, {0: 6}) == {0: ErrorCode.NO_ERROR}
    finish(broker, producer_id, next_epoch, commit=True)
    assert fetched(broker)[0] == (6, ErrorCode.NO_ERROR)


def join(broker: Broker, instance: str | None = None) -> tuple[str, int]:
    schema = load_request_schema(JOIN_GROUP, 5)
    module = __import__(schema.__module__, fromlist=["JoinGroupRequestProtocol"])
    fields: dict[str, Any] = {
        "group_id": GROUP,
        "session_timeout": SESSION,
        "rebalance_timeout": SESSION,
        "member_id": "",
        "group_instance_id": instance,
        "protocol_type": "consumer",
        "protocols": (module.JoinGroupRequestProtocol(name="range", metadata=b"m"),),
    }
    answer = call_handler(broker, ANONYMOUS, JOIN_GROUP, 5, schema(**fields))
    if answer.error_code == ErrorCode.MEMBER_ID_REQUIRED:
        answer = call_handler(broker, ANONYMOUS, JOIN_GROUP, 5, schema(**{**fields, "member_id": answer.member_id}))
    assert answer.error_code == ErrorCode.NO_ERROR
    return answer.member_id, int(answer.generation_id)


def test_the_consumers_generation_member_and_instance_fence_a_zombie(broker: Broker) -> None:
    member, generation = join(broker, instance="reader-1")
    producer_id, epoch = open_transaction(broker)
    assert txn_commit(broker, producer_id, epoch, {0: 1}, member=member, generation=generation + 1, instance="reader-1") == {0: ErrorCode.ILLEGAL_GENERATION}
    assert txn_commit(broker, producer_id, epoch, {0: 1}, member="gone", generation=generation) == {0: ErrorCode.UNKNOWN_MEMBER_ID}
    assert txn_commit(broker, producer_id, epoch, {0: 1}, member="gone", generation=generation, instance="reader-1") == {0: ErrorCode.FENCED_INSTANCE_ID}
    assert txn_commit(broker, producer_id, epoch, {0: 4}, member=member, generation=generation, instance="reader-1") == {0: ErrorCode.NO_ERROR}
    finish(broker, producer_id, epoch, commit=True)
    assert fetched(broker)[0] == (4, ErrorCode.NO_ERROR)


def test_version_0_names_no_member_and_commits_for_an_active_group(broker: Broker) -> None:
    join(broker)
    producer_id, epoch = open_transaction(broker)
    partitions = (PartitionV0(partition_index=1, committed_offset=8, committed_metadata=None),)
    answer = call_handler(
        broker,
        ANONYMOUS,
        TXN_OFFSET_COMMIT,
        0,
        request(
            TXN_OFFSET_COMMIT,
            0,
            transactional_id="app",
            group_id=GROUP,
            producer_id=producer_id,
            producer_epoch=epoch,
            topics=(TopicV0(name="events", partitions=partitions),),
        ),
    )
    assert answer.topics[0].partitions[0].error_code == ErrorCode.NO_ERROR
    finish(broker, producer_id, epoch, commit=True)
    assert fetched(broker)[1] == (8, ErrorCode.NO_ERROR)


def test_a_tenant_needs_read_on_the_group_and_the_topic(broker: Broker) -> None:
    writer = tenant_client(Operation.WRITE)
    producer_id, epoch = init(broker, writer)
    assert add_offsets(broker, producer_id, epoch, writer) == ErrorCode.GROUP_AUTHORIZATION_FAILED
    assert txn_commit(broker, producer_id, epoch, {0: 1}, call=writer) == {0: ErrorCode.GROUP_AUTHORIZATION_FAILED}


def test_loading_replays_committed_aborted_and_open_transactions(tmp_path: Path) -> None:
    broker = start(tmp_path)
    try:
        broker.topic_admin.create_topic("events", 2, 1, {})
        producer_id, epoch = open_transaction(broker)
        txn_commit(broker, producer_id, epoch, {0: 5})
        epoch = finish(broker, producer_id, epoch, commit=True)
        assert add_offsets(broker, producer_id, epoch) == ErrorCode.NO_ERROR
        txn_commit(broker, producer_id, epoch, {0: 50, 1: 50})
        epoch = finish(broker, producer_id, epoch, commit=False)
        assert add_offsets(broker, producer_id, epoch) == ErrorCode.NO_ERROR
        assert txn_commit(broker, producer_id, epoch, {1: 6}) == {1: ErrorCode.NO_ERROR}  # left open
    finally:
        broker.shutdown()
    restarted = start(tmp_path)
    try:
        assert fetched(restarted) == {0: (5, ErrorCode.NO_ERROR), 1: NONE}
        assert fetched(restarted, require_stable=True) == {0: (5, ErrorCode.NO_ERROR), 1: UNSTABLE}
        # The loaded coordinator still knows the open transaction: its commit makes the pending offset visible.
        finish(restarted, producer_id, epoch, commit=True)
        assert fetched(restarted, require_stable=True) == {0: (5, ErrorCode.NO_ERROR), 1: (6, ErrorCode.NO_ERROR)}
    finally:
        restarted.shutdown()

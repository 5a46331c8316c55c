"""Every version of every group API a lone member goes through, in process, each message round-tripped through kio.

FindCoordinator, JoinGroup (MEMBER_ID_REQUIRED from v4), SyncGroup, Heartbeat, OffsetCommit,
OffsetFetch, DescribeGroups, ListGroups, LeaveGroup, OffsetDelete and DeleteGroups at version
``step`` (or the nearest each API has), so a field one version lacks or a null another refuses
fails here and not only against some stock client.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from broker_nodes.coordinator.groups.classic import ClassicSettings
from broker_nodes.security.access import anonymous_context
from tests.kafka_protocol.admin_calls import call_handler, request_module
from tests.support.in_process_broker import InProcessBroker
from weir.errors import ErrorCode

ANONYMOUS = anonymous_context("127.0.0.1")
FIND_COORDINATOR, OFFSET_COMMIT, OFFSET_FETCH, JOIN_GROUP, HEARTBEAT, LEAVE_GROUP, SYNC_GROUP = 10, 8, 9, 11, 12, 13, 14
DESCRIBE_GROUPS, LIST_GROUPS, DELETE_GROUPS, OFFSET_DELETE = 15, 16, 42, 47
TIMEOUT = datetime.timedelta(seconds=10)


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    server = InProcessBroker(Path(tmp_path_factory.mktemp("versions")) / "data", {"offsets.topic.num.partitions": "1"}).start()
    server.broker.topic_admin.create_topic("orders", 2, 1, {})
    server.broker.group_coordinator.classic.settings = ClassicSettings(initial_rebalance_delay_ms=0)
    yield server.broker
    server.stop()


def call(broker: Any, api_key: int, version: int, **fields: Any) -> Any:
    schema = request_module(api_key, version)
    request_type = next(value for name, value in vars(schema).items() if name.endswith("Request") and isinstance(value, type))
    return call_handler(broker, ANONYMOUS, api_key, version, request_type(**fields)), schema


def join(broker: Any, version: int, group: str) -> Any:
    schema = request_module(JOIN_GROUP, version)
    fields: dict[str, Any] = {
        "group_id": group,
        "session_timeout": TIMEOUT,
        "member_id": "",
        "protocol_type": "consumer",
        "protocols": (schema.JoinGroupRequestProtocol(name="range", metadata=b"m"),),
    }
    if version >= 1:
        fields["rebalance_timeout"] = TIMEOUT
    response, _ = call(broker, JOIN_GROUP, version, **fields)
    if version >= 4:
        assert response.error_code == ErrorCode.MEMBER_ID_REQUIRED
        response, _ = call(broker, JOIN_GROUP, version, **{**fields, "member_id": response.member_id})
    assert response.error_code == ErrorCode.NO_ERROR, response
    assert response.leader == response.member_id and [member.member_id for member in response.members] == [response.member_id]
    return response


@pytest.mark.parametrize("step", range(10))
def test_a_lone_member_goes_through_every_group_api_at_this_version(broker: Any, step: int) -> None:
    group = f"versions-{step}"
    found, _ = call(broker, FIND_COORDINATOR, min(step, 5), **({"key_type": 0, "coordinator_keys": (group,)} if step >= 4 else {"key": group}))
    assert (found.coordinators[0].error_code if step >= 4 else found.error_code) == ErrorCode.NO_ERROR

    joined = join(broker, min(step, 9), group)
    member, generation = joined.member_id, joined.generation_id

    version = min(step, 5)
    schema = request_module(SYNC_GROUP, version)
    sync_fields: dict[str, Any] = {"group_id": group, "generation_id": generation, "member_id": member}
    sync_fields["assignments"] = (schema.SyncGroupRequestAssignment(member_id=member, assignment=b"a"),)
    synced, _ = call(broker, SYNC_GROUP, version, **sync_fields)
    assert (synced.error_code, synced.assignment) == (ErrorCode.NO_ERROR, b"a")

    beat, _ = call(broker, HEARTBEAT, min(step, 4), group_id=group, generation_id=generation, member_id=member)
    assert beat.error_code == ErrorCode.NO_ERROR

    version = max(2, min(step, 9))
    schema = request_module(OFFSET_COMMIT, version)
    partition_fields: dict[str, Any] = {"partition_index": 1, "committed_offset": 9, "committed_metadata": "m"}
    if version >= 6:
        partition_fields["committed_leader_epoch"] = -1
    commit_fields: dict[str, Any] = {"group_id": group, "generation_id_or_member_epoch": generation, "member_id": member}
    if version <= 4:
        commit_fields["retention_time"] = datetime.timedelta(milliseconds=-1)
    commit_fields["topics"] = (schema.OffsetCommitRequestTopic(name="orders", partitions=(schema.OffsetCommitRequestPartition(**partition_fields),)),)
    committed, _ = call(broker, OFFSET_COMMIT, version, **commit_fields)
    assert committed.topics[0].partitions[0].error_code == ErrorCode.NO_ERROR

    version = max(1, min(step, 9))
    schema = request_module(OFFSET_FETCH, version)
    if version >= 8:
        group_fields: dict[str, Any] = {"group_id": group, "topics": (schema.OffsetFetchRequestTopics(name="orders", partition_indexes=(1,)),)}
        if version >= 9:
            group_fields.update(member_id=member, member_epoch=-1)
        fetched, _ = call(broker, OFFSET_FETCH, version, groups=(schema.OffsetFetchRequestGroup(**group_fields),), require_stable=False)
        partitions = fetched.groups[0].topics[0].partitions
    else:
        fields: dict[str, Any] = {"group_id": group, "topics": (schema.OffsetFetchRequestTopic(name="orders", partition_indexes=(1,)),)}
        if version >= 7:
            fields["require_stable"] = False
        fetched, _ = call(broker, OFFSET_FETCH, version, **fields)
        partitions = fetched.topics[0].partitions
    assert [(item.partition_index, item.committed_offset, item.metadata) for item in partitions] == [(1, 9, "m")]

    version = min(step, 5)
    described, _ = call(broker, DESCRIBE_GROUPS, version, groups=(group,), **({"include_authorized_operations": False} if version >= 3 else {}))
    assert (described.groups[0].group_state, described.groups[0].protocol_data, described.groups[0].members[0].member_assignment) == ("Stable", "range", b"a")

    version = min(step, 5)
    list_fields = {"states_filter": ("stable",)} if version >= 4 else {}
    if version >= 5:
        list_fields["types_filter"] = ("classic",)
    listed, _ = call(broker, LIST_GROUPS, version, **list_fields)
    assert group in [entry.group_id for entry in listed.groups]

    version = min(step, 5)
    if version >= 3:
        schema = request_module(LEAVE_GROUP, version)
        left, _ = call(broker, LEAVE_GROUP, version, group_id=group, members=(schema.MemberIdentity(member_id=member),))
        assert [entry.error_code for entry in left.members] == [ErrorCode.NO_ERROR]
    else:
        left, _ = call(broker, LEAVE_GROUP, version, group_id=group, member_id=member)
        assert left.error_code == ErrorCode.NO_ERROR

    schema = request_module(OFFSET_DELETE, 0)
    deleted_offsets, _ = call(
        broker,
        OFFSET_DELETE,
        0,
        group_id=group,
        topics=(schema.OffsetDeleteRequestTopic(name="orders", partitions=(schema.OffsetDeleteRequestPartition(partition_index=1),)),),
    )
    assert (deleted_offsets.error_code, deleted_offsets.topics[0].partitions[0].error_code) == (ErrorCode.NO_ERROR, ErrorCode.NO_ERROR)

    deleted, _ = call(broker, DELETE_GROUPS, min(step, 2), groups_names=(group,))
    assert deleted.results[0].error_code == ErrorCode.GROUP_ID_NOT_FOUND  # no members and no offsets left: nothing to delete

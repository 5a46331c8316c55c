"""A partition the broker cannot create never stops the rest of a cluster map: the others are
applied, leaderships move, the reply and DescribeState name the bad one, and the broker logs it
once, not at every push."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from grpc_protos.weir.v1 import admin_pb2
from log_formats.log_files import MAX_DIRECTORY_NAME_BYTES, partition_directory_name
from log_formats.topic_names import max_topic_name_length
from tests.broker_nodes.security.managed_cluster import INTERNAL, SecuredBroker, brokers, topic
from weir.errors import ErrorCode

TENANT = "tn-k7q2m9x4hz"
OTHER_TENANT = "tn-p3x8w2n6qa"
# A name the control plane refuses, pushed straight to the Admin service: "<tenant>~<name>-0" is 256 bytes.
TOO_LONG = "x" * (MAX_DIRECTORY_NAME_BYTES + 1 - len(f"{TENANT}~") - len("-0"))


@pytest.fixture
def node(tmp_path: Path):
    broker = SecuredBroker(tmp_path / "node-1").start()
    yield broker
    broker.stop()


def apply(node: SecuredBroker, version: int, *topics: admin_pb2.TopicAssignment) -> admin_pb2.ApplyPartitionsResponse:
    request = admin_pb2.ApplyPartitionsRequest(version=version, cluster_id="weir-test", brokers=brokers((1, node.port), (2, 1)), topics=list(topics))
    return node.admin.ApplyPartitions(request, metadata=INTERNAL)


def describe(node: SecuredBroker) -> admin_pb2.DescribeStateResponse:
    return node.admin.DescribeState(admin_pb2.DescribeStateRequest(), metadata=INTERNAL)


def hosted(node: SecuredBroker) -> set[tuple[str, str, int]]:
    return {(item.tenant_id, item.topic, item.partition) for item in describe(node).partitions if item.tenant_id}


def failures(reply: admin_pb2.ApplyPartitionsResponse | admin_pb2.DescribeStateResponse) -> list[tuple[str, str, int, int, bool]]:
    return [(item.tenant_id, item.topic, item.partition, item.error_code, item.retriable) for item in reply.failed_partitions]


def block_directory(node: SecuredBroker, tenant_id: str, name: str, partition: int) -> Path:
    """A regular file where the partition's directory must go: the broker cannot create it."""
    path = node.data_dir / partition_directory_name(f"{tenant_id}~{name}", partition)
    path.write_bytes(b"in the way")
    return path


def test_a_name_too_long_for_a_directory_fails_only_its_partitions_and_every_other_topic_is_applied(node: SecuredBroker) -> None:
    assert len(partition_directory_name(f"{TENANT}~{TOO_LONG}", 0)) == MAX_DIRECTORY_NAME_BYTES + 1
    too_long = TOO_LONG
    reply = apply(node, 1, topic(TENANT, too_long, partitions=2), topic(OTHER_TENANT, "orders", partitions=2))

    assert (reply.applied_version, reply.partitions_created) == (1, 2)
    assert failures(reply) == [(TENANT, too_long, 0, ErrorCode.INVALID_TOPIC_EXCEPTION, False), (TENANT, too_long, 1, ErrorCode.INVALID_TOPIC_EXCEPTION, False)]
    assert "more than the 255 bytes a directory name may have" in reply.failed_partitions[0].error_message
    assert hosted(node) == {(OTHER_TENANT, "orders", 0), (OTHER_TENANT, "orders", 1)}
    assert node.broker.ready


def test_a_file_in_the_way_fails_that_partition_only_and_later_maps_and_leaderships_still_apply(node: SecuredBroker) -> None:
    block_directory(node, TENANT, "blocked", 1)
    first = apply(node, 1, topic(TENANT, "blocked", partitions=2))
    assert failures(first) == [(TENANT, "blocked", 1, ErrorCode.KAFKA_STORAGE_ERROR, True)]
    assert hosted(node) == {(TENANT, "blocked", 0)}

    # Another tenant's new topic, and a leadership that moves away: both applied while the bad partition stays.
    second = apply(node, 2, topic(TENANT, "blocked", partitions=2), topic(OTHER_TENANT, "orders", leaders=[2]))
    assert failures(second) == [(TENANT, "blocked", 1, ErrorCode.KAFKA_STORAGE_ERROR, True)]
    assert hosted(node) == {(TENANT, "blocked", 0)}, "broker 1 is not a replica of orders (leader 2 only)"
    third = apply(node, 3, topic(TENANT, "blocked", partitions=2), topic(OTHER_TENANT, "orders", leaders=[1]))
    assert second.applied_version == 2 and third.applied_version == 3
    assert hosted(node) == {(TENANT, "blocked", 0), (OTHER_TENANT, "orders", 0)}
    assert failures(describe(node)) == [(TENANT, "blocked", 1, ErrorCode.KAFKA_STORAGE_ERROR, True)]


def test_the_failure_is_logged_once_not_at_every_push_and_its_end_once(node: SecuredBroker, caplog: pytest.LogCaptureFixture) -> None:
    path = block_directory(node, TENANT, "blocked", 0)
    with caplog.at_level(logging.INFO, logger="broker_nodes.cluster_state"):
        for version in range(1, 21):
            apply(node, version, topic(TENANT, "blocked", topic_id="00000000-0000-0000-0000-00000000000b"))
        path.unlink()
        healed = apply(node, 21, topic(TENANT, "blocked", topic_id="00000000-0000-0000-0000-00000000000b"))
        apply(node, 22, topic(TENANT, "blocked", topic_id="00000000-0000-0000-0000-00000000000b"))
    lines = [record.getMessage() for record in caplog.records if record.name == "broker_nodes.cluster_state"]
    assert len([line for line in lines if "cannot be hosted" in line]) == 1, lines
    assert len([line for line in lines if "no longer fails" in line]) == 1, lines
    assert (healed.partitions_created, failures(healed)) == (1, [])
    assert hosted(node) == {(TENANT, "blocked", 0)} and failures(describe(node)) == []


def test_a_broker_restarted_with_a_bad_partition_in_its_map_starts_and_reports_it(node: SecuredBroker) -> None:
    block_directory(node, TENANT, "blocked", 0)
    apply(node, 1, topic(TENANT, "blocked"), topic(OTHER_TENANT, "orders"))
    node.restart()
    assert node.broker.ready
    assert hosted(node) == {(OTHER_TENANT, "orders", 0)}
    assert failures(describe(node)) == [(TENANT, "blocked", 0, ErrorCode.KAFKA_STORAGE_ERROR, True)]


def test_a_topic_whose_directory_name_fills_the_limit_can_be_deleted(node: SecuredBroker) -> None:
    longest = "z" * max_topic_name_length(TENANT)
    apply(node, 1, topic(TENANT, longest, partitions=1))
    directory = node.data_dir / partition_directory_name(f"{TENANT}~{longest}", 0)
    assert directory.is_dir()
    reply = apply(node, 2)  # the topic is gone from the map: its log is deleted
    assert (reply.partitions_deleted, failures(reply)) == (1, [])
    assert not directory.exists()

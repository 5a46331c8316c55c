"""The documented recovery against a real broker: backup, later changes, restore, resync_brokers.

The broker (security on, the control plane's internal token) holds snapshots newer than the
backup. After the restore the reconciler would leave it alone (it is not behind); the resync
refuses while the broker hosts a topic created after the backup, then, once agreed, gives it
exactly the restored credentials and ACLs: the key made after the backup stops working, the
backed-up key works and sees the topics its restored ACLs allow.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from django.conf import settings
from django.core.management import call_command
from django.core.management.base import CommandError

from grpc_protos.weir.v1 import broker_pb2, broker_pb2_grpc
from tests.support.processes import BrokerProcess
from tests.webapp.backup.conftest import ControlPlane, build_control_plane, register_brokers
from webapp.accounts.actions.keys import KeyOwner, do_create_key
from webapp.backup.document import check_document
from webapp.backup.dump import dump_control_plane
from webapp.backup.load import restore_control_plane
from webapp.catalog.actions.topics import check_create_topic, do_create_topic
from webapp.provisioning.broker_client import BrokerAddress, BrokerAdminClient
from webapp.provisioning.push import push_snapshots
from webapp.provisioning.reconciler import reconcile
from webapp.provisioning.snapshots import build_snapshots

pytestmark = [pytest.mark.django_db, pytest.mark.slow]


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerProcess]:
    process = BrokerProcess(tmp_path / "broker-1", configs={"security.required": "true"}, env={"WEIR_INTERNAL_TOKEN": settings.WEIR_INTERNAL_TOKEN})
    process.start()
    try:
        yield process
    finally:
        process.stop()


@pytest.fixture
def small_internal_topics(settings) -> None:  # type: ignore[no-untyped-def]
    settings.WEIR_OFFSETS_TOPIC_NUM_PARTITIONS = 2
    settings.WEIR_TRANSACTION_STATE_TOPIC_NUM_PARTITIONS = 1
    settings.WEIR_USAGE_TOPIC_NUM_PARTITIONS = 1


def push_everything(broker: BrokerProcess) -> None:
    assert push_snapshots(build_snapshots(["partitions", "security"]), [BrokerAddress(1, broker.address)]) == []


def describe(broker: BrokerProcess):  # type: ignore[no-untyped-def]
    with BrokerAdminClient(BrokerAddress(1, broker.address)) as client:
        return client.describe_state()


def visible_topics(broker: BrokerProcess, key_id: str, secret: str) -> list[str] | None:
    """The topics a key's Metadata call lists; None when the broker does not know the key."""
    with grpc.insecure_channel(broker.address) as channel:
        try:
            reply = broker_pb2_grpc.BrokerStub(channel).Metadata(
                broker_pb2.MetadataRequest(), timeout=10, metadata=[("x-weir-api-key", key_id), ("x-weir-api-secret", secret)]
            )
        except grpc.RpcError as error:
            assert error.code() == grpc.StatusCode.UNAUTHENTICATED, error
            return None
    return sorted(topic.name for topic in reply.topics)


def test_restored_credentials_and_acls_reach_a_broker_that_is_ahead_of_the_backup(broker: BrokerProcess, small_internal_topics: None) -> None:
    register_brokers({1: broker.port})
    plane: ControlPlane = build_control_plane(replication_factor=1)
    push_everything(broker)
    assert visible_topics(broker, plane.cluster_key_id, plane.cluster_secret) == ["orders"]
    backup = dump_control_plane()

    # After the backup: a new key and a new topic reach the broker.
    later = do_create_key(plane.owner, "cluster", KeyOwner(service_account=plane.service_account), "made after the backup")
    do_create_topic(plane.owner, check_create_topic(plane.owner, "orders-late", 1, 1, {}))
    push_everything(broker)
    ahead = describe(broker)
    assert visible_topics(broker, later.key.key_id, later.secret) == ["orders", "orders-late"]

    restore_control_plane(check_document(backup), clear_existing=True)
    # The broker is not behind the restored database, so the reconciler changes nothing.
    assert reconcile().repairs == []
    assert visible_topics(broker, later.key.key_id, later.secret) is not None

    with pytest.raises(CommandError, match=r"topic tn-\w+/orders-late \(id [0-9a-f-]+\): partition\(s\) 0 on broker\(s\) 1"):
        call_command("resync_brokers")
    assert describe(broker).security_version == ahead.security_version  # refused before changing anything

    call_command("resync_brokers", "--delete-unknown-topics")
    state = describe(broker)
    assert state.security_version == ahead.security_version + 1
    assert state.partitions_version == ahead.partitions_version + 1
    assert visible_topics(broker, later.key.key_id, later.secret) is None
    assert visible_topics(broker, plane.cluster_key_id, plane.cluster_secret) == ["orders"]
    assert "orders-late" not in {partition.topic for partition in state.partitions}
    # From now on the reconciler and jobs push versions the broker accepts.
    assert reconcile().repairs == []

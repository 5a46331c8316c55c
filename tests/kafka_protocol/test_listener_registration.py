"""Every broker's Kafka port travels from its registration through the fleet and the pushed map to Metadata."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from broker_nodes.cluster_state import BrokerEndpoint, ClusterSnapshot
from broker_nodes.config import BrokerConfigError
from broker_nodes.kafka_protocol import api
from broker_nodes.server.main import parse_arguments
from deploy.local import StackSettings, child_environment, startup_stages
from grpc_protos.weir.v1 import admin_pb2, broker_pb2
from tests.support.in_process_broker import InProcessBroker
from webapp.controller.registration import BrokerRegistrationError, register_broker
from webapp.fleet.models import BrokerNode
from webapp.provisioning.models import SnapshotKind
from webapp.provisioning.snapshots import build_snapshots


@pytest.mark.django_db
def test_a_registered_kafka_port_is_stored_and_pushed_in_the_cluster_map() -> None:
    register_broker(1, "broker-1.internal", 9001, "a", kafka_port=19092)
    register_broker(2, "broker-2.internal", 9002, "b")  # an older broker without a Kafka listener
    assert BrokerNode.objects.get(node_id=1).kafka_port == 19092
    snapshot = build_snapshots([SnapshotKind.PARTITIONS]).partitions
    assert snapshot is not None
    assert [(node.node_id, node.kafka_port) for node in snapshot.brokers] == [(1, 19092), (2, 0)]


@pytest.mark.django_db
def test_a_changed_kafka_port_is_a_registration_change() -> None:
    assert register_broker(1, "h", 9001, kafka_port=19092).created
    assert not register_broker(1, "h", 9001, kafka_port=19092).changed
    assert register_broker(1, "h", 9001, kafka_port=19093).changed
    assert BrokerNode.objects.get(node_id=1).kafka_port == 19093
    with pytest.raises(BrokerRegistrationError, match="Kafka port"):
        register_broker(1, "h", 9001, kafka_port=70000)


def test_the_pushed_map_keeps_kafka_ports_across_a_restart() -> None:
    request = admin_pb2.ApplyPartitionsRequest(
        version=1,
        cluster_id="c",
        brokers=[broker_pb2.BrokerNode(node_id=1, host="h1", port=9001, kafka_port=19092), broker_pb2.BrokerNode(node_id=2, host="h2", port=9002)],
    )
    snapshot = ClusterSnapshot.from_request(request)
    assert snapshot.brokers == (BrokerEndpoint(1, "h1", 9001, "", 19092), BrokerEndpoint(2, "h2", 9002, "", 0))
    assert ClusterSnapshot.from_json(snapshot.to_json()) == snapshot


def test_kafka_endpoints_list_the_brokers_with_a_kafka_listener_and_this_one(tmp_path: Path) -> None:
    broker = InProcessBroker(tmp_path / "data", {"offsets.topic.num.partitions": "1", "kafka.listen": "127.0.0.1:0"}, node_id=2).start()
    try:
        assert broker.running is not None and broker.running.kafka is not None and broker.running.kafka.listener is not None
        listener = broker.running.kafka.listener
        assert listener.port == broker.running.kafka_port
        assert api.kafka_endpoints(broker.broker, listener) == [api.KafkaEndpoint(2, "127.0.0.1", listener.port, "")]  # standalone
        broker.broker.cluster_state.store(
            ClusterSnapshot(1, "c", (BrokerEndpoint(1, "h1", 9001, "r1", 19092), BrokerEndpoint(2, "127.0.0.1", broker.port), BrokerEndpoint(3, "h3", 9003)))
        )
        assert api.kafka_endpoints(broker.broker, listener) == [api.KafkaEndpoint(1, "h1", 19092, "r1"), api.KafkaEndpoint(2, "127.0.0.1", listener.port, "")]
    finally:
        broker.stop()


def test_kafka_listen_comes_from_the_command_line_and_is_checked(tmp_path: Path) -> None:
    config = parse_arguments(["--node-id", "1", "--listen", "127.0.0.1:0", "--data-dir", str(tmp_path), "--kafka-listen", "[::1]:0"], {})
    assert config.kafka_listen is not None and (config.kafka_listen.host, config.kafka_listen.port) == ("::1", 0)
    with pytest.raises(BrokerConfigError, match="kafka.listen"):
        parse_arguments(["--node-id", "1", "--listen", "127.0.0.1:0", "--data-dir", str(tmp_path), "--kafka-listen", "nohost"], {})
    assert parse_arguments(["--node-id", "1", "--listen", "127.0.0.1:0", "--data-dir", str(tmp_path)], {}).kafka_listen is None


def test_make_up_gives_every_broker_a_kafka_listener_and_names_them_all(tmp_path: Path) -> None:
    settings = StackSettings.from_environment({"WEIR_DATA_DIR": str(tmp_path), "WEIR_BROKERS": "3"})
    assert settings.kafka_bootstrap_servers == "127.0.0.1:29092,127.0.0.1:29093,127.0.0.1:29094"
    _controllers, brokers, _control_plane = (stage.children for stage in startup_stages(settings, child_environment(settings, {})))
    assert [broker.command[broker.command.index("--kafka-listen") + 1] for broker in brokers] == settings.kafka_bootstrap_servers.split(",")
    moved = StackSettings.from_environment({"WEIR_DATA_DIR": str(tmp_path), "WEIR_KAFKA_BASE_PORT": "39092", "WEIR_BROKERS": "2"})
    assert moved.kafka_bootstrap_servers == "127.0.0.1:39092,127.0.0.1:39093"
    with pytest.raises(SystemExit, match="WEIR_BROKER_BASE_PORT and WEIR_KAFKA_BASE_PORT both give port 9093"):
        StackSettings.from_environment({"WEIR_DATA_DIR": str(tmp_path), "WEIR_KAFKA_BASE_PORT": "9093"})


@pytest.mark.django_db
def test_register_broker_command_takes_the_kafka_port() -> None:
    call_command("register_broker", "--node-id", "4", "--host", "h4", "--port", "9004", "--kafka-port", "19004", stdout=io.StringIO())
    assert BrokerNode.objects.get(node_id=4).kafka_port == 19004
    with pytest.raises(CommandError, match="Kafka port"):
        call_command("register_broker", "--node-id", "4", "--host", "h4", "--port", "9004", "--kafka-port", "-1", stdout=io.StringIO())

"""Brokers serving TLS replicate over TLS, verifying each other against --tls-ca."""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from broker_nodes import names
from broker_nodes.config import BrokerConfig, BrokerConfigError, load_broker_config
from broker_nodes.server.app import BrokerServer, start_broker_server
from broker_nodes.server.channels import open_internal_channel
from broker_nodes.server.main import parse_arguments
from deploy.tls import TlsFiles, ensure_local_certificates
from grpc_protos.weir.v1 import admin_pb2, admin_pb2_grpc, broker_pb2, broker_pb2_grpc, replication_pb2, replication_pb2_grpc
from tests.broker_nodes.replication.cluster import FAST_REPLICATION, wait_until
from tests.broker_nodes.security.managed_cluster import INTERNAL, INTERNAL_TOKEN, as_tenant, brokers
from tests.broker_nodes.server.helpers import batch
from weir.errors import ErrorCode

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="the test CA is made with the openssl command")

TENANT = "tn-tls"
TOPIC = "payments"
QUALIFIED = names.qualify(TENANT, TOPIC)


@pytest.fixture(scope="module")
def certificates(tmp_path_factory: pytest.TempPathFactory) -> TlsFiles:
    return ensure_local_certificates(tmp_path_factory.mktemp("ca") / "tls", ["127.0.0.1", "localhost"])


def tls_config(data_dir: Path, node_id: int, certificates: TlsFiles) -> BrokerConfig:
    return load_broker_config(
        node_id=node_id,
        listen="127.0.0.1:0",
        data_dir=data_dir,
        configs=[f"{key}={value}" for key, value in FAST_REPLICATION.items()],
        environment={"WEIR_INTERNAL_TOKEN": INTERNAL_TOKEN},
        tls_cert=certificates.certificate,
        tls_key=certificates.private_key,
        tls_ca=certificates.ca_certificate,
    )


@pytest.fixture
def tls_brokers(tmp_path: Path, certificates: TlsFiles) -> Iterator[dict[int, BrokerServer]]:
    running: dict[int, BrokerServer] = {}
    try:
        for node_id in (1, 2):
            running[node_id] = start_broker_server(tls_config(tmp_path / f"node-{node_id}", node_id, certificates))
        yield running
    finally:
        for server in running.values():
            server.stop(grace_seconds=1.0)


def test_tls_brokers_replicate_over_tls(tls_brokers: dict[int, BrokerServer]) -> None:
    leader, follower = tls_brokers[1], tls_brokers[2]
    request = admin_pb2.ApplyPartitionsRequest(
        version=1,
        cluster_id="tls-replication-test",
        brokers=brokers((1, leader.port), (2, follower.port)),
        topics=[
            admin_pb2.TopicAssignment(
                tenant_id=TENANT,
                name=TOPIC,
                topic_id=str(uuid.uuid4()),
                configs=[broker_pb2.TopicConfigEntry(name="min.insync.replicas", value="2")],
                partitions=[admin_pb2.PartitionAssignment(partition=0, leader_id=1, leader_epoch=1, replicas=[1, 2], isr=[1, 2])],
            )
        ],
    )
    channels = {node_id: open_internal_channel(f"127.0.0.1:{server.port}", server.broker.config) for node_id, server in tls_brokers.items()}
    try:
        for channel in channels.values():
            admin_pb2_grpc.AdminStub(channel).ApplyPartitions(request, metadata=INTERNAL, timeout=10)
        produce = broker_pb2.ProduceRequest(
            acks=-1,
            timeout_ms=5000,
            topics=[broker_pb2.ProduceTopicData(topic=TOPIC, partitions=[broker_pb2.ProducePartitionData(partition=0, records=batch([b"over", b"tls"]))])],
        )
        answer = broker_pb2_grpc.BrokerStub(channels[1]).Produce(produce, metadata=as_tenant(TENANT), timeout=15).topics[0].partitions[0]
    finally:
        for channel in channels.values():
            channel.close()
    # acks=all answered with min.insync.replicas=2: the follower fetched the batch over TLS.
    assert answer.error_code == ErrorCode.NO_ERROR, answer.error_message
    follower_log = follower.broker.log_manager.get_log(QUALIFIED, 0)
    leader_log = leader.broker.log_manager.get_log(QUALIFIED, 0)
    assert follower_log.log_end_offset == 2
    wait_until(lambda: follower_log.high_watermark == 2, what="the follower's high watermark")
    assert follower_log.read(0, 1 << 20, max_offset=2).records == leader_log.read(0, 1 << 20).records


def test_a_plaintext_internal_channel_cannot_reach_a_tls_broker(tls_brokers: dict[int, BrokerServer], tmp_path: Path) -> None:
    plaintext = load_broker_config(node_id=9, listen="127.0.0.1:0", data_dir=tmp_path / "plain")
    with open_internal_channel(f"127.0.0.1:{tls_brokers[1].port}", plaintext) as channel, pytest.raises(grpc.RpcError) as raised:
        replication_pb2_grpc.ReplicationStub(channel).ReplicaFetch(replication_pb2.ReplicaFetchRequest(replica_id=9), metadata=INTERNAL, timeout=3)
    assert raised.value.code() == grpc.StatusCode.UNAVAILABLE


def test_an_internal_channel_trusting_another_ca_refuses_the_broker(tls_brokers: dict[int, BrokerServer], tmp_path: Path) -> None:
    other_ca = ensure_local_certificates(tmp_path / "other-ca", ["127.0.0.1"]).ca_certificate
    stranger = load_broker_config(node_id=9, listen="127.0.0.1:0", data_dir=tmp_path / "stranger", tls_ca=other_ca)
    with open_internal_channel(f"127.0.0.1:{tls_brokers[1].port}", stranger) as channel, pytest.raises(grpc.RpcError) as raised:
        replication_pb2_grpc.ReplicationStub(channel).ReplicaFetch(replication_pb2.ReplicaFetchRequest(replica_id=9), metadata=INTERNAL, timeout=3)
    assert raised.value.code() == grpc.StatusCode.UNAVAILABLE


def test_a_tls_broker_without_a_ca_to_verify_its_peers_does_not_start(certificates: TlsFiles, tmp_path: Path) -> None:
    arguments = [
        "--node-id",
        "1",
        "--listen",
        "127.0.0.1:0",
        "--data-dir",
        str(tmp_path),
        "--tls-cert",
        str(certificates.certificate),
        "--tls-key",
        str(certificates.private_key),
    ]
    with pytest.raises(BrokerConfigError, match="a TLS broker needs --tls-ca to verify other brokers and the controller"):
        parse_arguments(arguments, {})
    with pytest.raises(BrokerConfigError, match="is not a readable file"):
        parse_arguments([*arguments, "--tls-ca", str(tmp_path / "missing.pem")], {})
    config = parse_arguments([*arguments, "--tls-ca", str(certificates.ca_certificate)], {})
    assert config.tls_ca == certificates.ca_certificate

"""In-process brokers run as the control plane runs them (internal token, security.required) and snapshot builders."""

from __future__ import annotations

import hashlib
import uuid
from pathlib import Path

import grpc

from broker_nodes.config import load_broker_config
from broker_nodes.server.app import BrokerServer, start_broker_server
from grpc_protos.weir.v1 import admin_pb2, admin_pb2_grpc, broker_pb2, broker_pb2_grpc

INTERNAL_TOKEN = "test-internal-token-0123456789"
FAST_CONFIGS = {"offsets.topic.num.partitions": "2"}


class SecuredBroker:
    """A running in-process broker with an Admin stub (internal token) and a way to call as any client."""

    def __init__(self, data_dir: Path, *, node_id: int = 1, security_required: bool = True) -> None:
        self.data_dir = data_dir
        self.node_id = node_id
        configs = {**FAST_CONFIGS, "security.required": "true" if security_required else "false"}
        self.config = load_broker_config(
            node_id=node_id,
            listen="127.0.0.1:0",
            data_dir=data_dir,
            configs=[f"{key}={value}" for key, value in configs.items()],
            environment={"WEIR_INTERNAL_TOKEN": INTERNAL_TOKEN},
        )
        self.running: BrokerServer | None = None
        self.channel: grpc.Channel | None = None
        self.throttle_delays: list[float] = []  # quota delays, recorded instead of slept

    def start(self) -> "SecuredBroker":
        self.running = start_broker_server(self.config, sleep=self.throttle_delays.append)
        self.channel = grpc.insecure_channel(f"127.0.0.1:{self.running.port}")
        return self

    @property
    def port(self) -> int:
        assert self.running is not None
        return self.running.port

    @property
    def broker(self):
        assert self.running is not None
        return self.running.broker

    @property
    def admin(self) -> admin_pb2_grpc.AdminStub:
        return admin_pb2_grpc.AdminStub(self.channel)

    @property
    def stub(self) -> broker_pb2_grpc.BrokerStub:
        return broker_pb2_grpc.BrokerStub(self.channel)

    def stop(self) -> None:
        if self.channel is not None:
            self.channel.close()
            self.channel = None
        if self.running is not None:
            self.running.stop(grace_seconds=1.0)
            self.running = None

    def restart(self) -> "SecuredBroker":
        self.stop()
        return self.start()


INTERNAL = (("x-weir-internal-token", INTERNAL_TOKEN),)


def as_key(key: str, secret: str) -> tuple[tuple[str, str], ...]:
    return (("x-weir-api-key", key), ("x-weir-api-secret", secret))


def as_tenant(tenant_id: str) -> tuple[tuple[str, str], ...]:
    return (("x-weir-internal-token", INTERNAL_TOKEN), ("x-weir-tenant", tenant_id))


def credential(key: str, secret: str, tenant_id: str, principal: str) -> admin_pb2.Credential:
    return admin_pb2.Credential(api_key=key, secret_sha256=hashlib.sha256(secret.encode()).hexdigest(), tenant_id=tenant_id, principal=principal)


def allow(tenant_id: str, principal: str, operation: int, name: str = "*", resource_type: int = admin_pb2.ACL_RESOURCE_TYPE_TOPIC, *, pattern: int = admin_pb2.ACL_PATTERN_TYPE_LITERAL, permission: int = admin_pb2.ACL_PERMISSION_ALLOW) -> admin_pb2.AclBinding:
    return admin_pb2.AclBinding(
        tenant_id=tenant_id, principal=principal, resource_type=resource_type, resource_name=name, pattern_type=pattern, operation=operation, permission=permission, host="*"
    )


def topic(tenant_id: str, name: str, *, partitions: int = 1, leaders: list[int] | None = None, topic_id: str | None = None, configs: dict[str, str] | None = None) -> admin_pb2.TopicAssignment:
    leaders = leaders or [1] * partitions
    return admin_pb2.TopicAssignment(
        tenant_id=tenant_id,
        name=name,
        topic_id=topic_id or str(uuid.uuid4()),
        configs=[broker_pb2.TopicConfigEntry(name=key, value=value) for key, value in (configs or {}).items()],
        partitions=[admin_pb2.PartitionAssignment(partition=index, leader_id=leader, leader_epoch=3, replicas=[leader], isr=[leader]) for index, leader in enumerate(leaders)],
    )


def brokers(*nodes: tuple[int, int]) -> list[broker_pb2.BrokerNode]:
    return [broker_pb2.BrokerNode(node_id=node_id, host="127.0.0.1", port=port) for node_id, port in nodes]

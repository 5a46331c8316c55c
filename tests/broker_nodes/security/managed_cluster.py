"""In-process brokers run as the control plane runs them (internal token, security.required) and snapshot builders."""

from __future__ import annotations

import hashlib
import time
import uuid
from pathlib import Path

from grpc_protos.weir.v1 import admin_pb2, admin_pb2_grpc, broker_pb2
from tests.support.in_process_broker import InProcessBroker
from weir import tenant_tokens

INTERNAL_TOKEN = "test-internal-token-0123456789"
FAST_CONFIGS = {"offsets.topic.num.partitions": "2"}


class SecuredBroker(InProcessBroker):
    """An in-process broker run as the control plane runs it (internal token,
    ``security.required``), with an Admin stub; quota delays are recorded, not slept."""

    def __init__(self, data_dir: Path, *, node_id: int = 1, security_required: bool = True) -> None:
        self.throttle_delays: list[float] = []
        super().__init__(
            data_dir,
            {**FAST_CONFIGS, "security.required": "true" if security_required else "false"},
            node_id=node_id,
            environment={"WEIR_INTERNAL_TOKEN": INTERNAL_TOKEN},
            sleep=self.throttle_delays.append,
        )

    @property
    def admin(self) -> admin_pb2_grpc.AdminStub:
        return admin_pb2_grpc.AdminStub(self.channel)


INTERNAL = (("x-weir-internal-token", INTERNAL_TOKEN),)


def as_key(key: str, secret: str) -> tuple[tuple[str, str], ...]:
    return (("x-weir-api-key", key), ("x-weir-api-secret", secret))


def tenant_token(tenant_id: str, *, now_ms: int | None = None, lifetime_ms: int = tenant_tokens.MAX_LIFETIME_MS) -> str:
    """A tenant token these brokers accept (the control plane's credential acting as ``tenant_id``).

    The longest lifetime by default, so that no test outlives its credential.
    """
    key = tenant_tokens.derive_key(INTERNAL_TOKEN)
    return tenant_tokens.mint(key, tenant_id, now_ms=time.time_ns() // 1_000_000 if now_ms is None else now_ms, lifetime_ms=lifetime_ms)


def as_tenant(tenant_id: str) -> tuple[tuple[str, str], ...]:
    """Call metadata of the control plane acting as ``tenant_id`` (a tenant token)."""
    return ((tenant_tokens.TENANT_TOKEN_HEADER, tenant_token(tenant_id)),)


def credential(key: str, secret: str, tenant_id: str, principal: str) -> admin_pb2.Credential:
    return admin_pb2.Credential(api_key=key, secret_sha256=hashlib.sha256(secret.encode()).hexdigest(), tenant_id=tenant_id, principal=principal)


def allow(
    tenant_id: str,
    principal: str,
    operation: int,
    name: str = "*",
    resource_type: int = admin_pb2.ACL_RESOURCE_TYPE_TOPIC,
    *,
    pattern: int = admin_pb2.ACL_PATTERN_TYPE_LITERAL,
    permission: int = admin_pb2.ACL_PERMISSION_ALLOW,
) -> admin_pb2.AclBinding:
    return admin_pb2.AclBinding(
        tenant_id=tenant_id,
        principal=principal,
        resource_type=resource_type,
        resource_name=name,
        pattern_type=pattern,
        operation=operation,
        permission=permission,
        host="*",
    )


def topic(
    tenant_id: str, name: str, *, partitions: int = 1, leaders: list[int] | None = None, topic_id: str | None = None, configs: dict[str, str] | None = None
) -> admin_pb2.TopicAssignment:
    leaders = leaders or [1] * partitions
    return admin_pb2.TopicAssignment(
        tenant_id=tenant_id,
        name=name,
        topic_id=topic_id or str(uuid.uuid4()),
        configs=[broker_pb2.TopicConfigEntry(name=key, value=value) for key, value in (configs or {}).items()],
        partitions=[
            admin_pb2.PartitionAssignment(partition=index, leader_id=leader, leader_epoch=3, replicas=[leader], isr=[leader])
            for index, leader in enumerate(leaders)
        ],
    )


def brokers(*nodes: tuple[int, int]) -> list[broker_pb2.BrokerNode]:
    return [broker_pb2.BrokerNode(node_id=node_id, host="127.0.0.1", port=port) for node_id, port in nodes]

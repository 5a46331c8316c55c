"""Three broker processes replicating topics without the control plane: a quick stand for the replication benchmarks.

``ReplicatedBrokers`` starts brokers 1, 2 and 3 (``python -m broker_nodes``, each with its own
interpreter, as in production) with an internal token and ``security.required``, and then plays
the control plane's part itself through their Admin services, as ``bench.flood`` does for one
broker: one cluster key for one tenant (``ApplySecurity``), and a cluster map (``ApplyPartitions``)
with the topics :meth:`ReplicatedBrokers.create_topic` adds, each partition led by broker 1.
Creating a topic pushes the map to the followers first and to the leader last, so that the
followers' first fetches can meet a leader that does not lead the partition yet, as they may
when the control plane's pushes arrive in any order. No controller runs: the ISR stays what the
map says unless the leader shrinks it.

Starting it takes a few seconds instead of a whole ``make up`` stack's half minute, so that
A/B pairs of a replication change can run back to back.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping
from types import TracebackType

import grpc

from bench.broker_launcher import LOOPBACK, LocalBroker
from bench.tenant_access import TenantKey, every_topic_request
from grpc_protos.weir.v1 import admin_pb2, admin_pb2_grpc, broker_pb2

INTERNAL_TOKEN = "bench-replication-internal-token"
TENANT = "tn-benchrepl"
PRINCIPAL = "User:sa-benchrepl"
API_KEY = "BENCHREPLKEY"
API_SECRET = "bench-replication-secret"
NODE_IDS = (1, 2, 3)
LEADER = 1
ADMIN_TIMEOUT_SECONDS = 30.0
DEFAULT_BROKER_CONFIGS = {"security.required": "true", "offsets.topic.num.partitions": "1"}


class ReplicatedBroker(LocalBroker):
    """One broker of the three: its own node id, the internal token, ``configs`` on its command line."""

    def __init__(self, node_id: int, configs: Mapping[str, str]) -> None:
        super().__init__()
        self.node_id = node_id
        self.configs = dict(configs)
        self.token_path = self.directory / "internal-token"

    def command(self) -> list[str]:
        self.token_path.write_text(INTERNAL_TOKEN, encoding="utf-8")
        self.token_path.chmod(0o600)
        options = [part for key, value in self.configs.items() for part in ("--config", f"{key}={value}")]
        return [
            sys.executable,
            "-m",
            "broker_nodes",
            "--node-id",
            str(self.node_id),
            "--listen",
            self.address,
            "--data-dir",
            str(self.data_directory),
            "--internal-token-file",
            str(self.token_path),
            *options,
        ]


class ReplicatedBrokers:
    """Brokers 1..3 with a tenant key and the topics created so far; a context manager (stops and removes them on exit).

    ``environment``: extra environment variables of every broker process.
    """

    def __init__(self, configs: Mapping[str, str] | None = None, environment: Mapping[str, str] | None = None) -> None:
        self._configs = {**DEFAULT_BROKER_CONFIGS, **(configs or {})}
        self._environment = dict(environment or {})
        self.brokers: dict[int, ReplicatedBroker] = {}
        self._topics: list[admin_pb2.TopicAssignment] = []
        self._version = 0

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(broker.address for broker in self.brokers.values())

    def client_config(self) -> dict[str, str]:
        """The SDK settings that reach these brokers with the tenant's key."""
        return {"bootstrap.servers": self.bootstrap_servers, "sasl.username": API_KEY, "sasl.password": API_SECRET}

    def pid(self, node_id: int) -> int:
        return self.brokers[node_id].pid

    def start(self) -> ReplicatedBrokers:
        saved = {name: os.environ.get(name) for name in self._environment}
        os.environ.update(self._environment)  # LocalBroker starts its process with this process's environment
        try:
            for node_id in NODE_IDS:
                self.brokers[node_id] = ReplicatedBroker(node_id, self._configs).start()
        except BaseException:
            self.stop()
            raise
        finally:
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value
        for broker in self.brokers.values():
            self._apply_security(broker.address)
        return self

    def create_topic(self, name: str, *, replication_factor: int = 3, configs: Mapping[str, str] | None = None) -> None:
        """Add a one-partition topic led by broker 1 (replicas 1..``replication_factor``, all in the ISR): followers first, the leader last."""
        replicas = list(NODE_IDS[:replication_factor])
        self._topics.append(
            admin_pb2.TopicAssignment(
                tenant_id=TENANT,
                name=name,
                topic_id=f"bench-{name}",
                configs=[broker_pb2.TopicConfigEntry(name=key, value=value) for key, value in (configs or {}).items()],
                partitions=[admin_pb2.PartitionAssignment(partition=0, leader_id=LEADER, leader_epoch=1, replicas=replicas, isr=replicas)],
            )
        )
        self._version += 1
        request = admin_pb2.ApplyPartitionsRequest(
            version=self._version,
            cluster_id="bench-replication",
            brokers=[broker_pb2.BrokerNode(node_id=node_id, host=LOOPBACK, port=broker.port) for node_id, broker in self.brokers.items()],
            topics=self._topics,
        )
        for node_id in sorted(self.brokers, key=lambda node_id: node_id == LEADER):
            self._admin_call(self.brokers[node_id].address, lambda admin: admin.ApplyPartitions(request, metadata=_INTERNAL, timeout=ADMIN_TIMEOUT_SECONDS))

    def stop(self) -> None:
        for broker in self.brokers.values():
            broker.stop()

    def _apply_security(self, address: str) -> None:
        request = every_topic_request([TenantKey(TENANT, PRINCIPAL, API_KEY, API_SECRET)])
        self._admin_call(address, lambda admin: admin.ApplySecurity(request, metadata=_INTERNAL, timeout=ADMIN_TIMEOUT_SECONDS))

    @staticmethod
    def _admin_call(address: str, call: Callable[[admin_pb2_grpc.AdminStub], object]) -> None:
        with grpc.insecure_channel(address) as channel:
            call(admin_pb2_grpc.AdminStub(channel))

    def __enter__(self) -> ReplicatedBrokers:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None) -> None:
        self.stop()


_INTERNAL = (("x-weir-internal-token", INTERNAL_TOKEN),)

"""A real Weir cluster for failover tests: the controller and the brokers as processes.

The controller (``manage.py run_controller``) keeps its catalog in the test's own database,
so the test needs ``@pytest.mark.django_db(transaction=True)`` (the subprocesses see only
committed rows) and PostgreSQL (they cannot reach SQLite's in-memory test database). Brokers
run managed (``security.required``, the internal token) and register with the controller
themselves; the controller fences a broker whose session expires and elects new leaders.

:class:`RealCluster` starts everything, creates a tenant with a cluster API key and ACLs
through the control plane's own actions, creates topics with the SDK's AdminClient (the
broker forwards it to the controller), and offers the faults the tests inject: ``kill``
(kill -9), ``sigstop``/``sigcont``, ``terminate`` (SIGTERM: controlled shutdown), ``start_broker``.
Every wait is bounded (:meth:`RealCluster.wait_until`) and, when it runs out, fails with the
tail of every process's log. ``close`` ends every process, also after a failure.

Not thread-safe: one test thread drives a cluster (SDK clients may run in other threads).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar
from urllib.parse import quote

import grpc
from django.conf import settings
from django.db import connection

from deploy.processes import grpc_health_serving
from grpc_protos.weir.v1 import admin_pb2, broker_pb2_grpc
from log_formats.log_files import LOG_SUFFIX, parse_segment_file_name, partition_directory_name
from server_runtime.lifeline import spawn
from tests.support.processes import LOOPBACK, BrokerProcess, free_port
from webapp.accounts.actions.keys import check_create_key, do_create_key
from webapp.accounts.actions.service_accounts import do_create_service_account
from webapp.accounts.actions.signup import do_sign_up
from webapp.accounts.identity import Actor
from webapp.accounts.models import ApiKeyKind, Role
from webapp.catalog.actions.acls import check_create_acl, do_create_acl
from webapp.catalog.models import CLUSTER_RESOURCE_NAME, Operation, Partition, PatternType, Permission, ResourceType, Topic
from webapp.fleet.models import BrokerNode, BrokerState
from webapp.provisioning.broker_client import BrokerAddress, BrokerAdminClient, BrokerCallError
from webapp.provisioning.models import SnapshotKind
from webapp.provisioning.push import push_snapshots, push_targets
from webapp.provisioning.snapshots import build_snapshots
from weir.admin import AdminClient, NewTopic
from weir.records import iter_records

REPOSITORY_ROOT = Path(__file__).resolve().parents[2]
CONTROLLER_START_SECONDS = 60.0  # Django start-up, migrations check, taking the controller lock
BROKER_START_SECONDS = 30.0  # log recovery of a killed broker included
STOP_SECONDS = 15.0  # a SIGTERM gets this long before SIGKILL
POLL_SECONDS = 0.05  # how often wait_until asks again
LOG_TAIL_LINES = 40  # lines of each process's log in a failure message
# Refused at once, so that the controller's settings fall back to Celery's filesystem
# transport in its own directory instead of queueing jobs nobody runs into a shared Redis.
UNREACHABLE_REDIS_URL = "redis://127.0.0.1:1/0"

Value = TypeVar("Value")


class ClusterUnavailableError(RuntimeError):
    """The cluster cannot run here (no PostgreSQL) or did not come up; the message says why."""


@dataclass(frozen=True)
class ClusterTimings:
    """How fast the cluster notices failures; every value is a Kafka setting of the same name.

    ``session_timeout_ms`` is the controller's broker.session.timeout.ms: a killed broker's
    leaderships move after about this long (plus the controller's one-second check).
    """

    session_timeout_ms: int = 2000
    heartbeat_interval_ms: int = 200
    replica_lag_time_max_ms: int = 2000
    # Kafka's default: a follower's fetch waits at the leader until records arrive (which wakes it at once) or this
    # long. At 100 ms an idle three-broker cluster used a quarter of a core on empty fetches (8 s of CPU in 30 s).
    replica_fetch_wait_max_ms: int = 500
    replica_fetch_backoff_ms: int = 200
    controlled_shutdown_timeout_ms: int = 10000

    def broker_configs(self) -> dict[str, str]:
        return {
            "broker.heartbeat.interval.ms": str(self.heartbeat_interval_ms),
            "replica.lag.time.max.ms": str(self.replica_lag_time_max_ms),
            "replica.fetch.wait.max.ms": str(self.replica_fetch_wait_max_ms),
            "replica.fetch.backoff.ms": str(self.replica_fetch_backoff_ms),
            "controlled.shutdown.timeout.ms": str(self.controlled_shutdown_timeout_ms),
        }


@dataclass(frozen=True)
class TenantAccess:
    """A tenant's service account with a cluster API key and the ACLs to do anything."""

    tenant_id: str
    principal: str
    api_key: str
    api_secret: str


@dataclass(frozen=True)
class ReplicaLog:
    """One replica's records of one partition as its files hold them: offset -> value."""

    node_id: int
    values: dict[int, bytes | None] = field(default_factory=dict)

    @property
    def end_offset(self) -> int:
        return max(self.values) + 1 if self.values else 0


def database_url_for_subprocesses() -> str:
    """A DATABASE_URL naming the test's own PostgreSQL database, for subprocesses.

    Raises ClusterUnavailableError on SQLite: another process cannot open its in-memory test database.
    """
    if connection.vendor != "postgresql":
        raise ClusterUnavailableError("a real cluster needs the control plane on PostgreSQL (its processes share the test database)")
    database = connection.settings_dict
    user = quote(database.get("USER") or "", safe="")
    password = quote(database.get("PASSWORD") or "", safe="")
    credentials = f"{user}:{password}@" if password else (f"{user}@" if user else "")
    host = database.get("HOST") or LOOPBACK
    port = database.get("PORT") or "5432"
    return f"postgres://{credentials}{host}:{port}/{quote(database['NAME'], safe='')}"


def _tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    try:
        text = path.read_text(errors="replace")
    except FileNotFoundError:
        return "(no log)"
    return "\n".join(text.splitlines()[-lines:])


class ControllerProcess:
    """``python manage.py run_controller --listen 127.0.0.1:PORT`` on the test's database."""

    def __init__(self, directory: Path, environment: dict[str, str], *, port: int | None = None) -> None:
        self.directory = directory
        self.port = port or free_port()
        self.environment = {**environment, "WEIR_DATA_DIR": str(directory / "data")}
        self.log_path = directory / "controller.log"
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def address(self) -> str:
        return f"{LOOPBACK}:{self.port}"

    def start(self, timeout: float = CONTROLLER_START_SECONDS) -> None:
        """Start it and wait until it is the active controller (it took the controller lock)."""
        self.directory.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as log:
            # spawn: the controller ends with the test run, even after a kill -9 of pytest.
            self.process = spawn(
                [sys.executable, "manage.py", "run_controller", "--listen", self.address],
                cwd=REPOSITORY_ROOT,
                env=self.environment,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + timeout
        active = grpc_health_serving(self.address, "weir.v1.Controller")  # a standby listens but answers NOT_SERVING
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise ClusterUnavailableError(f"the controller exited with code {self.process.returncode}:\n{_tail(self.log_path)}")
            if active():
                return
            time.sleep(0.1)
        self.stop()
        raise ClusterUnavailableError(f"the controller did not serve on {self.address} within {timeout:.0f} s:\n{_tail(self.log_path)}")

    def stop(self, timeout: float = STOP_SECONDS) -> None:
        """SIGTERM (it releases the lock and its database connections), SIGKILL after ``timeout``."""
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)

    def log_tail(self) -> str:
        return _tail(self.log_path)


class RealCluster:
    """A controller and ``broker_count`` brokers (node ids 1..n) under ``root``; see the module docstring."""

    def __init__(self, root: Path, *, broker_count: int = 3, timings: ClusterTimings = ClusterTimings()) -> None:
        self.root = Path(root)
        self.timings = timings
        self.internal_token = settings.WEIR_INTERNAL_TOKEN
        environment = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "webapp.settings",
            "DATABASE_URL": database_url_for_subprocesses(),
            "WEIR_INTERNAL_TOKEN": self.internal_token,
            "WEIR_BROKER_SESSION_TIMEOUT_MS": str(timings.session_timeout_ms),
            # Small internal topics: every broker creates and replicates them.
            "WEIR_OFFSETS_TOPIC_NUM_PARTITIONS": "3",
            "WEIR_TRANSACTION_STATE_TOPIC_NUM_PARTITIONS": "3",
            "WEIR_USAGE_TOPIC_NUM_PARTITIONS": "1",
            # Leaders move only when a test makes them move.
            "WEIR_AUTO_LEADER_REBALANCE_ENABLE": "false",
            "REDIS_URL": UNREACHABLE_REDIS_URL,
            "WEIR_QUIET_TRANSPORT_NOTICE": "1",
            "PYTHONUNBUFFERED": "1",
        }
        self.controller = ControllerProcess(self.root / "controller", environment)
        configs = {
            "security.required": "true",
            "controller.quorum.bootstrap.servers": self.controller.address,
            "num.io.threads": "4",
            **timings.broker_configs(),
        }
        self.brokers: dict[int, BrokerProcess] = {
            node_id: BrokerProcess(self.root / f"broker-{node_id}" / "data", node_id=node_id, configs=configs, env={"WEIR_INTERNAL_TOKEN": self.internal_token})
            for node_id in range(1, broker_count + 1)
        }
        self._paused: set[int] = set()
        self.access: TenantAccess | None = None

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> RealCluster:
        """Controller first, then every broker (in parallel); returns once all are registered and ONLINE."""
        self.controller.start()
        with ThreadPoolExecutor(max_workers=len(self.brokers)) as pool:
            failures = [error for error in pool.map(self._start_broker_process, self.brokers.values()) if error is not None]
        if failures:
            raise AssertionError("\n".join(failures) + "\n" + self.log_tails())
        self.wait_until(lambda: self.online_nodes() == set(self.brokers), "every broker registered with the controller and ONLINE")
        return self

    @staticmethod
    def _start_broker_process(broker: BrokerProcess) -> str | None:
        try:
            broker.start(BROKER_START_SECONDS)
        except RuntimeError as error:
            return str(error)
        return None

    def close(self) -> None:
        """End every process (brokers by kill -9: the test is over), the controller last. Never raises."""
        for node_id in list(self._paused):
            self.sigcont(node_id)
        for broker in self.brokers.values():
            try:
                broker.kill()
            except Exception:  # noqa: BLE001 - teardown ends the others whatever happens to one
                pass
        self.controller.stop()

    # ------------------------------------------------------------------ faults

    def kill(self, node_id: int) -> None:
        """kill -9 broker ``node_id``."""
        self.brokers[node_id].kill()

    def terminate(self, node_id: int, timeout: float = STOP_SECONDS + 10) -> int | None:
        """SIGTERM broker ``node_id`` (controlled shutdown, then a clean stop); its exit code."""
        return self.brokers[node_id].stop(timeout)

    def start_broker(self, node_id: int) -> None:
        """Start broker ``node_id`` again on its port and data directory; returns once it serves."""
        broker = self.brokers[node_id]
        if broker.is_running():
            raise AssertionError(f"broker {node_id} is already running")
        failure = self._start_broker_process(broker)
        if failure is not None:
            raise AssertionError(f"{failure}\n{self.log_tails()}")

    def sigstop(self, node_id: int) -> None:
        """Freeze broker ``node_id`` (SIGSTOP): it neither answers, fetches nor heartbeats."""
        process = self.brokers[node_id].process
        assert process is not None and process.poll() is None, f"broker {node_id} is not running"
        process.send_signal(signal.SIGSTOP)
        self._paused.add(node_id)

    def sigcont(self, node_id: int) -> None:
        process = self.brokers[node_id].process
        if process is not None and process.poll() is None:
            process.send_signal(signal.SIGCONT)
        self._paused.discard(node_id)

    def running_nodes(self) -> set[int]:
        return {node_id for node_id, broker in self.brokers.items() if broker.is_running()}

    # ------------------------------------------------------------------ waiting and diagnostics

    def wait_until(self, condition: Callable[[], Value], what: str, timeout: float = 30.0) -> Value:
        """Poll ``condition`` until it returns something truthy (returned); AssertionError
        naming ``what``, with every process's log tail, after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        last_problem = ""
        while True:
            try:
                value = condition()
                if value:
                    return value
            except (BrokerCallError, grpc.RpcError) as error:
                last_problem = f" (last error: {error})"
            if time.monotonic() >= deadline:
                raise AssertionError(f"not within {timeout:.0f} s: {what}{last_problem}\n{self.log_tails()}")
            time.sleep(POLL_SECONDS)

    def log_tails(self) -> str:
        """The last lines of the controller's and every broker's log."""
        parts = [f"----- controller ({self.controller.log_path})\n{self.controller.log_tail()}"]
        for node_id, broker in self.brokers.items():
            state = "running" if broker.is_running() else f"exited {broker.process.returncode if broker.process else '-'}"
            parts.append(f"----- broker {node_id} at {broker.address}, {state} ({broker.log_path})\n{_tail(broker.log_path)}")
        return "\n".join(parts)

    # ------------------------------------------------------------------ the control plane's view

    def online_nodes(self) -> set[int]:
        """Brokers the catalog shows ONLINE (registered, session alive)."""
        return set(BrokerNode.objects.filter(state=BrokerState.ONLINE).values_list("node_id", flat=True))

    def broker_state(self, node_id: int) -> str | None:
        return BrokerNode.objects.filter(node_id=node_id).values_list("state", flat=True).first()

    def _topic(self, name: str) -> Topic:
        assert self.access is not None, "create_tenant() first"
        return Topic.objects.get(tenant__public_id=self.access.tenant_id, name=name)

    def partition_row(self, topic: str, partition: int) -> Partition:
        """The controller's record of a partition (leader, leader epoch, ISR, replicas)."""
        return Partition.objects.get(topic=self._topic(topic), index=partition)

    def leader_of(self, topic: str, partition: int) -> int:
        """The partition's leader in the catalog; -1 when offline."""
        return self.partition_row(topic, partition).leader

    def partition_rows(self, topic: str) -> list[Partition]:
        return list(Partition.objects.filter(topic=self._topic(topic)).order_by("index"))

    def internal_partition_rows(self, name: str) -> list[Partition]:
        """The controller's record of an internal topic's partitions (``__consumer_offsets``...)."""
        return list(Partition.objects.filter(topic__tenant__isnull=True, topic__name=name).order_by("index"))

    def qualified(self, topic: str) -> str:
        """The name brokers keep the tenant's topic under (``tenant~name``)."""
        assert self.access is not None, "create_tenant() first"
        return f"{self.access.tenant_id}~{topic}"

    # ------------------------------------------------------------------ the brokers' view

    def describe(self, node_id: int) -> admin_pb2.DescribeStateResponse:
        """DescribeState of broker ``node_id`` (Admin service, internal token)."""
        broker = self.brokers[node_id]
        with BrokerAdminClient(BrokerAddress(node_id, broker.address), token=self.internal_token, timeout_seconds=3.0) as client:
            return client.describe_state()

    def hosted(self, node_id: int, topic: str) -> dict[int, admin_pb2.HostedPartition]:
        """Partition -> what broker ``node_id`` reports of it, for the tenant's ``topic``."""
        assert self.access is not None, "create_tenant() first"
        return {entry.partition: entry for entry in self.describe(node_id).partitions if entry.tenant_id == self.access.tenant_id and entry.topic == topic}

    def call_broker(self, node_id: int, method: str, request: object, timeout: float = 5.0) -> object:
        """One Broker-service call to broker ``node_id`` with the tenant's cluster key (no SDK:
        the answer of exactly that broker)."""
        assert self.access is not None, "create_tenant() first"
        metadata = (("x-weir-api-key", self.access.api_key), ("x-weir-api-secret", self.access.api_secret))
        with grpc.insecure_channel(self.brokers[node_id].address) as channel:
            return getattr(broker_pb2_grpc.BrokerStub(channel), method)(request, timeout=timeout, metadata=metadata)

    def replica_logs(self, topic: str, partition: int, nodes: Iterable[int] | None = None) -> list[ReplicaLog]:
        """Every record of one partition as each replica's segment files hold it.

        Read from the files directly (the broker may be running; only complete batches are
        read), so a comparison sees exactly what each replica stored.
        """
        directory_name = partition_directory_name(self.qualified(topic), partition)
        logs = []
        for node_id in sorted(nodes if nodes is not None else self.brokers):
            directory = self.brokers[node_id].data_dir / directory_name
            replica = ReplicaLog(node_id)
            segments = sorted((parsed[0], path) for path in directory.glob(f"*{LOG_SUFFIX}") if (parsed := parse_segment_file_name(path.name)) is not None)
            for _, path in segments:
                for record in iter_records(path.read_bytes()):
                    replica.values[record.offset] = record.value
            logs.append(replica)
        return logs

    # ------------------------------------------------------------------ tenant and topics

    def create_tenant(self, name: str = "Jepsen") -> TenantAccess:
        """A tenant whose service account may do anything with topics and groups, its cluster
        key, all pushed to the brokers (security and partitions snapshots)."""
        signed_up = do_sign_up(f"owner-{name.lower()}", f"owner-{name.lower()}@example.com", "a-long-enough-password-1", name)
        owner = Actor(tenant=signed_up.tenant, role=signed_up.membership.role, membership=signed_up.membership)
        account = do_create_service_account(owner, "app", "", Role.DEVELOPER)
        created = do_create_key(owner, ApiKeyKind.CLUSTER, check_create_key(owner, ApiKeyKind.CLUSTER, account.public_id, ""), "")
        for resource_type, resource_name in ((ResourceType.TOPIC, "*"), (ResourceType.GROUP, "*"), (ResourceType.CLUSTER, CLUSTER_RESOURCE_NAME)):
            binding = check_create_acl(
                owner,
                resource_type=resource_type,
                resource_name=resource_name,
                pattern_type=PatternType.LITERAL,
                principal=account.principal,
                host="*",
                operation=Operation.ALL,
                permission=Permission.ALLOW,
            )
            do_create_acl(owner, binding)
        self.push_snapshots()
        self.access = TenantAccess(signed_up.tenant.public_id, account.principal, created.key.key_id, created.secret)
        return self.access

    def push_snapshots(self) -> None:
        """Push the security and partitions snapshots to every broker not known to be down
        (what a provisioning job does; these tests run no Celery worker)."""
        failures = push_snapshots(build_snapshots([SnapshotKind.PARTITIONS, SnapshotKind.SECURITY]), push_targets())
        assert not failures, f"snapshot push failed: {failures}\n{self.log_tails()}"

    def bootstrap_servers(self, nodes: Iterable[int] | None = None) -> str:
        return ",".join(self.brokers[node_id].address for node_id in (nodes if nodes is not None else self.brokers))

    def kafka_bootstrap_servers(self) -> str:
        """Every broker's Kafka-protocol listener, as a stock Kafka client's bootstrap list."""
        return ",".join(broker.kafka_address for broker in self.brokers.values())

    def kafka_client_config(self, **overrides: object) -> dict[str, object]:
        """A stock Kafka client's (librdkafka's) configuration: the tenant's cluster key over SASL PLAIN."""
        assert self.access is not None, "create_tenant() first"
        return {
            "bootstrap.servers": self.kafka_bootstrap_servers(),
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN",
            "sasl.username": self.access.api_key,
            "sasl.password": self.access.api_secret,
            **overrides,
        }

    def client_config(self, **overrides: object) -> dict[str, object]:
        """SDK configuration with the tenant's cluster key and every broker as bootstrap."""
        assert self.access is not None, "create_tenant() first"
        return {
            "bootstrap.servers": self.bootstrap_servers(),
            "sasl.username": self.access.api_key,
            "sasl.password": self.access.api_secret,
            **overrides,
        }

    def create_topic(self, name: str, partitions: int, replication_factor: int, configs: dict[str, str] | None = None, timeout: float = 30.0) -> None:
        """Create a topic with the SDK's AdminClient (forwarded by a broker to the controller)
        and wait until every replica hosts every partition and each has its leader."""
        admin = AdminClient(self.client_config())
        futures = admin.create_topics(
            [NewTopic(name, num_partitions=partitions, replication_factor=replication_factor, config=configs or {})], request_timeout=timeout
        )
        futures[name].result(timeout=timeout)
        rows = self.wait_until(lambda: len(self.partition_rows(name)) == partitions and self.partition_rows(name), f"topic {name} in the catalog", timeout)

        def every_replica_ready() -> bool:
            reports = {node_id: self.hosted(node_id, name) for node_id in {node_id for row in rows for node_id in row.replicas}}
            hosting = all(row.index in reports[node_id] and reports[node_id][row.index].leader_id == row.leader for row in rows for node_id in row.replicas)
            # Only the leader reports a leader epoch (followers say -1).
            return hosting and all(reports[row.leader][row.index].is_leader and reports[row.leader][row.index].leader_epoch == row.leader_epoch for row in rows)

        self.wait_until(every_replica_ready, f"every replica of {name} hosting its partitions with the catalog's leader", timeout)

    def wait_for_full_isr(self, topic: str, timeout: float = 30.0) -> list[Partition]:
        """Until every partition of ``topic`` has a leader and all its replicas in the catalog's ISR."""

        def full() -> list[Partition] | None:
            rows = self.partition_rows(topic)
            return rows if all(row.leader != -1 and sorted(row.isr) == sorted(row.replicas) for row in rows) else None

        return self.wait_until(full, f"every partition of {topic} led with its full ISR", timeout)

    def wait_for_replicas_in_sync(self, topic: str, timeout: float = 30.0) -> dict[int, int]:
        """Until, for each partition, the catalog's leader leads it with a high watermark at
        its log end offset and every replica reports that log end offset; partition -> that offset."""

        def in_sync() -> dict[int, int] | None:
            rows = self.partition_rows(topic)
            if any(row.leader == -1 for row in rows):
                return None
            reports = {node_id: self.hosted(node_id, topic) for node_id in {node_id for row in rows for node_id in row.replicas}}
            ends: dict[int, int] = {}
            for row in rows:
                leader = reports[row.leader].get(row.index)
                if leader is None or not leader.is_leader or leader.high_watermark != leader.log_end_offset:
                    return None
                if any(row.index not in reports[node_id] or reports[node_id][row.index].log_end_offset != leader.log_end_offset for node_id in row.replicas):
                    return None
                ends[row.index] = leader.log_end_offset
            return ends

        return self.wait_until(in_sync, f"every replica of {topic} at its leader's log end offset and high watermark", timeout)

"""One broker: its components wired together, started and shut down in order.

A broker is standalone until the control plane's first ``ApplyPartitions`` makes it managed
(see ``broker_nodes.cluster_state``); security snapshots (``ApplySecurity``) feed the
authenticator, the ACLs and the quotas.
"""

from __future__ import annotations

import base64
import logging
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TypedDict

import grpc

from broker_nodes.clock import SYSTEM_CLOCK, Clock
from broker_nodes.cluster_state import BrokerEndpoint, ClusterSnapshot, ClusterState, StaleSnapshotError
from broker_nodes.config import BrokerConfig
from broker_nodes.controller_client import ControllerClient
from broker_nodes.coordinator.groups.classic import ClassicSettings
from broker_nodes.coordinator.groups.coordinator import TIMER_INTERVAL_SECONDS, GroupCoordinator
from broker_nodes.coordinator.groups.group import GroupSettings
from broker_nodes.coordinator.offset_store import OFFSETS_TOPIC, OffsetStore
from broker_nodes.coordinator.transactions.coordinator import TRANSACTION_STATE_TOPIC, TransactionCoordinator, TransactionSettings
from broker_nodes.coordinator.transactions.marker_appender import MarkerAppender
from broker_nodes.coordinator.transactions.marker_router import MarkerRouter
from broker_nodes.coordinator.transactions.verification import TransactionVerifier
from broker_nodes.metering import Metering
from broker_nodes.metering.partition_stats import led_partition_stats
from broker_nodes.producer_ids import ProducerIdManager
from broker_nodes.replica_manager import ReplicaManager
from broker_nodes.replication.alter_partition import AlterPartitionSender
from broker_nodes.replication.follower import FetcherSettings
from broker_nodes.replication.isr import IsrChangeCallback
from broker_nodes.replication.manager import ReplicationManager, ReplicationSettings
from broker_nodes.schema_ids import SchemaIdCache, controller_schema_lookup
from broker_nodes.security.authenticator import Authenticator
from broker_nodes.security.quotas import QuotaManager
from broker_nodes.security.snapshot import SecuritySnapshot, SecurityStore
from broker_nodes.server.channels import open_internal_channel
from broker_nodes.server.fetch_purgatory import FetchPurgatory
from broker_nodes.server.open_streams import OpenStreams
from broker_nodes.server.periodic import PeriodicTask
from broker_nodes.server.topic_admin import ManagedTopicsChange, TopicAdmin
from broker_nodes.storage.atomic_files import write_atomically
from broker_nodes.storage.log_manager import LogManager, RecoveryReport
from broker_nodes.topic_registry import TopicMetadata, TopicRegistry

logger = logging.getLogger(__name__)

REPLICATION_WAITERS_PER_IO_THREAD = 4
LEADERSHIP_HANDOVER_MAX_SECONDS = 5.0  # the longest a broker in controlled shutdown waits for that map
LEADERSHIP_HANDOVER_POLL_SECONDS = 0.05  # how often a broker in controlled shutdown checks for the map that moved its leaderships
META_PROPERTIES_FILE_NAME = "meta.properties"  # in the data directory: cluster id and node id, as Kafka keeps them
IDLE_STREAM_CHECK_SECONDS = 30.0  # the longest between two checks for request streams idle past connections.max.idle.ms


class _IsrChangeOptions(TypedDict, total=False):
    """ReplicationManager's ISR-change arguments, given only when a controller confirms ISR changes."""

    on_isr_change: IsrChangeCallback
    confirm_isr_changes: bool


class DataDirectoryMismatchError(RuntimeError):
    """The data directory belongs to another node id than the one this broker was started with."""

    retriable = False

    def __init__(self, path: Path, stored_node_id: str, node_id: int) -> None:
        super().__init__(f"{path} belongs to node {stored_node_id}, not to node {node_id}; use its own data directory per node")
        self.path = path
        self.stored_node_id = stored_node_id
        self.node_id = node_id


def load_or_create_cluster_id(data_dir: Path, node_id: int) -> str:
    """The cluster id recorded in ``meta.properties``; a new one (Kafka's 22-character form) the first time."""
    path = data_dir / META_PROPERTIES_FILE_NAME
    try:
        properties = dict(line.split("=", 1) for line in path.read_text(encoding="utf-8").splitlines() if "=" in line and not line.startswith("#"))
    except FileNotFoundError:
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode("ascii").rstrip("=")
        write_atomically(path, f"version=1\ncluster.id={cluster_id}\nnode.id={node_id}\n".encode())
        return cluster_id
    if properties.get("node.id", str(node_id)) != str(node_id):
        raise DataDirectoryMismatchError(path, properties["node.id"], node_id)
    return properties["cluster.id"]


class StaleControllerEpochError(StaleSnapshotError):
    """A cluster map from a controller older than the newest one seen: a deposed controller (FAILED_PRECONDITION)."""

    def __init__(self, epoch: int, newest_epoch: int) -> None:
        Exception.__init__(self, f"cluster map from controller epoch {epoch}, older than controller epoch {newest_epoch}: that controller was replaced")
        self.kind = "controller"
        self.version = epoch
        self.applied_version = newest_epoch


class Broker:
    """A standalone broker: topic registry, logs, produce/fetch, committed offsets and consumer groups, producer ids.

    Lifecycle: construct (no I/O besides creating the data directory), :meth:`start` (recover
    logs, reconcile them with the registry; standalone, create ``__consumer_offsets`` and load
    committed offsets, managed, load those of the offsets partitions the map makes this broker
    lead in the background; start background work; then :attr:`ready`), :meth:`shutdown` (wake parked
    fetches, stop background work, ``LogManager.shutdown`` which writes the clean-shutdown
    marker). Components are safe to use from many request threads once started.
    """

    def __init__(self, config: BrokerConfig, clock: Clock = SYSTEM_CLOCK) -> None:
        self.config = config
        self.clock = clock
        config.data_dir.mkdir(parents=True, exist_ok=True)
        self.cluster_id = load_or_create_cluster_id(config.data_dir, config.node_id)
        self.cluster_state = ClusterState(config.data_dir, config.node_id)
        self.security = SecurityStore(config.data_dir)
        self.authenticator = Authenticator(
            security_required=bool(config["security.required"]), internal_token=config.internal_token, security_store=self.security, clock=clock
        )
        self.quotas = QuotaManager(clock)
        # Snapshots are applied one at a time so that the version check and the store agree.
        self._apply_lock = threading.Lock()
        # The last map that the registry and the logs were made to follow completely (None: none
        # since this process started, or an apply failed midway): the next map is applied as a
        # difference from it (see apply_partitions).
        self._followed_map: ClusterSnapshot | None = None
        # Notified after each cluster map applied: forwarded topic changes wait on it (wait_for_topics).
        self._map_applied = threading.Condition()
        self.registry = TopicRegistry(config.data_dir, available_brokers=1)
        self.log_manager = LogManager(
            config.data_dir,
            clock=clock,
            max_open_files=config.integer("log.max.open.files"),
            retention_check_interval_ms=config.integer("log.retention.check.interval.ms"),
            flush_check_interval_ms=config.integer("log.flush.scheduler.interval.ms"),
            cleaner_enabled=bool(config["log.cleaner.enable"]),
            cleaner_backoff_ms=config.integer("log.cleaner.backoff.ms"),
        )
        # Kafka clients' long polls park without a thread, at most one per connection: max.connections bounds them.
        # ProduceStream and ReplicaFetchStream calls: ended at once by a graceful stop (server.app).
        # One idle for connections.max.idle.ms is ended (checked every half of that, at least every 30 s).
        self.streams = OpenStreams(clock.monotonic)
        max_idle_seconds = config.integer("connections.max.idle.ms") / 1000.0
        self._idle_streams = PeriodicTask("idle-streams", min(max_idle_seconds / 2, IDLE_STREAM_CHECK_SECONDS), lambda: self.streams.end_idle(max_idle_seconds))
        self.purgatory = FetchPurgatory(max_parked=max_parked_fetches(config), max_parked_without_thread=config.integer("max.connections"))
        self.replica_manager = ReplicaManager(
            self.registry,
            self.log_manager,
            self.purgatory,
            clock,
            max_request_size=config.integer("max.request.size"),
            cluster_state=self.cluster_state,
        )
        self.topic_admin = TopicAdmin(config, self.registry, self.log_manager, self.replica_manager, hosted=self.cluster_state.hosts)
        # With a controller the broker registers and heartbeats, and ISR changes are proposals
        # the controller must store (AlterPartition) before they count; without one (maps pushed
        # by the control plane only) the broker keeps its ISRs itself.
        controller_addresses = config.strings("controller.quorum.bootstrap.servers")
        self.controller: ControllerClient | None = None
        self._alter_partition: AlterPartitionSender | None = None
        if controller_addresses:
            self.controller = ControllerClient(
                controller_addresses,
                node_id=config.node_id,
                rack=config.rack,
                internal_token=config.internal_token,
                heartbeat_interval_ms=config.integer("broker.heartbeat.interval.ms"),
                channel_factory=self._internal_channel,
            )
            self._alter_partition = AlterPartitionSender(
                self.controller,
                answered=lambda *answer: self.replication.isr_change_answered(*answer),
                pending=lambda topic, partition, epoch: self.replication.pending_isr_change(topic, partition, epoch),
            )
        # Broker-side schema validation asks the control plane's registry (through the controller) about schema ids, cached.
        self.schema_ids = SchemaIdCache(controller_schema_lookup(self.controller), clock.monotonic)
        # With a controller, ISR changes are proposals it must store (AlterPartition) before they count.
        isr_changes: _IsrChangeOptions = (
            {"on_isr_change": self._alter_partition.submit, "confirm_isr_changes": True} if self._alter_partition is not None else {}
        )
        self._min_insync_by_topic: dict[str, tuple[TopicMetadata, int]] = {}  # see _min_insync_replicas
        self.replication = ReplicationManager(
            config.node_id,
            log_manager=self.log_manager,
            fetch_purgatory=self.purgatory,
            clock=clock,
            internal_token=config.internal_token,
            settings=ReplicationSettings(
                replica_lag_time_max_ms=config.integer("replica.lag.time.max.ms"),
                fetcher=FetcherSettings(
                    max_wait_ms=config.integer("replica.fetch.wait.max.ms"),
                    max_bytes=config.integer("replica.fetch.max.bytes"),
                    backoff_ms=config.integer("replica.fetch.backoff.ms"),
                    channel_factory=self._internal_channel,
                ),
            ),
            min_insync_replicas=self._min_insync_replicas,
            max_waiters=max_replication_waiters(config),
            **isr_changes,
        )
        self.replica_manager.replication = self.replication
        self.replica_manager.default_request_timeout_ms = config.integer("request.timeout.ms")
        # Followers are checked for lag twice per replica.lag.time.max.ms, as Kafka does.
        self._isr_expiry = PeriodicTask(
            "isr-expiry",
            config.integer("replica.lag.time.max.ms") / 2000.0,
            self.replication.shrink_isrs,
        )
        self.producer_ids = ProducerIdManager(config.data_dir, node_id=config.node_id)
        self.offset_store = OffsetStore(
            self.replica_manager,
            self.registry,
            clock,
            metadata_max_bytes=config.integer("offset.metadata.max.bytes"),
            commit_timeout_ms=config.integer("request.timeout.ms"),
        )
        self.group_coordinator = GroupCoordinator(
            self.offset_store, self.registry, clock, group_settings(config), classic_settings=classic_group_settings(config)
        )
        self._offset_expiry = PeriodicTask(
            "offset-expiry",
            config.integer("offsets.retention.check.interval.ms") / 1000.0,
            lambda: self.group_coordinator.expire_offsets(config.integer("offsets.retention.minutes") * 60_000),
        )
        self._group_timers = PeriodicTask("group-timers", TIMER_INTERVAL_SECONDS, self.group_coordinator.expire_members)
        # Transactions: markers for the partitions led here are appended by marker_appender (for
        # other brokers' coordinators too, through Replication.WriteTxnMarkers); the coordinator of
        # the __transaction_state partitions led here sends each marker to its partition's leader.
        # A marker on a __consumer_offsets partition ends the transaction's offset commits there (TxnOffsetCommit).
        self.marker_appender = MarkerAppender(
            self.replica_manager,
            clock,
            notify_append=self.purgatory.notify_append,
            timeout_ms=config.integer("request.timeout.ms"),
            listener=self.offset_store,
        )
        self.marker_router = MarkerRouter(
            config.node_id,
            lambda: self.cluster_state.snapshot,
            self.marker_appender,
            channel_factory=self._internal_channel,
            internal_token=config.internal_token,
            timeout_ms=config.integer("request.timeout.ms"),
        )
        self.transaction_coordinator = TransactionCoordinator(
            self.replica_manager,
            self.registry,
            clock,
            allocate_producer_id=self.producer_ids.allocate,
            markers=self.marker_router,
            settings=transaction_settings(config),
        )
        # KIP-890 part 1: transactional batches are appended only once their coordinator verified the partition.
        self.transaction_verifier = TransactionVerifier(
            lambda: BrokerEndpoint(config.node_id, config.host_for_clients, 0),
            lambda: self.cluster_state.snapshot,
            self.transaction_coordinator,
            open_transaction_epoch=self._open_transaction_epoch,
            channel_factory=self._internal_channel,
            internal_token=config.internal_token,
        )
        self.replica_manager.transaction_verifier = self.transaction_verifier.refused_entries
        self._transaction_state_lock = threading.Lock()
        self._transaction_timeouts = PeriodicTask(
            "transaction-timeouts",
            config.integer("transaction.abort.timed.out.transaction.cleanup.interval.ms") / 1000.0,
            self.transaction_coordinator.abort_timed_out_transactions,
        )
        self._transactional_id_expiry = PeriodicTask(
            "transactional-id-expiry",
            config.integer("transaction.remove.expired.transaction.cleanup.interval.ms") / 1000.0,
            self.transaction_coordinator.expire_transactional_ids,
        )
        # Usage of clients' calls -> __usage (started by the server once it knows its port).
        self.metering = Metering(config, clock, partition_stats=lambda: led_partition_stats(self.log_manager.logs(), self.replica_manager.leader_epoch))
        self._ready = threading.Event()
        self._stopped = False
        self.recovery_report: RecoveryReport | None = None

    @property
    def ready(self) -> bool:
        return self._ready.is_set()

    def start(self) -> None:
        """Recover and open everything; afterwards the broker serves requests."""
        snapshot = self.cluster_state.load()
        security = self.security.load()
        if snapshot is not None:
            logger.info("managed mode: cluster map version %d with %d topics", snapshot.version, len(snapshot.topics))
        if security is not None:
            logger.info("security snapshot version %d: %d API keys", security.version, len(security.credentials))
        self.registry.load()
        log_configs = {topic.name: self.topic_admin.log_config(topic) for topic in self.registry.topics()}
        report = self.log_manager.startup(log_configs)
        self.recovery_report = report
        logger.info(
            "opened %d partitions (%d recovered after an unclean shutdown, %d bytes truncated, %d indexes rebuilt)",
            report.partitions,
            report.recovered_partitions,
            report.truncated_bytes,
            report.rebuilt_indexes,
        )
        if snapshot is not None:
            change = self.topic_admin.apply_managed_topics(snapshot.topic_metadata())
        else:
            change = self.topic_admin.reconcile_logs()
        # A partition that cannot be hosted is reported, never a reason not to start.
        self.cluster_state.record_failures(list(change.failures))
        created, deleted = change.partitions_created, change.partitions_deleted
        if created or deleted:
            logger.warning("repaired logs after an interrupted topic change: %d created, %d deleted", created, deleted)
        if snapshot is None:
            # Standalone, the broker owns __consumer_offsets and coordinates every group; a
            # managed broker gets the topic in the cluster map, like any replicated topic.
            if self.registry.get(OFFSETS_TOPIC) is None:
                self.topic_admin.create_topic(
                    OFFSETS_TOPIC,
                    self.config.integer("offsets.topic.num.partitions"),
                    1,
                    {"cleanup.policy": "compact", "segment.bytes": str(self.config["offsets.topic.segment.bytes"])},
                    internal=True,
                )
                logger.info("created internal topic %s", OFFSETS_TOPIC)
            loaded = self.offset_store.lead_every_partition()
            logger.info("loaded %d records of committed offsets from %s", loaded, OFFSETS_TOPIC)
            if self.registry.get(TRANSACTION_STATE_TOPIC) is not None:  # created on first use (ensure_transaction_state)
                loaded = self.transaction_coordinator.lead_every_partition()
                logger.info("loaded %d records of transaction states from %s", loaded, TRANSACTION_STATE_TOPIC)
        else:
            self.replication.apply(snapshot)
            self._follow_offsets_leadership(snapshot)
        self.log_manager.start_background()
        self._offset_expiry.start()
        self._group_timers.start()
        self._idle_streams.start()
        self._transaction_timeouts.start()
        self._transactional_id_expiry.start()
        self._isr_expiry.start()
        self._ready.set()

    def _internal_channel(self, address: str) -> grpc.Channel:
        """A channel to another broker or the controller (TLS when the broker has --tls-ca)."""
        return open_internal_channel(address, self.config)

    def connect_controller(self, port: int, kafka_port: int = 0) -> None:
        """Register with the controller as this broker listening on ``port`` (and Kafka clients on ``kafka_port``, 0: no listener)
        and keep the session (no-op without one)."""
        if self.controller is None or self._alter_partition is None:
            return
        self._alter_partition.start()
        self.controller.start(self.config.host_for_clients, port, kafka_port)

    def controlled_shutdown(self) -> bool:
        """Before stopping: have the controller move this broker's leaderships away (SIGTERM).

        True when nothing is led here any more; False without a controller, when
        ``controlled.shutdown.enable`` is off, or when the controller could not finish in
        ``controlled.shutdown.timeout.ms`` (the broker then stops anyway, as Kafka's does).
        """
        if self.controller is None or not self.config["controlled.shutdown.enable"]:
            return False
        timeout_seconds = self.config.integer("controlled.shutdown.timeout.ms") / 1000.0
        deadline = time.monotonic() + timeout_seconds
        if not self.controller.controlled_shutdown(timeout_seconds):
            return False
        # The map that moves the leaderships away is pushed right after the answer: wait for it
        # (bounded), so that no produce is taken here as leader after the controller moved on.
        handover_deadline = min(deadline, time.monotonic() + LEADERSHIP_HANDOVER_MAX_SECONDS)
        while self._leads_anything() and time.monotonic() < handover_deadline:
            time.sleep(LEADERSHIP_HANDOVER_POLL_SECONDS)
        return True

    def _leads_anything(self) -> bool:
        snapshot = self.cluster_state.snapshot
        if snapshot is None:
            return False
        node_id = self.config.node_id
        return any(assignment.leader_id == node_id for topic in snapshot.topics.values() for assignment in topic.partitions)

    def _follow_offsets_leadership(self, snapshot: ClusterSnapshot) -> None:
        """Coordinate the groups of the __consumer_offsets partitions the map makes this broker lead.

        Called after the replication has applied the map, so that a partition this broker
        now leads is no longer written by a follower fetcher while its offsets load.
        """
        self.offset_store.follow_leadership(snapshot.led_partitions(OFFSETS_TOPIC, self.config.node_id))
        self.transaction_coordinator.follow_leadership(snapshot.led_partitions(TRANSACTION_STATE_TOPIC, self.config.node_id))

    def _open_transaction_epoch(self, topic: str, partition: int, producer_id: int) -> int | None:
        """The epoch of ``producer_id``'s transaction open in the partition's log here; None when none is (or no such log)."""
        try:
            entry = self.replica_manager.partition_log(topic, partition).producer_state(producer_id)
        except Exception:  # an unknown partition: the append answers why
            return None
        if entry is None or entry.current_txn_first_offset < 0:
            return None
        return entry.epoch

    def ensure_transaction_state(self) -> None:
        """Standalone: create ``__transaction_state`` on first use and coordinate every partition of it (no-op when managed).

        Kafka creates the topic when a client first looks for a transaction coordinator; a
        standalone broker does the same, so brokers that never see a transactional producer
        never hold its partitions. A managed broker gets the topic from the controller.
        """
        if self.managed:
            return
        with self._transaction_state_lock:
            if self.registry.get(TRANSACTION_STATE_TOPIC) is not None:
                return
            self.topic_admin.create_topic(
                TRANSACTION_STATE_TOPIC,
                self.config.integer("transaction.state.log.num.partitions"),
                1,
                {"cleanup.policy": "compact", "segment.bytes": str(self.config["offsets.topic.segment.bytes"])},
                internal=True,
            )
            logger.info("created internal topic %s", TRANSACTION_STATE_TOPIC)
            self.transaction_coordinator.lead_every_partition()

    def _min_insync_replicas(self, topic: str) -> int:
        """The topic's effective min.insync.replicas, asked twice by every acks=all Produce.

        Remembered per topic with the registry's metadata it was computed from: metadata is
        immutable and replaced on every change of the topic's configs, so a new object means
        computing it again (the broker's topic defaults are fixed for the process's life).
        """
        metadata = self.registry.get(topic)
        if metadata is None:
            self._min_insync_by_topic.pop(topic, None)
            return 1
        known = self._min_insync_by_topic.get(topic)
        if known is not None and known[0] is metadata:
            return known[1]
        value = self.topic_admin.effective_configs(metadata)["min.insync.replicas"]
        if not isinstance(value, int):
            raise TypeError(f"min.insync.replicas of {topic!r} is {value!r}, not an integer")
        self._min_insync_by_topic[topic] = (metadata, value)  # one atomic store: readers see the old pair or the new
        return value

    @property
    def managed(self) -> bool:
        return self.cluster_state.managed

    def apply_partitions(self, snapshot: ClusterSnapshot, *, controller_epoch: int = 0) -> ManagedTopicsChange:
        """Make ``snapshot`` the cluster map and the logs follow it; StaleSnapshotError for an older version.

        ``controller_epoch`` is the epoch of the controller that sent the map (0: not from a
        controller); StaleControllerEpochError when a newer controller has been seen. A
        partition whose log cannot be created is in ``change.failures`` (and
        ``cluster_state.failed_partitions``); every other partition, and every leadership, is applied.
        """
        with self._apply_lock:
            if controller_epoch and self.controller is not None and not self.controller.observe_controller_epoch(controller_epoch):
                raise StaleControllerEpochError(controller_epoch, self.controller.controller_epoch)
            self.cluster_state.check_not_stale(snapshot.version)
            followed, self._followed_map = self._followed_map, None
            # The map and topics.json are each fsynced, and their renames made durable by one fsync of
            # the data directory below, which also covers the new partitions' directories: three
            # fsyncs per map instead of five (each ~20 ms on a busy disk, on every push).
            self.cluster_state.store(snapshot, sync_directory=False)
            # The controller pushes the whole map at every change: only the topics that differ from
            # the map last followed completely, and the partitions that failed (tried again at every
            # push), need their registry entry and logs looked at; the first map of a process, or
            # one after an apply that failed midway, is applied whole.
            touched = None if followed is None else snapshot.changed_topics(followed) | {failure.topic for failure in self.cluster_state.failed_partitions}
            change = self.topic_admin.apply_managed_topics(snapshot.topic_metadata(), changed=touched, sync_directory=False)
            if not change.partitions_created:  # else fsynced after the partitions' directories were made
                self.log_manager.sync_data_directory()
            self.cluster_state.record_failures(list(change.failures))
            self.replication.apply(snapshot)
            self._follow_offsets_leadership(snapshot)
            self._followed_map = snapshot
        with self._map_applied:
            self._map_applied.notify_all()
        if change.partitions_created or change.partitions_deleted or change.topics_reconfigured:
            logger.info(
                "applied cluster map version %d: %d partitions created, %d deleted, %d topics reconfigured",
                snapshot.version,
                change.partitions_created,
                change.partitions_deleted,
                change.topics_reconfigured,
            )
        return change

    def wait_for_topics(self, present: Mapping[str, str], absent: Sequence[str], timeout: float) -> bool:
        """Wait at most ``timeout`` seconds until this broker's cluster map holds every topic of
        ``present`` (registry name -> topic id, or "" for any id) and none of ``absent``; whether it does.

        The controller answers a forwarded CreateTopics or DeleteTopics once its catalog changed
        and pushes the new map in the background. Kafka answers those requests only once the
        receiving broker's metadata shows the change, and clients rely on it (KafkaJS asks this
        broker's Metadata for the new topic's leaders right after and stops on
        UNKNOWN_TOPIC_OR_PARTITION), so the answer waits for the push here.
        """

        def shown() -> bool:
            for name, topic_id in present.items():
                topic = self.registry.get(name)
                if topic is None or (topic_id and topic.topic_id != topic_id):
                    return False
            return all(self.registry.get(name) is None for name in absent)

        deadline = time.monotonic() + max(0.0, timeout)
        with self._map_applied:
            while not shown():
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._map_applied.wait(remaining)
        return True

    def apply_security(self, snapshot: SecuritySnapshot) -> None:
        """Swap credentials, ACLs and quotas at once; StaleSnapshotError for an older version."""
        with self._apply_lock:
            self.security.check_not_stale(snapshot.version)
            self.security.store(snapshot)
        logger.info("applied security snapshot version %d: %d API keys", snapshot.version, len(snapshot.credentials))

    def shutdown(self) -> None:
        """Stop serving and close the logs cleanly (idempotent)."""
        if self._stopped:
            return
        self._stopped = True
        self._ready.clear()
        self.purgatory.close()
        self.metering.shutdown()
        if self._alter_partition is not None:
            self._alter_partition.stop()
        if self.controller is not None:
            self.controller.stop()
        self.replication.shutdown()
        self._offset_expiry.stop()
        self._group_timers.stop()
        self._idle_streams.stop()
        self.offset_store.shutdown()
        self._transaction_timeouts.stop()
        self._transactional_id_expiry.stop()
        self.transaction_coordinator.shutdown()
        self.marker_router.close()
        self.transaction_verifier.close()
        self._isr_expiry.stop()
        self.log_manager.shutdown()
        logger.info("logs closed cleanly")


def group_settings(config: BrokerConfig) -> GroupSettings:
    """The group coordinator's settings (group.consumer.*)."""
    return GroupSettings(
        session_timeout_ms=config.integer("group.consumer.session.timeout.ms"),
        min_session_timeout_ms=config.integer("group.consumer.min.session.timeout.ms"),
        max_session_timeout_ms=config.integer("group.consumer.max.session.timeout.ms"),
        heartbeat_interval_ms=config.integer("group.consumer.heartbeat.interval.ms"),
        max_size=config.integer("group.consumer.max.size"),
        assignors=config.strings("group.consumer.assignors"),
    )


def classic_group_settings(config: BrokerConfig) -> ClassicSettings:
    """The settings of classic (JoinGroup/SyncGroup) groups: Kafka's group.* keys."""
    return ClassicSettings(
        min_session_timeout_ms=config.integer("group.min.session.timeout.ms"),
        max_session_timeout_ms=config.integer("group.max.session.timeout.ms"),
        max_size=config.integer("group.max.size"),
        initial_rebalance_delay_ms=config.integer("group.initial.rebalance.delay.ms"),
    )


def transaction_settings(config: BrokerConfig) -> TransactionSettings:
    """The transaction coordinator's settings (Kafka's transaction.* keys)."""
    return TransactionSettings(
        max_timeout_ms=config.integer("transaction.max.timeout.ms"),
        id_expiration_ms=config.integer("transactional.id.expiration.ms"),
        write_timeout_ms=config.integer("request.timeout.ms"),
    )


def max_parked_fetches(config: BrokerConfig) -> int:
    """How many long-polling fetches may wait at once: as many as there are request threads."""
    return config.integer("num.io.threads")


def max_replication_waiters(config: BrokerConfig) -> int:
    """How many acks=all requests (produces, offset commits, group records) may wait for their in-sync replicas at once on request threads.

    Four per request thread: a wait costs an idle thread, and producers keep one request in
    flight per partition, so many partitions mean many concurrent waits; beyond the limit an
    acks=all request is refused before appending (REQUEST_TIMED_OUT, retried by the client).
    The Kafka listener's acks=all produces wait on its loop without a thread and are not
    counted: ``max.connections`` and each connection's in-flight bound limit them.
    """
    return REPLICATION_WAITERS_PER_IO_THREAD * config.integer("num.io.threads")


def max_fetch_streams(config: BrokerConfig) -> int:
    """How many consumers' ``FetchStream`` calls may be open at once (``fetch.streams.max``); each holds a thread for its life."""
    return config.integer("fetch.streams.max")


def request_thread_count(config: BrokerConfig) -> int:
    """Threads of the gRPC pool: ``num.io.threads`` for requests plus one per parkable fetch, one
    per acks=all waiter and one per consumer fetch stream.

    A parked fetch and an acks=all wait each hold a thread while they wait, and a fetch stream
    holds one while it is open; sizing the pool above all three limits keeps ``num.io.threads``
    threads free for every other call, the followers' ``ReplicaFetch`` answers that acks=all waits
    for among them (without them the waiters could take every thread and starve the fetches they
    wait on).
    """
    return config.integer("num.io.threads") + max_parked_fetches(config) + max_replication_waiters(config) + max_fetch_streams(config)

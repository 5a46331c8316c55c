"""Proof: on a 3-broker cluster the transaction coordinator follows the leader of the transactional id's
``__transaction_state`` partition, and a commit in flight when that broker is killed with -9 completes.

Driven over the Kafka protocol as a transactional client drives it (FindCoordinator key type
TRANSACTION, InitProducerId, AddPartitionsToTxn, EndTxn v5), without data batches: what is
checked is the coordinator's work, the COMMIT markers in each replica's segment files. The
tenant's topic has two partitions, three replicas and min.insync.replicas=2.

The in-flight commit: a broker other than the coordinator that leads a data partition is
frozen (SIGSTOP), so the coordinator's WriteTxnMarkers to it cannot complete; EndTxn is
answered once PrepareCommit is stored; then the coordinator is killed with -9 and the frozen
broker resumed. The broker that becomes leader of the id's partition loads PrepareCommit and
writes every marker (epoch bumped, KIP-890); the client's retried EndTxn is answered there
from the loaded state, and a late EndTxn with the old epoch after the next transaction began
is PRODUCER_FENCED.
"""

from __future__ import annotations

import datetime
import socket
from pathlib import Path
from typing import Any

import pytest
from kio.schema.add_partitions_to_txn.v3.request import AddPartitionsToTxnRequest, AddPartitionsToTxnTopic
from kio.schema.end_txn.v5.request import EndTxnRequest
from kio.schema.errors import ErrorCode
from kio.schema.find_coordinator.v4.request import FindCoordinatorRequest
from kio.schema.init_producer_id.v4.request import InitProducerIdRequest
from kio.schema.sasl_authenticate.v2.request import SaslAuthenticateRequest
from kio.schema.sasl_handshake.v1.request import SaslHandshakeRequest
from kio.static.primitive import i16, i32, i32Timedelta, i64

from log_formats.control_records import decode_marker
from log_formats.log_files import LOG_SUFFIX, partition_directory_name
from log_formats.transaction_log_records import partition_for_transactional_id
from tests.kafka_protocol.wire import call, connect
from tests.support.real_cluster import ClusterTimings, RealCluster
from weir.records import batch_records_bytes, decode_records, iter_batch_positions

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow, pytest.mark.timeout(240)]

TOPIC = "ledger"
TRANSACTIONAL_ID = "ledger-writer"
TRANSACTION_STATE_TOPIC = "__transaction_state"
TIMINGS = ClusterTimings(session_timeout_ms=2000, replica_lag_time_max_ms=2000)
RETRIABLE = {ErrorCode.not_coordinator, ErrorCode.coordinator_load_in_progress, ErrorCode.coordinator_not_available, ErrorCode.concurrent_transactions}


class TransactionalClient:
    """One authenticated Kafka connection per broker; requests go to the coordinator found with FindCoordinator."""

    def __init__(self, cluster: RealCluster) -> None:
        self.cluster = cluster
        self.correlation = 10

    def request(self, node_id: int, request: Any) -> Any:
        host, port = self.cluster.brokers[node_id].kafka_address.rsplit(":", 1)
        connection: socket.socket = connect(int(port), host)
        try:
            access = self.cluster.access
            assert access is not None
            call(connection, SaslHandshakeRequest(mechanism="PLAIN"), correlation_id=1)
            call(connection, SaslAuthenticateRequest(auth_bytes=b"\0" + access.api_key.encode() + b"\0" + access.api_secret.encode()), correlation_id=2)
            self.correlation += 1
            return call(connection, request, correlation_id=self.correlation)
        finally:
            connection.close()

    def coordinator(self) -> int:
        def found() -> int | None:
            for node_id in sorted(self.cluster.running_nodes()):
                try:
                    answer = self.request(node_id, FindCoordinatorRequest(key_type=i16(1), coordinator_keys=(TRANSACTIONAL_ID,)))
                except OSError:
                    continue
                (entry,) = answer.coordinators
                if entry.error_code == ErrorCode.none and entry.node_id in self.cluster.running_nodes():
                    return int(entry.node_id)
            return None

        return self.cluster.wait_until(found, "FindCoordinator(TRANSACTION) names a running broker", 30.0)

    def init_producer(self, transactional_id: str, timeout_ms: int = 60000) -> tuple[int, int]:
        """InitProducerId for ``transactional_id`` at its coordinator: (producer id, epoch)."""
        initialised = self.until_answered(
            "InitProducerId",
            InitProducerIdRequest(
                transactional_id=transactional_id,
                transaction_timeout=i32Timedelta.parse(datetime.timedelta(milliseconds=timeout_ms)),
                producer_id=i64(-1),
                producer_epoch=i16(-1),
            ),
            lambda answer: answer.error_code,
        )
        assert initialised.error_code == ErrorCode.none, initialised
        return int(initialised.producer_id), int(initialised.producer_epoch)

    def until_answered(self, what: str, request: Any, error_of: Any) -> Any:
        """Send to the current coordinator until the answer is not a retriable coordinator error (bounded)."""

        def attempt() -> Any:
            answer = self.request(self.coordinator(), request)
            return None if error_of(answer) in RETRIABLE else answer

        return self.cluster.wait_until(attempt, what, 60.0)


def markers(cluster: RealCluster, node_id: int, partition: int) -> list[tuple[int, int, bool]]:
    """(producer id, epoch, commit) of every control batch in one replica's segment files."""
    directory = cluster.brokers[node_id].data_dir / partition_directory_name(cluster.qualified(TOPIC), partition)
    found = []
    for path in sorted(directory.glob(f"*{LOG_SUFFIX}")):
        data = path.read_bytes()
        for position, header in iter_batch_positions(data):
            if header.is_control:
                ((_, _, key, value, _),) = decode_records(batch_records_bytes(data, position, header), header)
                found.append((header.producer_id, header.producer_epoch, decode_marker(key, value).commit))
    return found


def test_a_commit_in_flight_when_its_coordinator_is_killed_completes_on_the_new_coordinator(start_cluster, tmp_path: Path) -> None:
    cluster = start_cluster(broker_count=3, timings=TIMINGS)
    cluster.create_tenant("Ledger")
    cluster.create_topic(TOPIC, 2, 3, {"min.insync.replicas": "2"})
    cluster.wait_for_full_isr(TOPIC)
    client = TransactionalClient(cluster)

    producer_id, epoch = client.init_producer(TRANSACTIONAL_ID)
    coordinator = client.coordinator()
    partition = partition_for_transactional_id(f"{cluster.access.tenant_id}~{TRANSACTIONAL_ID}", 3)  # type: ignore[union-attr]
    assert cluster.internal_partition_rows(TRANSACTION_STATE_TOPIC)[partition].leader == coordinator

    add = AddPartitionsToTxnRequest(
        v3_and_below_transactional_id=TRANSACTIONAL_ID,
        v3_and_below_producer_id=i64(producer_id),
        v3_and_below_producer_epoch=i16(epoch),
        v3_and_below_topics=(AddPartitionsToTxnTopic(name=TOPIC, partitions=(i32(0), i32(1))),),
    )
    added = client.request(coordinator, add)
    assert {int(p.partition_error_code) for t in added.results_by_topic_v3_and_below for p in t.results_by_partition} == {ErrorCode.none}

    # Freeze a data partition's leader that is not the coordinator: the markers to it stay in flight.
    frozen = next((leader for p in (0, 1) if (leader := cluster.leader_of(TOPIC, p)) != coordinator), None)
    if frozen is not None:
        cluster.sigstop(frozen)
    end = EndTxnRequest(transactional_id=TRANSACTIONAL_ID, producer_id=i64(producer_id), producer_epoch=i16(epoch), committed=True)
    ended = client.request(coordinator, end)
    assert (ended.error_code, int(ended.producer_epoch)) == (ErrorCode.none, epoch + 1)
    cluster.kill(coordinator)
    if frozen is not None:
        cluster.sigcont(frozen)

    new_coordinator = client.coordinator()
    assert new_coordinator != coordinator
    # The retried EndTxn is answered from the state the new coordinator loaded (no second commit).
    retried = client.until_answered("the retried EndTxn", end, lambda answer: answer.error_code)
    assert (retried.error_code, int(retried.producer_id), int(retried.producer_epoch)) == (ErrorCode.none, producer_id, epoch + 1)
    survivors = sorted(cluster.running_nodes())
    cluster.wait_until(
        lambda: all((producer_id, epoch + 1, True) in markers(cluster, node, p) for node in survivors for p in (0, 1)),
        "the COMMIT marker (epoch bumped) in both partitions on every surviving replica",
        60.0,
    )

    # The next transaction; then the late EndTxn of the first one (old epoch) can never end it.
    next_add = AddPartitionsToTxnRequest(
        v3_and_below_transactional_id=TRANSACTIONAL_ID,
        v3_and_below_producer_id=i64(producer_id),
        v3_and_below_producer_epoch=i16(epoch + 1),
        v3_and_below_topics=(AddPartitionsToTxnTopic(name=TOPIC, partitions=(i32(0),)),),
    )
    assert {int(p.partition_error_code) for t in client.request(new_coordinator, next_add).results_by_topic_v3_and_below for p in t.results_by_partition} == {
        ErrorCode.none
    }
    late = client.request(new_coordinator, end)
    assert late.error_code == ErrorCode.producer_fenced

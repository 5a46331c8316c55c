"""Jepsen-style proof of transactions: transactional producers on 3 brokers while the nemesis
kills transaction coordinators and partition leaders with -9 and freezes a producer.

Three producer processes (librdkafka's p1 and p3, the SDK's p2) (:mod:`tests.support.transactional_producer_process`) write
transactions of 2-6 records across the partitions of one topic (RF=3, min.insync.replicas=2),
each committed or aborted at random; every value names its transaction and intent. The nemesis,
bounded in count and time: kill -9 the leader of a producer's ``__transaction_state`` partition
(its coordinator), then a data partition's leader, then another producer's coordinator, each
restarted once its leaderships moved; meanwhile producer ``p3`` (transaction.timeout.ms 3 s)
freezes itself with SIGSTOP inside a transaction and is resumed well past its timeout: its
coordinator must have aborted the transaction, and the producer must be fenced. Beside them a
consume-transform-produce worker (:mod:`tests.support.ctp_worker_process`) reads an input topic at
read_committed and writes each record to an output topic, committing its group's offsets with
send_offsets_to_transaction (KIP-447), some transactions aborted on purpose; the nemesis also
kills its group's coordinator (the leader of the group's ``__consumer_offsets`` partition).

Checked on a final read_committed read of every partition over the Kafka listeners
(tests/support/transaction_history.py): no aborted read, no torn transaction, no lost commit,
offsets increasing with gaps only at markers and aborted ranges; the replicas agree record for
record; the worker's output holds each input exactly once. Liveness: the producers that were not
frozen go on committing after the faults, and the worker processes every input.
``WEIR_JEPSEN_SEED`` replays a run.
"""

from __future__ import annotations

import os
import random
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

from log_formats.offset_commit_records import partition_for_group
from log_formats.topic_names import qualify
from log_formats.transaction_log_records import partition_for_transactional_id
from tests.cluster.workload import check_replicas_agree
from tests.support.ctp_worker_process import CtpWorkerProcess
from tests.support.real_cluster import ClusterTimings, RealCluster
from tests.support.transaction_history import (
    ABORTED,
    COMMITTED,
    ReadRecord,
    TransactionRecord,
    check_exactly_once,
    check_no_aborted_reads,
    check_no_lost_commits,
    check_no_torn_transactions,
    check_offsets,
)
from tests.support.transactional_producer_process import TransactionalProducerProcess

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow, pytest.mark.timeout(240)]

TOPIC = "jepsen-txn"
PARTITIONS = 3
TRANSACTION_STATE_TOPIC = "__transaction_state"
OFFSETS_TOPIC = "__consumer_offsets"
INPUT_TOPIC, OUTPUT_TOPIC, CTP_PARTITIONS = "jepsen-ctp-in", "jepsen-ctp-out", 2
CTP_GROUP = "jepsen-ctp"
CTP_INPUTS = 150  # input records the worker transforms (3 per transaction: its work spans the first faults)
CTP_SECONDS = 60.0  # bound on the worker finishing its input once the faults are over
FROZEN_TIMEOUT_MS = 3000  # the frozen producer's transaction.timeout.ms
ABORT_CHECK_MS = 500  # transaction.abort.timed.out.transaction.cleanup.interval.ms
# The frozen producer stays stopped at least this long: its timeout, the coordinator's check,
# and a coordinator failover (a kill may hit its coordinator) that loads the state again.
FROZEN_SECONDS = 3 * FROZEN_TIMEOUT_MS / 1000 + 2
TRANSACTIONS_BETWEEN_FAULTS = 2  # each running producer ends this many transactions between two faults
# p2 is Weir's SDK producer (KIP-890 transactions version 2: its next transaction begins while the
# previous one's markers are written, its Ongoing record naming them), and the nemesis kills its coordinator.
SDK_PRODUCER = "p2"
SDK_PRODUCER_CLIENT = "sdk"
FAULT_SECONDS = 45.0  # bound on one fault: failover, restart, ISR back, producers moving again
READ_SECONDS = 60.0
FENCED_ERRORS = ("_FENCED", "PRODUCER_FENCED", "INVALID_PRODUCER_EPOCH", "INVALID_TXN_STATE")  # see the frozen producer's check


@dataclass(frozen=True)
class TransactionTimings(ClusterTimings):
    """The cluster's failure timings plus a coordinator that looks for timed-out transactions often."""

    abort_check_ms: int = ABORT_CHECK_MS

    def broker_configs(self) -> dict[str, str]:
        return {**super().broker_configs(), "transaction.abort.timed.out.transaction.cleanup.interval.ms": str(self.abort_check_ms)}


TIMINGS = TransactionTimings(session_timeout_ms=2000, replica_lag_time_max_ms=2000)
FAILOVER_SECONDS = TIMINGS.session_timeout_ms / 1000 + 15


def transactional_id(name: str) -> str:
    return f"jepsen-{name}"


def coordinator_of(cluster: RealCluster, name: str) -> int:
    rows = cluster.internal_partition_rows(TRANSACTION_STATE_TOPIC)
    assert cluster.access is not None
    return rows[partition_for_transactional_id(qualify(cluster.access.tenant_id, transactional_id(name)), len(rows))].leader


def group_coordinator(cluster: RealCluster) -> int:
    rows = cluster.internal_partition_rows(OFFSETS_TOPIC)
    assert cluster.access is not None
    return rows[partition_for_group(qualify(cluster.access.tenant_id, CTP_GROUP), len(rows))].leader


def fill_input(cluster: RealCluster) -> list[bytes]:
    """CTP_INPUTS records to the worker's input topic (an idempotent producer, every delivery checked)."""
    values = [f"in-{index:05d}".encode() for index in range(CTP_INPUTS)]
    producer = Producer(cluster.kafka_client_config(**{"enable.idempotence": True, "linger.ms": 5}))
    failures: list[object] = []
    for index, value in enumerate(values):
        producer.produce(INPUT_TOPIC, value, partition=index % CTP_PARTITIONS, on_delivery=lambda error, _: error and failures.append(error))
    assert producer.flush(READ_SECONDS) == 0 and not failures, failures[:3]
    return values


def start_producers(cluster: RealCluster, root: Path, seed: int) -> dict[str, TransactionalProducerProcess]:
    producers = {}
    for index, name in enumerate(("p1", "p2", "p3")):
        timeout_ms = FROZEN_TIMEOUT_MS if name == "p3" else 60000
        client = SDK_PRODUCER_CLIENT if name == SDK_PRODUCER else "librdkafka"
        if client == "sdk":
            config = cluster.client_config(**{"transactional.id": transactional_id(name), "transaction.timeout.ms": timeout_ms, "linger.ms": 5})
        else:
            config = cluster.kafka_client_config(
                **{
                    "transactional.id": transactional_id(name),
                    "transaction.timeout.ms": timeout_ms,
                    "linger.ms": 5,
                    "topic.metadata.refresh.interval.ms": 1000,
                    "reconnect.backoff.max.ms": 500,
                }
            )
        spec = {"name": name, "topic": TOPIC, "partitions": PARTITIONS, "config": config, "seed": seed + index, "client": client}
        producers[name] = TransactionalProducerProcess(root / name, spec).start()
    return producers


def wait_for_progress(cluster: RealCluster, producers: list[TransactionalProducerProcess], what: str) -> None:
    """Until each producer ended TRANSACTIONS_BETWEEN_FAULTS more transactions (committed or aborted)."""
    targets = {producer.name: producer.ended(COMMITTED) + producer.ended(ABORTED) + TRANSACTIONS_BETWEEN_FAULTS for producer in producers}

    def moved() -> bool:
        for producer in producers:
            assert not producer.exited(), f"producer {producer.name} exited: {producer.history()[1][-3:]}\n{producer.log_tail()}"
        return all(producer.ended(COMMITTED) + producer.ended(ABORTED) >= targets[producer.name] for producer in producers)

    cluster.wait_until(moved, f"{what}: producers {sorted(targets)} ended {TRANSACTIONS_BETWEEN_FAULTS} more transactions each", FAULT_SECONDS)


def kill_and_restart(cluster: RealCluster, victim: int) -> str:
    """kill -9 ``victim``, wait until none of its leaderships is left, restart it, wait for every ISR."""
    killed_at = time.monotonic()
    cluster.kill(victim)

    def rows() -> list[Any]:
        internal = [row for name in (TRANSACTION_STATE_TOPIC, OFFSETS_TOPIC) for row in cluster.internal_partition_rows(name)]
        return [*internal, *(row for topic in (TOPIC, INPUT_TOPIC, OUTPUT_TOPIC) for row in cluster.partition_rows(topic))]

    cluster.wait_until(lambda: all(row.leader not in (victim, -1) for row in rows()), f"the leaderships of killed broker {victim} moved", FAILOVER_SECONDS)
    failover = time.monotonic() - killed_at
    cluster.start_broker(victim)
    cluster.wait_until(lambda: all(sorted(row.isr) == sorted(row.replicas) for row in rows()), "every partition with its full ISR", FAULT_SECONDS)
    return f"killed broker {victim}, failed over in {failover:.1f}s"


def read_committed_everything(cluster: RealCluster, end_offsets: dict[int, int], topic: str = TOPIC) -> tuple[list[ReadRecord], list[str]]:
    """Every partition of ``topic`` from offset 0 at read_committed, until each reports EOF at its log end (bounded)."""
    consumer = Consumer(
        cluster.kafka_client_config(
            **{"group.id": "jepsen-auditor", "isolation.level": "read_committed", "enable.auto.commit": False, "enable.partition.eof": True}
        )
    )
    consumer.assign([TopicPartition(topic, partition, 0) for partition in end_offsets])
    reads: list[ReadRecord] = []
    errors: list[str] = []
    at_end: set[int] = set()
    deadline = time.monotonic() + READ_SECONDS
    try:
        while len(at_end) < len(end_offsets) and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                continue
            if message.error() is not None:
                if message.error().code() == KafkaError._PARTITION_EOF:  # at the LSO, which is the log end once nothing is open
                    if message.offset() >= end_offsets[message.partition()]:
                        at_end.add(message.partition())
                else:
                    errors.append(str(message.error()))
                continue
            reads.append(ReadRecord(message.partition(), message.offset(), message.value()))
    finally:
        consumer.close()
    if len(at_end) < len(end_offsets):
        errors.append(f"read_committed did not reach the log end of {topic} partitions {sorted(set(end_offsets) - at_end)} in {READ_SECONDS:.0f}s")
    return reads, errors


def test_transactions_stay_atomic_while_coordinators_and_leaders_are_killed_and_a_producer_is_frozen(start_cluster, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    seed = int(os.environ.get("WEIR_JEPSEN_SEED") or random.SystemRandom().randrange(2**32))
    rng = random.Random(seed)
    cluster = start_cluster(timings=TIMINGS)
    cluster.create_tenant()
    cluster.create_topic(TOPIC, PARTITIONS, 3, {"min.insync.replicas": "2"})
    for topic in (INPUT_TOPIC, OUTPUT_TOPIC):
        cluster.create_topic(topic, CTP_PARTITIONS, 3, {"min.insync.replicas": "2"})
    for topic in (TOPIC, INPUT_TOPIC, OUTPUT_TOPIC):
        cluster.wait_for_full_isr(topic)
    inputs = fill_input(cluster)
    producers = start_producers(cluster, tmp_path / "producers", seed)
    frozen, running = producers["p3"], [producers["p1"], producers["p2"]]
    worker = CtpWorkerProcess(
        tmp_path / "worker",
        input_topic=INPUT_TOPIC,
        output_topic=OUTPUT_TOPIC,
        group=CTP_GROUP,
        expected=CTP_INPUTS,
        config=cluster.kafka_client_config(**{"topic.metadata.refresh.interval.ms": 1000, "reconnect.backoff.max.ms": 500}),
        seed=seed,
    ).start()
    history: list[str] = []
    started = time.monotonic()
    try:
        wait_for_progress(cluster, list(producers.values()), "before the faults")
        frozen.request_freeze()
        cluster.wait_until(frozen.is_frozen, "producer p3 stopped (SIGSTOP) inside a transaction", FAULT_SECONDS)
        frozen_at = time.monotonic()
        history.append(f"t+{frozen_at - started:.1f}s froze producer p3 inside a transaction")

        for fault in ("group coordinator of the worker", "coordinator of p1", "leader of a data partition", "coordinator of p2"):
            if fault.startswith("coordinator"):
                victim = coordinator_of(cluster, fault[-2:])
            elif fault.startswith("group"):
                victim = group_coordinator(cluster)
            else:
                victim = cluster.leader_of(TOPIC, rng.randrange(PARTITIONS))
            assert victim != -1, f"no {fault} to kill; {history}"
            history.append(f"t+{time.monotonic() - started:.1f}s {fault}: " + kill_and_restart(cluster, victim))
            wait_for_progress(cluster, running, f"after killing the {fault}")
            if frozen.is_frozen() and time.monotonic() - frozen_at >= FROZEN_SECONDS:
                frozen.resume()
                history.append(f"t+{time.monotonic() - started:.1f}s resumed producer p3 after {time.monotonic() - frozen_at:.1f}s")
        if frozen.is_frozen():
            cluster.wait_until(lambda: time.monotonic() - frozen_at >= FROZEN_SECONDS, "p3 frozen past its transaction timeout", FROZEN_SECONDS)
            frozen.resume()
            history.append(f"t+{time.monotonic() - started:.1f}s resumed producer p3 after {time.monotonic() - frozen_at:.1f}s")
        cluster.wait_until(frozen.exited, "the resumed producer p3 fenced and exited", FAULT_SECONDS)
        wait_for_progress(cluster, running, "after the last fault")
        cluster.wait_until(worker.exited, f"the worker transformed its {CTP_INPUTS} inputs (committed {worker.committed_inputs()} so far)", CTP_SECONDS)
    finally:
        codes = {producer.name: producer.stop() for producer in producers.values()}
        worker_code = worker.stop()
    histories = {name: producer.history() for name, producer in producers.items()}
    transactions: list[TransactionRecord] = [transaction for ended, _ in histories.values() for transaction in ended]
    summary = "\n  ".join(
        f"{name}: exit {codes[name]}, "
        + ", ".join(f"{outcome} {sum(1 for t in ended if t.outcome == outcome)}" for outcome in (COMMITTED, ABORTED, "unknown"))
        + f", events {[event for event in events if event['event'] != 'initialised']}, errors {[(t.key.number, t.error) for t in ended if t.error]}"
        for name, (ended, events) in histories.items()
    )
    worker_lines = worker.lines()
    worker_summary = f"worker: exit {worker_code}, " + ", ".join(
        f"{outcome} {sum(1 for line in worker_lines if line.get('outcome') == outcome)}" for outcome in ("committed", "aborted", "unknown")
    )
    worker_summary += f", errors {[line['error'] for line in worker_lines if line.get('error')][:5]}"
    run = f"seed {seed}\n  " + "\n  ".join(history) + "\n  " + summary + "\n  " + worker_summary

    end_offsets = cluster.wait_for_replicas_in_sync(TOPIC)
    reads, read_errors = read_committed_everything(cluster, end_offsets)
    stored = {partition: cluster.replica_logs(TOPIC, partition, [cluster.leader_of(TOPIC, partition)])[0].values for partition in range(PARTITIONS)}
    problems = (
        check_no_aborted_reads(reads, transactions)
        + check_no_torn_transactions(reads)
        + check_no_lost_commits(reads, transactions)
        + check_offsets(reads, stored)
        + read_errors
    )
    for partition in range(PARTITIONS):
        problems += check_replicas_agree(partition, cluster.replica_logs(TOPIC, partition))
    output_ends = cluster.wait_for_replicas_in_sync(OUTPUT_TOPIC)
    outputs, output_errors = read_committed_everything(cluster, output_ends, OUTPUT_TOPIC)
    problems += check_exactly_once(inputs, [read.value for read in outputs]) + output_errors
    assert not problems, f"{len(problems)} violations, first 20:\n" + "\n".join(problems[:20]) + f"\n{run}"

    # The frozen producer: the coordinator aborted its transaction (never committed), and the producer was fenced for
    # good (a fatal error). librdkafka reports the coordinator's PRODUCER_FENCED as _FENCED, at the frozen transaction's
    # commit; when that commit got an abortable error instead, the abort went through and the next transaction is
    # fenced. Weir answers INVALID_TXN_STATE (also fatal, also safe) where Kafka answers PRODUCER_FENCED when the id's
    # coordinator loaded the state after the timeout abort: it takes the loaded abort for the producer's own EndTxn.
    frozen_ended, frozen_events = histories["p3"]
    frozen_number = next(event["txn"] for event in frozen_events if event["event"] == "frozen")
    assert all(t.outcome != COMMITTED for t in frozen_ended if t.key.number >= frozen_number), f"p3 committed past its transaction timeout; {run}"
    fatal = [event for event in frozen_events if event["event"] == "fatal"]
    assert fatal and fatal[0]["fatal"] and fatal[0]["txn"] in (frozen_number, frozen_number + 1), f"p3 was not fenced; {run}"
    assert fatal[0]["error"] in FENCED_ERRORS, f"p3 ended with an unexpected error; {run}"

    # Liveness: the producers that were not frozen kept committing through the faults, and knew every outcome.
    assert all(codes[producer.name] == 0 for producer in running), run
    assert all(t.outcome in (COMMITTED, ABORTED) for producer in running for t in histories[producer.name][0]), run
    assert sum(1 for t in transactions if t.outcome == COMMITTED) > 0 and len(reads) > 0, run
    assert worker_code == 0 and worker.committed_inputs() == CTP_INPUTS, run

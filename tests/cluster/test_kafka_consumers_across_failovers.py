"""Stock librdkafka consumers follow failovers (issue 14, KIP-320): a group consumer reads a
replicated topic through the brokers' Kafka listeners while partition leaders are killed -9.

librdkafka sends its leader epoch in every Fetch and, after a leader change, asks the new leader
with OffsetForLeaderEpoch where its epoch ended, truncating its position if the log diverged.
A broker that answered with a wrong epoch, or served a tail it later lost, would show here as a
record read at an offset that holds something else in the final log, a position that jumps
back (an OFFSET_OUT_OF_RANGE reset to the beginning) or forward (a skipped record), or a
commit beyond the log.

One run: an SDK producer and a librdkafka producer (both idempotent, acks=all) write while the
nemesis of test_jepsen_kill_leaders kills leaders; a librdkafka consumer in a group (classic
protocol) reads and commits after each batch. After the faults it reads up to the end and
closes. More records are written; a second consumer in the same group resumes at the
committed offsets and reads the rest exactly once, in order. ``WEIR_JEPSEN_SEED`` replays a run.
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Mapping

import pytest
from confluent_kafka import Consumer as LibrdkafkaConsumer
from confluent_kafka import Producer as LibrdkafkaProducer
from confluent_kafka import TopicPartition

from tests.cluster.test_jepsen_kill_leaders import PARTITIONS, TIMINGS, TOPIC, kill_leaders_for
from tests.cluster.workload import (
    ConsumedLog,
    GroupConsumerLog,
    GroupConsumerWorkload,
    ProducerWorkload,
    check_acknowledged_records_read_back,
    check_replicas_agree,
    deliver,
    record_value,
)
from tests.support.real_cluster import RealCluster, ReplicaLog

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow, pytest.mark.timeout(420)]

GROUP = "kip320"
NEMESIS_SECONDS = 15.0  # faults are injected for at least this long
MIN_KILLS = 3  # ... and until this many leaders were killed
QUIET_PRODUCE_SECONDS = 2.0  # producing goes on this long after the last fault
CATCH_UP_SECONDS = 90.0  # longest a consumer takes to reach the end offsets once the faults are over
RECORDS_AFTER = 50  # written to each partition after the first consumer closed
# librdkafka's defaults are tuned for long-lived clusters: find a failed-over leader quickly.
FAST_FAILOVER = {"topic.metadata.refresh.interval.ms": 1000, "reconnect.backoff.max.ms": 500}


def test_group_consumer_reads_no_divergent_tail_and_resumes_at_its_commits_across_leader_kills(start_cluster) -> None:  # type: ignore[no-untyped-def]
    seed = int(os.environ.get("WEIR_JEPSEN_SEED") or random.SystemRandom().randrange(2**32))
    cluster: RealCluster = start_cluster(timings=TIMINGS)
    cluster.create_tenant()
    cluster.create_topic(TOPIC, PARTITIONS, 3, {"min.insync.replicas": "2"})
    kafka_config = cluster.kafka_client_config(**FAST_FAILOVER)

    producers = [
        ProducerWorkload(cluster.client_config(), TOPIC, PARTITIONS, "sdk").start(),
        ProducerWorkload(kafka_config, TOPIC, PARTITIONS, "rdk", producer_class=LibrdkafkaProducer).start(),
    ]
    with GroupConsumerWorkload(
        {**kafka_config, "client.id": "first"}, TOPIC, GROUP, consumer_class=LibrdkafkaConsumer, topic_partition_class=TopicPartition
    ).start() as first:
        try:
            history = kill_leaders_for(cluster, random.Random(seed), NEMESIS_SECONDS, min_kills=MIN_KILLS)
            read_during_faults = sum(first.positions().values())
            time.sleep(QUIET_PRODUCE_SECONDS)
        finally:
            ledgers = [producer.stop() for producer in producers]
        run = f"seed {seed}; {len(history)} kills:\n  " + "\n  ".join(history) + "\n" + "\n".join(ledger.summary() for ledger in ledgers)
        end_offsets = cluster.wait_for_replicas_in_sync(TOPIC)
        cluster.wait_until(
            lambda: all(first.positions().get(partition, 0) >= end for partition, end in end_offsets.items()),
            f"the first consumer at the end offsets {end_offsets} (at {first.positions()}); {run}",
            CATCH_UP_SECONDS,
        )
    log = first.log
    assignments = sum(kind == "assign" for kind, _ in log.events)
    run += f"\nfirst consumer: {sum(len(records) for records in log.records.values())} records read in {assignments} assignments, errors {log.errors[:5]}"
    assert len(history) >= MIN_KILLS, f"the nemesis ran too few kills to prove anything; {run}"
    assert read_during_faults > 0, f"the consumer read nothing while leaders were killed; {run}"
    assert all(not ledger.failed and set(ledger.acknowledged) == set(ledger.sent) for ledger in ledgers), f"records never acknowledged; {run}"

    replicas = {partition: cluster.replica_logs(TOPIC, partition) for partition in range(PARTITIONS)}
    problems = check_acknowledged_records_read_back(ledgers, ConsumedLog(records=log.records))
    for partition, logs in replicas.items():
        problems += check_replicas_agree(partition, logs) + check_read_in_final_log(partition, log.records.get(partition, []), logs)
    problems += check_positions_move_forward(log) + check_commits(log, end_offsets)
    assert not problems, f"{len(problems)} violations, first 20:\n" + "\n".join(problems[:20]) + f"\n{run}"

    # The rest: written after the first consumer left, read by a second one in the same group.
    producer = LibrdkafkaProducer({**kafka_config, "enable.idempotence": True, "acks": "all", "linger.ms": 5})
    try:
        for partition in range(PARTITIONS):
            reports = deliver(producer, TOPIC, partition, [record_value(f"after{partition}", sequence) for sequence in range(RECORDS_AFTER)])
            assert all(error is None for error, _ in reports), f"partition {partition}: {reports[:3]}"
    finally:
        producer.flush(10)
    new_end = cluster.wait_for_replicas_in_sync(TOPIC)
    committed = committed_offsets({**kafka_config, "group.id": GROUP}, PARTITIONS)
    assert committed == end_offsets, f"the group's committed offsets {committed} are not where the first consumer stopped {end_offsets}; {run}"

    with GroupConsumerWorkload(
        {**kafka_config, "client.id": "second"}, TOPIC, GROUP, consumer_class=LibrdkafkaConsumer, topic_partition_class=TopicPartition
    ).start() as second:
        cluster.wait_until(
            lambda: all(second.positions().get(partition, committed[partition]) >= end for partition, end in new_end.items()),
            f"the second consumer at the end offsets {new_end} (at {second.positions()}); {run}",
            CATCH_UP_SECONDS,
        )
    for partition in range(PARTITIONS):
        final = cluster.replica_logs(TOPIC, partition)
        problems += check_replicas_agree(partition, final)
        read = second.log.records.get(partition, [])
        if [offset for offset, _ in read] != list(range(committed[partition], new_end[partition])):
            problems.append(
                f"partition {partition}: the second consumer read offsets {summarize([offset for offset, _ in read])}, "
                f"not each of {committed[partition]}..{new_end[partition] - 1} once in order"
            )
        problems += check_read_in_final_log(partition, read, final)
    assert not problems, f"{len(problems)} violations, first 20:\n" + "\n".join(problems[:20]) + f"\n{run}\nsecond consumer errors {second.log.errors[:5]}"


def check_read_in_final_log(partition: int, read: list[tuple[int, bytes]], replicas: list[ReplicaLog]) -> list[str]:
    """Every record read is the record each replica's final log holds at that offset: a consumer
    that read a tail later truncated (a divergent leader's) saw a value the final log lacks."""
    problems = []
    for replica in replicas:
        wrong = [(offset, value) for offset, value in read if replica.values.get(offset) != value]
        if wrong:
            offset, value = wrong[0]
            problems.append(
                f"partition {partition}: {len(wrong)} records read are not in broker {replica.node_id}'s final log (end {replica.end_offset}), "
                f"first offset {offset} read {value!r}, log holds {replica.values.get(offset)!r}"
            )
    return problems


def check_positions_move_forward(log: GroupConsumerLog) -> list[str]:
    """Within one assignment each partition's offsets strictly increase with no gap (the topic
    has no control records); after a new assignment a partition resumes at or after its last
    acknowledged commit and no later than the offset after what was read (nothing skipped)."""
    problems = []
    committed: dict[int, int] = {}
    position: dict[int, int] = {}  # offset after the last record read
    assignment = 0
    for kind, offsets in log.events:
        if kind == "assign":
            assignment += 1
            for partition in offsets:
                position.pop(partition, None)
        elif kind == "commit":
            committed.update(offsets)
        elif kind == "read":
            [(partition, offset)] = offsets.items()
            if partition in position:
                if offset != position[partition]:
                    problems.append(f"partition {partition}: assignment {assignment} read offset {offset} after {position[partition] - 1}")
            elif not committed.get(partition, 0) <= offset <= max(committed.get(partition, 0), last_read(log, partition, offset)):
                problems.append(f"partition {partition}: assignment {assignment} resumed at {offset}, its last commit was {committed.get(partition)}")
            position[partition] = offset + 1
    return problems


def last_read(log: GroupConsumerLog, partition: int, before: int) -> int:
    """The offset after the highest record of ``partition`` read below ``before`` (0 if none)."""
    return max((offset + 1 for offset, _ in log.records.get(partition, []) if offset < before), default=0)


def check_commits(log: GroupConsumerLog, end_offsets: Mapping[int, int]) -> list[str]:
    """Every acknowledged commit is within the log, and the last one covers what had been read before it was sent."""
    problems = [
        f"commit {offsets} beyond the log end {dict(end_offsets)}"
        for kind, offsets in log.events
        if kind == "commit" and any(offset > end_offsets[partition] for partition, offset in offsets.items())
    ]
    last = committed_after_all(log)
    for partition, read in log.read_before_last_commit().items():
        if last.get(partition, 0) < read:
            problems.append(f"partition {partition}: committed {last.get(partition)} is behind the {read} read before the last commit")
    return problems


def committed_after_all(log: GroupConsumerLog) -> dict[int, int]:
    """Partition -> its latest acknowledged commit (a commit names only the partitions with new reads)."""
    latest: dict[int, int] = {}
    for kind, offsets in log.events:
        if kind == "commit":
            latest.update(offsets)
    return latest


def committed_offsets(config: Mapping[str, object], partitions: int) -> dict[int, int]:
    """The group's committed offsets (OffsetFetch through a consumer that does not join)."""
    consumer = LibrdkafkaConsumer(dict(config))
    try:
        answered = consumer.committed([TopicPartition(TOPIC, partition) for partition in range(partitions)], timeout=30)
    finally:
        consumer.close()
    return {answer.partition: answer.offset for answer in answered}


def summarize(offsets: list[int]) -> str:
    return f"{offsets[:5]}...{offsets[-5:]} ({len(offsets)})" if len(offsets) > 10 else str(offsets)


# ------------------------------------------------------------------ the checks catch what they look for


def consumer_log(events: list[tuple[str, dict[int, int]]]) -> GroupConsumerLog:
    """A GroupConsumerLog of ``events``; the record read at offset N has the value ``vN``."""
    log = GroupConsumerLog()
    for kind, offsets in events:
        log.events.append((kind, offsets))
        if kind == "read":
            [(partition, offset)] = offsets.items()
            log.records[partition].append((offset, b"v%d" % offset))
    return log


def test_checks_accept_a_resume_at_the_last_commit() -> None:
    log = consumer_log([("assign", {0: -1001}), ("read", {0: 0}), ("read", {0: 1}), ("commit", {0: 2}), ("assign", {0: -1001}), ("read", {0: 2})])
    assert check_positions_move_forward(log) == []
    assert check_commits(log, {0: 3}) == []


@pytest.mark.parametrize(
    ("events", "problem"),
    [
        ([("assign", {0: -1001}), ("read", {0: 0}), ("read", {0: 1}), ("commit", {0: 2}), ("assign", {0: -1001}), ("read", {0: 0})], "resumed at 0"),
        ([("assign", {0: -1001}), ("read", {0: 0}), ("read", {0: 2})], "read offset 2 after 0"),
        ([("assign", {0: -1001}), ("read", {0: 0}), ("commit", {0: 1}), ("assign", {0: -1001}), ("read", {0: 5})], "resumed at 5"),
        ([("assign", {0: -1001}), ("read", {0: 3})], "resumed at 3"),
    ],
    ids=["back-before-commit", "gap", "skip-after-reassign", "first-read-not-at-start"],
)
def test_positions_check_finds_a_consumer_moving_back_or_skipping(events: list[tuple[str, dict[int, int]]], problem: str) -> None:
    assert any(problem in found for found in check_positions_move_forward(consumer_log(events)))


def test_commits_check_finds_a_commit_beyond_the_log_or_behind_the_reads() -> None:
    assert any("beyond the log end" in found for found in check_commits(consumer_log([("read", {0: 0}), ("commit", {0: 9})]), {0: 3}))
    assert any("behind" in found for found in check_commits(consumer_log([("read", {0: 0}), ("read", {0: 1}), ("commit", {0: 1})]), {0: 3}))


def test_final_log_check_finds_a_read_of_a_truncated_tail() -> None:
    problems = check_read_in_final_log(0, [(0, b"a"), (1, b"divergent")], [ReplicaLog(1, {0: b"a", 1: b"b"})])
    assert len(problems) == 1 and "first offset 1 read b'divergent'" in problems[0]

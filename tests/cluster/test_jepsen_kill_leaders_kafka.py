"""The Jepsen-style leader-kill run of test_jepsen_kill_leaders.py with stock librdkafka
(confluent-kafka) producers speaking Kafka's wire protocol to the brokers' Kafka listeners.

Two idempotent acks=all librdkafka producers write while the nemesis kills partition leaders
with -9 and restarts them; librdkafka follows the failovers through Kafka's own answers
(NOT_LEADER_OR_FOLLOWER, Metadata refreshes, its idempotent producer's sequence checks).
Everything is read back through the weir SDK's gRPC door, so the run also proves that both
doors serve one log: every acknowledged record at its acknowledged offset, none twice, each
producer's order kept, the replicas byte-for-byte the same.
"""

from __future__ import annotations

import os
import random
import time

import pytest
from confluent_kafka import Producer as LibrdkafkaProducer

from tests.cluster.test_jepsen_kill_leaders import MIN_KILLS, NEMESIS_SECONDS, PARTITIONS, QUIET_PRODUCE_SECONDS, TIMINGS, TOPIC, kill_leaders_for
from tests.cluster.workload import (
    ProducerWorkload,
    check_acknowledged_records_read_back,
    check_consumed_matches_replicas,
    check_no_duplicates,
    check_producer_order,
    check_replicas_agree,
    read_everything,
)

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow, pytest.mark.timeout(360)]


def test_librdkafka_idempotent_producers_lose_and_duplicate_nothing_while_leaders_are_killed(start_cluster) -> None:
    seed = int(os.environ.get("WEIR_JEPSEN_SEED") or random.SystemRandom().randrange(2**32))
    rng = random.Random(seed)
    cluster = start_cluster(timings=TIMINGS)
    cluster.create_tenant()
    cluster.create_topic(TOPIC, PARTITIONS, 3, {"min.insync.replicas": "2"})
    # Find a failed-over leader quickly (librdkafka's defaults are tuned for long-lived clusters).
    config = cluster.kafka_client_config(**{"topic.metadata.refresh.interval.ms": 1000, "reconnect.backoff.max.ms": 500})
    with (
        ProducerWorkload(config, TOPIC, PARTITIONS, "k1", producer_class=LibrdkafkaProducer).start() as first,
        ProducerWorkload(config, TOPIC, PARTITIONS, "k2", producer_class=LibrdkafkaProducer).start() as second,
    ):
        history = kill_leaders_for(cluster, rng, NEMESIS_SECONDS)
        acknowledged_before_quiet = first.acknowledged_count() + second.acknowledged_count()
        time.sleep(QUIET_PRODUCE_SECONDS)
        ledgers = [first.stop(), second.stop()]
    run = f"seed {seed}; {len(history)} kills:\n  " + "\n  ".join(history) + "\n" + "\n".join(ledger.summary() for ledger in ledgers)

    assert len(history) >= MIN_KILLS, f"the nemesis ran too few kills to prove anything; {run}"
    end_offsets = cluster.wait_for_replicas_in_sync(TOPIC)
    consumed = read_everything(cluster.client_config(), TOPIC, end_offsets)
    problems = check_acknowledged_records_read_back(ledgers, consumed) + check_no_duplicates(consumed) + check_producer_order(consumed)
    for partition in range(PARTITIONS):
        replicas = cluster.replica_logs(TOPIC, partition)
        problems += check_replicas_agree(partition, replicas) + check_consumed_matches_replicas(partition, consumed, replicas)
    assert not problems, f"{len(problems)} violations, first 20:\n" + "\n".join(problems[:20]) + f"\n{run}"
    assert acknowledged_before_quiet > 0, run
    assert all(not ledger.failed and not ledger.produce_errors for ledger in ledgers), (
        f"deliveries failed: {[dict(list(ledger.failed.items())[:3]) for ledger in ledgers]}\n{run}"
    )
    assert all(set(ledger.acknowledged) == set(ledger.sent) for ledger in ledgers), f"records never acknowledged; {run}"
    assert not consumed.errors, f"consumer errors {consumed.errors[:5]}; {run}"

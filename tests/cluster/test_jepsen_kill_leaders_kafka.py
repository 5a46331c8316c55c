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

import pytest
from confluent_kafka import Producer as LibrdkafkaProducer

from tests.cluster.test_jepsen_kill_leaders import PARTITIONS, TOPIC, run_jepsen
from tests.cluster.workload import ProducerWorkload
from tests.support.real_cluster import RealCluster

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow, pytest.mark.timeout(360)]


def test_librdkafka_idempotent_producers_lose_and_duplicate_nothing_while_leaders_are_killed(start_cluster) -> None:  # type: ignore[no-untyped-def]
    def producers(cluster: RealCluster) -> list[ProducerWorkload]:
        # Find a failed-over leader quickly (librdkafka's defaults are tuned for long-lived clusters).
        config = cluster.kafka_client_config(**{"topic.metadata.refresh.interval.ms": 1000, "reconnect.backoff.max.ms": 500})
        return [ProducerWorkload(config, TOPIC, PARTITIONS, name, producer_class=LibrdkafkaProducer) for name in ("k1", "k2")]

    run_jepsen(start_cluster, producers)

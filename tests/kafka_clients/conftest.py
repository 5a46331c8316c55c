"""Stock Kafka clients' tests run against a real cluster (controller + two brokers + the test
database) whose brokers also listen for Kafka clients (see tests/conftest.py's start_cluster)."""

from __future__ import annotations

import pytest

from tests.support.real_cluster import RealCluster


@pytest.fixture
def cluster(start_cluster) -> RealCluster:  # type: ignore[no-untyped-def]
    return start_cluster(broker_count=2)


def kafka_bootstrap(cluster: RealCluster) -> str:
    """Every broker's Kafka listener, as a stock client's bootstrap list."""
    return cluster.kafka_bootstrap_servers()

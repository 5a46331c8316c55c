"""A real cluster (controller + two brokers + the test database) whose brokers also listen for
Kafka clients, and the SASL settings a stock client needs to reach it as one tenant."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.real_cluster import ClusterUnavailableError, RealCluster, database_url_for_subprocesses


@pytest.fixture
def cluster(tmp_path: Path, transactional_db: None) -> Iterator[RealCluster]:
    try:
        database_url_for_subprocesses()
    except ClusterUnavailableError as error:
        pytest.skip(str(error))
    started = RealCluster(tmp_path / "cluster", broker_count=2)
    try:
        yield started.start()
    finally:
        print(started.log_tails())  # shown only when the test fails (pytest captures it)
        started.close()


def kafka_bootstrap(cluster: RealCluster) -> str:
    """Every broker's Kafka listener, as a stock client's bootstrap list."""
    return ",".join(broker.kafka_address for broker in cluster.brokers.values())

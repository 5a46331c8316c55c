"""Fixtures of the failover tests: real clusters (controller + brokers as processes), ended
after each test, and their logs attached to the report of a failing test."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.support.real_cluster import ClusterUnavailableError, RealCluster, database_url_for_subprocesses


@pytest.fixture
def start_cluster(request: pytest.FixtureRequest, tmp_path: Path, transactional_db: None) -> Iterator[Callable[..., RealCluster]]:
    """``start_cluster(**RealCluster options)`` -> a started cluster; every process ends after the test.

    Skips on SQLite: the controller process must share the test's database.
    """
    try:
        database_url_for_subprocesses()
    except ClusterUnavailableError as error:
        pytest.skip(str(error))
    clusters: list[RealCluster] = []
    request.node.weir_clusters = clusters

    def start(**options: object) -> RealCluster:
        cluster = RealCluster(tmp_path / f"cluster-{len(clusters)}", **options)  # type: ignore[arg-type]
        clusters.append(cluster)
        return cluster.start()

    try:
        yield start
    finally:
        for cluster in clusters:
            cluster.close()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """A failing test's report ends with the tail of every cluster process's log."""
    outcome = yield
    report = outcome.get_result()
    clusters = getattr(item, "weir_clusters", None)
    if report.failed and clusters:
        for index, cluster in enumerate(clusters):
            report.sections.append((f"weir cluster {index} logs (tails)", cluster.log_tails()))

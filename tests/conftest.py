"""Shared fixtures: real broker processes on random loopback ports, and real clusters
(controller + brokers as processes, :func:`start_cluster`) whose logs end a failing test's report. The test database and
data directory are chosen in ``tests/support/pytest_environment.py`` (loaded by tests/settings.py).

The suite runs in parallel (pyproject's addopts: pytest-xdist, ``-n auto --dist loadscope``;
``pytest -n 0`` runs it in one process). :func:`work_unit` decides what must share a worker: the
tests under a conftest.py with a session-scoped fixture (the Spark session: one JVM, not one per
worker) and the tests of a module with a module-scoped fixture (a cluster or server started once
for them). Everything else is spread test by test, slow tests first, so that no long test starts
last. :func:`pytest_xdist_auto_num_workers` chooses the number of workers.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.support.processes import BrokerProcess
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


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerProcess]:
    """A running standalone broker with its own data directory; stopped after the test."""
    process = BrokerProcess(tmp_path / "broker-data").start()
    try:
        yield process
    finally:
        process.stop()


@pytest.fixture
def broker_factory(tmp_path: Path) -> Iterator:
    """Start brokers with custom configs: ``broker_factory(configs={...})``; all stopped after the test."""
    started: list[BrokerProcess] = []

    def start(**options: object) -> BrokerProcess:
        process = BrokerProcess(tmp_path / f"broker-data-{len(started)}", **options)  # type: ignore[arg-type]
        started.append(process)
        return process.start()

    yield start
    for process in started:
        process.stop()


# A fixture of one of these scopes, defined in a test module, makes its module one unit of work
# (its tests share what it started); defined in a conftest.py below tests/, its directory.
MODULE_SCOPES = ("module", "class")
DIRECTORY_SCOPES = ("package", "session")
_SCOPE = re.compile(r"""scope\s*=\s*["'](session|package|module|class)["']""")


@functools.cache
def _fixture_scopes(path: Path) -> frozenset[str]:
    """The scopes of the fixtures ``path`` defines (read from its text: the controller collects nothing)."""
    try:
        return frozenset(_SCOPE.findall(path.read_text(encoding="utf-8")))
    except OSError:
        return frozenset()


def work_unit(nodeid: str, root: Path) -> str:
    """The unit of work a test belongs to: the directory of a conftest.py with a session- or
    package-scoped fixture (tests/spark_pipelines: one Spark session, one JVM, on one worker), else
    its module when the module (or a conftest above it) has a module- or class-scoped fixture, else
    the test alone."""
    module = nodeid.split("::", 1)[0]
    directory = (root / module).parent
    conftests = [parent / "conftest.py" for parent in [directory, *directory.parents] if parent != root / "tests" and root / "tests" in parent.parents]
    for conftest in reversed(conftests):  # the outermost shared directory wins
        if _fixture_scopes(conftest) & set(DIRECTORY_SCOPES):
            return conftest.parent.relative_to(root).as_posix()
    if any(_fixture_scopes(path) & set(MODULE_SCOPES) for path in [root / module, *conftests]):
        return module
    return nodeid


def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object | None:
    """``--dist loadscope`` (pyproject's addopts) with :func:`work_unit` as the scope. (xdist's own
    ``loadgroup`` cannot group here: it renames test ids in a way pytest 9 no longer honours.)"""
    if config.getvalue("dist") != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class SharedFixtureScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return work_unit(nodeid, config.rootpath)

    return SharedFixtureScheduling(config, log)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """In an xdist worker, slow tests first: xdist hands out the biggest units first, then the
    single tests in collection order, so a long test never starts last. One process keeps the
    files' own order."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        items.sort(key=lambda item: item.get_closest_marker("slow") is None)


# On the 2-core CI machine: most tests wait on subprocesses or timeouts. With 3 workers the CPUs were
# 85 % busy (a /proc/stat sample of a clean-clone run); a fourth fills the waits.
PARALLEL_WORKERS = 4


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """``-n auto`` (pyproject's addopts): PARALLEL_WORKERS for the suite or any directory, one process
    (no workers) when every argument names a file or a test, where starting workers costs more than
    it saves. PYTEST_XDIST_AUTO_NUM_WORKERS, when set, decides instead (xdist's own rule)."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None
    arguments = [argument.split("::", 1)[0] for argument in config.args]
    if arguments and all(Path(argument).is_file() for argument in arguments):
        return 0
    return PARALLEL_WORKERS

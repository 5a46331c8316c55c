"""The test harness itself: ports and data directories that pytest-xdist workers never share, a
broker that moves off a port taken before it could bind it, and waiting on a condition."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from tests.conftest import PARALLEL_WORKERS, pytest_xdist_auto_num_workers, work_unit
from tests.support import ports, processes
from tests.support.pytest_environment import _worker_data_dir
from tests.support.waiting import wait_until


def _as_worker(monkeypatch: pytest.MonkeyPatch, worker: str, count: int) -> None:
    monkeypatch.setenv("PYTEST_XDIST_WORKER", worker)
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", str(count))


def test_free_ports_lie_below_the_ephemeral_range_and_are_free(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ports, "_ephemeral_low", lambda: 32_768)
    chosen = [ports.free_port() for _ in range(50)]
    assert all(ports.LOWEST_PORT <= port < 32_768 for port in chosen)
    assert len(set(chosen)) == len(chosen)  # none handed out twice in a row of picks
    assert all(ports.is_free(port) for port in chosen)


def test_each_xdist_worker_draws_ports_from_its_own_stripe(monkeypatch: pytest.MonkeyPatch) -> None:
    stripes = []
    for index in range(4):
        _as_worker(monkeypatch, f"gw{index}", 4)
        stripes.append(set(ports.port_stripe()))
        assert ports.free_port() in stripes[-1]
    assert all(not stripes[a] & stripes[b] for a in range(4) for b in range(a + 1, 4))
    assert len(set.union(*stripes)) > 4 * 1_000


def test_a_port_in_use_is_not_handed_out(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as taken:
        taken.bind((ports.LOOPBACK, ports.free_port()))
        taken.listen()
        port = taken.getsockname()[1]
        assert not ports.is_free(port)
        monkeypatch.setattr(ports, "port_stripe", lambda: range(port, port + 2))
        monkeypatch.setattr(ports, "_recent", type(ports._recent)(maxlen=ports.REMEMBERED))
        assert ports.free_port() == port + 1


def test_a_broker_whose_chosen_port_was_taken_starts_on_another(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as squatter:  # another program binds the port between the choice and the broker's start
        squatter.bind((ports.LOOPBACK, ports.free_port()))
        squatter.listen()
        taken = squatter.getsockname()[1]
        choices = iter([taken])
        monkeypatch.setattr(processes, "free_port", lambda: next(choices, None) or ports.free_port())
        broker = processes.BrokerProcess(tmp_path / "data")
        assert broker.port == taken
        try:
            broker.start()
            assert broker.port != taken and broker.is_running()
            broker.restart()  # a restart keeps the port it moved to
            assert broker.port != taken and broker.is_running()
        finally:
            broker.stop()


def test_a_broker_given_a_taken_port_fails_to_start_saying_so(tmp_path: Path) -> None:
    with socket.socket() as squatter:
        squatter.bind((ports.LOOPBACK, ports.free_port()))
        squatter.listen()
        taken = squatter.getsockname()[1]
        with pytest.raises(RuntimeError, match=f"Failed to bind to address 127.0.0.1:{taken}"):
            processes.BrokerProcess(tmp_path / "data", port=taken).start()


def test_each_xdist_worker_gets_its_own_data_directory_beneath_the_runs(tmp_path: Path) -> None:
    run = str(tmp_path)
    first, second = _worker_data_dir(run, "gw0"), _worker_data_dir(run, "gw1")
    assert first != second and Path(first).is_dir() and Path(first).parent == tmp_path
    assert _worker_data_dir(first, "gw0") == first  # a process the worker starts keeps the worker's


def test_wait_until_returns_the_first_truthy_value() -> None:
    answers = iter([0, None, "", 7, 8])
    assert wait_until(lambda: next(answers), "a value") == 7


def test_wait_until_names_what_never_happened() -> None:
    with pytest.raises(TimeoutError, match=r"the sky fell: not after 0.05 s \(last seen: False\)"):
        wait_until(lambda: False, "the sky fell", timeout=0.05)


def test_tests_sharing_a_spark_session_or_a_modules_fixture_are_one_unit_of_work(tmp_path: Path) -> None:
    (tmp_path / "tests" / "spark").mkdir(parents=True)
    (tmp_path / "tests" / "spark" / "conftest.py").write_text('@pytest.fixture(scope="session")\ndef spark(): ...\n')
    (tmp_path / "tests" / "broker").mkdir()
    (tmp_path / "tests" / "broker" / "test_shared.py").write_text("@pytest.fixture(scope='module')\ndef cluster(): ...\n")
    (tmp_path / "tests" / "broker" / "test_alone.py").write_text("def test_a(broker): ...\n")
    assert work_unit("tests/spark/test_jobs.py::test_a", tmp_path) == "tests/spark"
    assert work_unit("tests/broker/test_shared.py::test_a[1]", tmp_path) == "tests/broker/test_shared.py"
    assert work_unit("tests/broker/test_alone.py::test_a", tmp_path) == "tests/broker/test_alone.py::test_a"


def test_named_files_run_in_one_process_and_directories_in_parallel(monkeypatch: pytest.MonkeyPatch, pytestconfig: pytest.Config) -> None:
    monkeypatch.delenv("PYTEST_XDIST_AUTO_NUM_WORKERS", raising=False)
    monkeypatch.setattr(pytestconfig, "args", ["tests/test_harness.py::test_wait_until_returns_the_first_truthy_value"])
    assert pytest_xdist_auto_num_workers(pytestconfig) == 0
    monkeypatch.setattr(pytestconfig, "args", ["tests/test_harness.py", "tests/weir"])
    assert pytest_xdist_auto_num_workers(pytestconfig) == PARALLEL_WORKERS

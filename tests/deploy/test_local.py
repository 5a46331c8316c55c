"""`make up` settings from the environment, and the supervisor restarting a dead child."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

import pytest

from deploy.local import StackSettings, child_environment
from deploy.processes import ChildFailedError, SupervisedProcess
from webapp.runtime import celery_broker_url
from tests.support.processes import free_port

def test_defaults_give_three_brokers_on_consecutive_ports(tmp_path: Path) -> None:
    settings = StackSettings.from_environment({"WEIR_DATA_DIR": str(tmp_path)})
    assert settings.broker_count == 3
    assert settings.bootstrap_servers == "127.0.0.1:9092,127.0.0.1:9093,127.0.0.1:9094"
    assert settings.web_url == "http://127.0.0.1:8000"
    assert settings.internal_token_file == tmp_path / "secrets" / "internal-token"

@pytest.mark.parametrize(
    "environment",
    [{"WEIR_BROKERS": "0"}, {"WEIR_BROKERS": "many"}, {"WEIR_HTTP_PORT": "http"}, {"WEIR_BROKER_BASE_PORT": "65535", "WEIR_BROKERS": "2"}],
)
def test_bad_settings_stop_with_a_message(environment: dict[str, str]) -> None:
    with pytest.raises(SystemExit):
        StackSettings.from_environment(environment)

def test_children_share_the_data_dir_and_know_the_brokers(tmp_path: Path) -> None:
    settings = StackSettings.from_environment({"WEIR_DATA_DIR": str(tmp_path), "WEIR_BROKERS": "2", "WEIR_BROKER_BASE_PORT": "19092"})
    environment = child_environment(settings, {"PATH": "/usr/bin"})
    assert environment["WEIR_DATA_DIR"] == str(tmp_path)
    assert environment["WEIR_BOOTSTRAP_SERVERS"] == "127.0.0.1:19092,127.0.0.1:19093"
    assert environment["WEIR_PUBLIC_API_URL"] == "http://127.0.0.1:8000"

def test_celery_falls_back_to_the_filesystem_when_redis_does_not_answer(tmp_path: Path) -> None:
    url, options = celery_broker_url(f"redis://127.0.0.1:{free_port()}/0", tmp_path)
    assert url == "filesystem://"
    # Every folder kombu uses lies in the data directory, none in the working directory.
    for option in ("data_folder_in", "data_folder_out", "processed_folder", "control_folder"):
        assert Path(options[option]).is_dir() and tmp_path in Path(options[option]).parents

def test_supervisor_restarts_a_child_that_dies(tmp_path: Path) -> None:
    marker = tmp_path / "starts"
    # Each start appends a line, then the child exits at once: the supervisor must restart it.
    script = f"open({str(marker)!r}, 'a').write('x\\n')"
    child = SupervisedProcess("flaky", [sys.executable, "-c", script], log_path=tmp_path / "flaky.log", environment={})
    child.start()

    supervisor = threading.Thread(target=child.supervise, daemon=True)
    supervisor.start()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and (child.restarts < 1 or len(marker.read_text().splitlines()) < 2):
        time.sleep(0.05)
    child.stop()
    supervisor.join(timeout=5)
    assert child.restarts >= 1
    assert len(marker.read_text().splitlines()) >= 2

def test_child_that_exits_while_starting_is_reported(tmp_path: Path) -> None:
    child = SupervisedProcess(
        "broken", [sys.executable, "-c", "raise SystemExit(3)"], log_path=tmp_path / "broken.log", environment={}, ready=lambda: False
    )
    with pytest.raises(ChildFailedError, match="exited with code 3"):
        child.start()

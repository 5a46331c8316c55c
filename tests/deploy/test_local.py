"""`make up` settings from the environment, what it starts in which order, and the supervisor restarting a dead child."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

import pytest

from broker_nodes.config import parse_settings
from deploy.local import StackSettings, broker_processes, child_environment, failover_instructions, startup_stages
from deploy.processes import ChildFailedError, SupervisedProcess
from tests.support.processes import free_port
from webapp.runtime import celery_broker_url


def test_defaults_give_three_brokers_on_consecutive_ports(tmp_path: Path) -> None:
    settings = StackSettings.from_environment({"WEIR_DATA_DIR": str(tmp_path)})
    assert settings.broker_count == 3
    assert settings.bootstrap_servers == "127.0.0.1:9092,127.0.0.1:9093,127.0.0.1:9094"
    assert settings.web_url == "http://127.0.0.1:8000"
    assert settings.internal_token_file == tmp_path / "secrets" / "internal-token"
    assert settings.controller_quorum == "127.0.0.1:9190,127.0.0.1:9191"
    assert settings.pid_file("broker 2") == tmp_path / "run" / "broker-2.pid"
    # A dead broker comes back only after the controller has fenced it (its closed connection,
    # after the 0.3 s grace) and a while longer to watch the failover.
    assert settings.session_timeout_ms == 9000
    assert settings.broker_restart_delay > settings.disconnect_grace_ms / 1000 == 0.3
    assert StackSettings.from_environment({"WEIR_DATA_DIR": str(tmp_path), "WEIR_CONTROLLER_BROKER_DISCONNECT_GRACE_MS": "2000"}).broker_restart_delay > 2
    with pytest.raises(SystemExit, match="WEIR_CONTROLLER_BROKER_DISCONNECT_GRACE_MS"):
        StackSettings.from_environment({"WEIR_DATA_DIR": str(tmp_path), "WEIR_CONTROLLER_BROKER_DISCONNECT_GRACE_MS": "soon"})


@pytest.mark.parametrize(
    "environment",
    [
        {"WEIR_BROKERS": "0"},
        {"WEIR_BROKERS": "many"},
        {"WEIR_HTTP_PORT": "http"},
        {"WEIR_BROKER_BASE_PORT": "65535", "WEIR_BROKERS": "2"},
        {"WEIR_CONTROLLER_BASE_PORT": "65535"},
        {"WEIR_BROKER_SESSION_TIMEOUT_MS": "0"},
        {"WEIR_BROKER_SESSION_TIMEOUT_MS": "nine seconds"},
    ],
)
def test_bad_settings_stop_with_a_message(environment: dict[str, str]) -> None:
    with pytest.raises(SystemExit):
        StackSettings.from_environment(environment)


@pytest.mark.parametrize(
    ("environment", "named"),
    [
        ({"WEIR_CONTROLLER_BASE_PORT": "9093"}, "WEIR_BROKER_BASE_PORT and WEIR_CONTROLLER_BASE_PORT both give port 9093"),
        ({"WEIR_HTTP_PORT": "9191"}, "WEIR_CONTROLLER_BASE_PORT and WEIR_HTTP_PORT both give port 9191"),
        ({"WEIR_HTTP_PORT": "9094"}, "WEIR_BROKER_BASE_PORT and WEIR_HTTP_PORT both give port 9094"),
    ],
)
def test_ports_shared_by_two_processes_are_refused_naming_both_settings(environment: dict[str, str], named: str) -> None:
    with pytest.raises(SystemExit, match=named):
        StackSettings.from_environment(environment)


def test_controllers_start_first_then_brokers_then_the_control_plane(tmp_path: Path) -> None:
    settings = StackSettings.from_environment({"WEIR_DATA_DIR": str(tmp_path), "WEIR_BROKERS": "3"})
    stages = startup_stages(settings, child_environment(settings, {"PATH": "/usr/bin"}))
    names = [[child.name for child in stage.children] for stage in stages]
    assert names == [["controller 1", "controller 2"], ["broker 1", "broker 2", "broker 3"], ["web", "celery worker", "celery beat", "lag monitor"]]
    controllers = stages[0].children
    assert [child.command[child.command.index("--listen") + 1] for child in controllers] == ["127.0.0.1:9190", "127.0.0.1:9191"]
    assert all(child.command[1:3] == ["manage.py", "run_controller"] for child in controllers)
    # Neither controller counts as started before one of them serves (a standby serves nothing).
    assert all(child.ready is not None for child in controllers)


def test_every_child_has_a_pid_file_under_the_run_directory(tmp_path: Path) -> None:
    settings = StackSettings.from_environment({"WEIR_DATA_DIR": str(tmp_path), "WEIR_BROKERS": "2"})
    children = [child for stage in startup_stages(settings, child_environment(settings, {})) for child in stage.children]
    pid_files = [child.pid_file for child in children]
    assert pid_files == [
        tmp_path / "run" / f"{stem}.pid"
        for stem in ("controller-1", "controller-2", "broker-1", "broker-2", "web", "celery-worker", "celery-beat", "lag-monitor")
    ]


def test_brokers_name_both_controllers_and_wait_to_be_registered(tmp_path: Path) -> None:
    settings = StackSettings.from_environment({"WEIR_DATA_DIR": str(tmp_path), "WEIR_BROKER_SESSION_TIMEOUT_MS": "4000"})
    environment = child_environment(settings, {"WEIR_BROKER_TLS_CA": "/tmp/ca.pem", "WEIR_BROKER_LOG_SEGMENT_BYTES": "1048576"})
    controllers, brokers, control_plane = (stage.children for stage in startup_stages(settings, environment))
    for broker in brokers:
        assert broker.command[broker.command.index("--controller") + 1] == "127.0.0.1:9190,127.0.0.1:9191"
        assert broker.ready is not None
        assert broker.restart_delay == settings.broker_restart_delay
        # Control-plane settings sharing the WEIR_BROKER_ prefix would be refused by a broker;
        # its own settings still reach it.
        assert "WEIR_BROKER_SESSION_TIMEOUT_MS" not in broker.environment
        assert "WEIR_BROKER_TLS_CA" not in broker.environment
        assert broker.environment["WEIR_BROKER_LOG_SEGMENT_BYTES"] == "1048576"
    # The controllers fence a silent broker after the stack's session timeout.
    assert all(child.environment["WEIR_BROKER_SESSION_TIMEOUT_MS"] == "4000" for child in controllers + control_plane)


def test_local_brokers_create_unknown_topics_as_kafka_does_unless_told_otherwise(tmp_path: Path) -> None:
    settings = StackSettings.from_environment({"WEIR_DATA_DIR": str(tmp_path), "WEIR_BROKERS": "2"})
    for environment, expected in (({"PATH": "/usr/bin"}, True), ({"WEIR_BROKER_AUTO_CREATE_TOPICS_ENABLE": "false"}, False)):
        for broker in broker_processes(settings, child_environment(settings, environment)):
            # What the broker process itself reads from that environment (and would refuse if unknown).
            values, _ = parse_settings([], broker.environment)
            assert values["auto.create.topics.enable"] is expected
    # Production deploy files keep the broker's default (off): topics come from the control plane.
    deploy_dir = Path(__file__).resolve().parents[2] / "deploy"
    for path in [*deploy_dir.glob("kubernetes/*.yaml"), *deploy_dir.glob("systemd/*"), deploy_dir / "docker-compose.yml"]:
        assert "AUTO_CREATE_TOPICS" not in path.read_text(encoding="utf-8"), path


@pytest.mark.parametrize(("brokers", "killed"), [("3", "broker-2.pid"), ("1", "broker-1.pid")])
def test_final_banner_says_how_to_kill_a_broker_and_where_to_watch(tmp_path: Path, brokers: str, killed: str) -> None:
    settings = StackSettings.from_environment({"WEIR_DATA_DIR": str(tmp_path), "WEIR_BROKERS": brokers})
    banner = failover_instructions(settings)
    assert f"kill -9 $(cat {tmp_path / 'run' / killed})" in banner
    assert "http://127.0.0.1:8000/brokers/" in banner
    assert "http://127.0.0.1:8000/topics/demo/" in banner
    assert f"{settings.broker_restart_delay:g} s" in banner


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
    child = SupervisedProcess("broken", [sys.executable, "-c", "raise SystemExit(3)"], log_path=tmp_path / "broken.log", environment={}, ready=lambda: False)
    with pytest.raises(ChildFailedError, match="exited with code 3"):
        child.start()

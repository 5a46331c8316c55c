"""`make up` stops gracefully: the web process under gunicorn's graceful timeout, brokers given
time for their controlled shutdown and final fsync before any SIGKILL, in the right order."""

from __future__ import annotations

from pathlib import Path

from deploy.local import StackSettings, broker_stop_timeout, child_environment, startup_stages, stop_tiers, web_command
from deploy.processes import STOP_TIMEOUT_SECONDS
from webapp import gunicorn_config


def test_web_runs_under_the_gunicorn_config_whose_graceful_timeout_is_below_the_supervisors(tmp_path: Path) -> None:
    settings = StackSettings.from_environment({"WEIR_DATA_DIR": str(tmp_path)})
    command = web_command(settings)
    assert command[command.index("--config") + 1] == "python:webapp.gunicorn_config"
    assert gunicorn_config.graceful_timeout < STOP_TIMEOUT_SECONDS


def test_brokers_get_their_controlled_shutdown_timeout_and_a_margin_before_sigkill(tmp_path: Path) -> None:
    settings = StackSettings.from_environment({"WEIR_DATA_DIR": str(tmp_path), "WEIR_BROKERS": "2"})
    stages = startup_stages(settings, child_environment(settings, {"PATH": "/usr/bin"}))
    brokers = [child for stage in stages for child in stage.children if child.name.startswith("broker")]
    assert [broker.stop_timeout for broker in brokers] == [45.0, 45.0]
    assert broker_stop_timeout({"WEIR_BROKER_CONTROLLED_SHUTDOWN_TIMEOUT_MS": "5000"}) == 20.0
    others = [child for stage in stages for child in stage.children if not child.name.startswith("broker")]
    assert {child.stop_timeout for child in others} == {STOP_TIMEOUT_SECONDS}


def test_children_are_stopped_control_plane_first_brokers_next_and_the_standby_before_the_active_controller(tmp_path: Path) -> None:
    # `run` stops the control plane together (beat with it: no pipeline run starts meanwhile),
    # then the brokers together, then one controller at a time.
    settings = StackSettings.from_environment({"WEIR_DATA_DIR": str(tmp_path), "WEIR_BROKERS": "2"})
    stages = startup_stages(settings, child_environment(settings, {"PATH": "/usr/bin"}))
    started = [child for stage in stages for child in stage.children]
    tiers = [[child.name for child in tier] for tier in stop_tiers(started)]
    assert tiers == [["web", "celery worker", "celery beat", "lag monitor"], ["broker 1", "broker 2"], ["controller 2"], ["controller 1"]]

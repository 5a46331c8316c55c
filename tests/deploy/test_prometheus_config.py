"""deploy/prometheus: the scrape config reaches the ports `make up` gives, the alert rules cover
what operators page on, and every metric a rule names is one the real processes serve: a
broker process started with --metrics-port, the controller's registry and the web process's
/metrics. With promtool installed, it checks both files as Prometheus would load them."""

from __future__ import annotations

import re
import shutil
import subprocess
import urllib.request
from pathlib import Path

import pytest
import yaml
from django.test import Client
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from deploy.local import StackSettings, child_environment, startup_stages
from tests.support.processes import BrokerProcess, free_port
from webapp.controller import metrics as controller_metrics

PROMETHEUS_DIRECTORY = Path(__file__).resolve().parents[2] / "deploy" / "prometheus"
CONFIG = PROMETHEUS_DIRECTORY / "prometheus.yml"
ALERTS = PROMETHEUS_DIRECTORY / "alerts.yml"
PAGED_CONDITIONS = {"WeirOfflinePartitions", "WeirUnderMinIsr", "WeirConsumerGroupLagError", "WeirBrokerDiskNearlyFull", "WeirBrokerDown"}
PROMETHEUS_MADE = {"up"}  # series Prometheus itself records for every target
SEVERITIES = {"page", "ticket"}


def _rules() -> list[dict]:
    document = yaml.safe_load(ALERTS.read_text(encoding="utf-8"))
    return [rule for group in document["groups"] for rule in group["rules"]]


def metric_names(expression: str) -> set[str]:
    """The series names a PromQL expression selects: quoted strings and label matchers removed,
    then every word naming a Weir metric (or Prometheus's own ``up``)."""
    bare = re.sub(r'"[^"]*"', "", expression)
    bare = re.sub(r"\{[^}]*\}", "", bare)
    words = set(re.findall(r"[a-zA-Z_:][a-zA-Z0-9_:]*", bare))
    return {word for word in words if word.startswith("weir_") or word in PROMETHEUS_MADE}


def _names(exposition: str) -> set[str]:
    """Family and sample names of a Prometheus text exposition (``weir_x`` and ``weir_x_total``)."""
    names: set[str] = set()
    for family in text_string_to_metric_families(exposition):
        names.add(family.name)
        names.update(sample.name for sample in family.samples)
    return names


class MeteredBroker(BrokerProcess):
    """A broker process whose command line asks for its metrics endpoint."""

    def __init__(self, data_dir: Path, metrics_port: int) -> None:
        super().__init__(data_dir, configs={"offsets.topic.num.partitions": "1"})
        self.metrics_port = metrics_port

    def command(self) -> list[str]:
        return [*super().command(), "--metrics-port", str(self.metrics_port)]


@pytest.fixture(scope="module")
def broker_exposition(tmp_path_factory: pytest.TempPathFactory) -> str:
    broker = MeteredBroker(tmp_path_factory.mktemp("prometheus") / "data", free_port())
    broker.start()
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{broker.metrics_port}/metrics", timeout=5) as response:
            return response.read().decode("utf-8")
    finally:
        broker.stop()


class _ActiveController:
    controller_epoch = 1

    def live_broker_count(self) -> int:
        return 0


def test_the_scrape_config_reaches_every_process_of_make_up_at_its_default_ports() -> None:
    config = yaml.safe_load(CONFIG.read_text(encoding="utf-8"))
    assert [PROMETHEUS_DIRECTORY / name for name in config["rule_files"]] == [ALERTS]
    targets = {job["job_name"]: [target for block in job["static_configs"] for target in block["targets"]] for job in config["scrape_configs"]}
    stack = StackSettings.from_environment({})
    assert targets == {
        "weir-web": [f"{stack.host}:{stack.http_port}"],
        "weir-controller": [f"{stack.host}:{stack.controller_metrics_port(controller_id)}" for controller_id in stack.controller_ids],
        "weir-broker": [f"{stack.host}:{stack.broker_metrics_port(node_id)}" for node_id in stack.node_ids],
        "weir-celery-worker": [f"{stack.host}:{stack.worker_metrics_port}"],
    }


def _metrics_ports(environment: dict[str, str]) -> dict[str, str]:
    """Child name -> the metrics port `make up` gives it (flag or, for the worker, environment)."""
    settings = StackSettings.from_environment(environment)
    children = [child for stage in startup_stages(settings, child_environment(settings, {})) for child in stage.children]
    ports = {child.name: child.command[child.command.index("--metrics-port") + 1] for child in children if "--metrics-port" in child.command}
    ports.update({child.name: child.environment["WEIR_WORKER_METRICS_PORT"] for child in children if "WEIR_WORKER_METRICS_PORT" in child.environment})
    return ports


def test_make_up_gives_every_process_its_own_metrics_port_and_0_turns_them_off(tmp_path: Path) -> None:
    ports = _metrics_ports({"WEIR_DATA_DIR": str(tmp_path), "WEIR_BROKERS": "2", "WEIR_METRICS_BASE_PORT": "19300"})
    assert ports == {"controller 1": "19301", "controller 2": "19302", "celery worker": "19309", "broker 1": "19311", "broker 2": "19312"}
    assert set(_metrics_ports({"WEIR_DATA_DIR": str(tmp_path), "WEIR_METRICS_BASE_PORT": "0"}).values()) == {"0"}
    with pytest.raises(SystemExit, match="WEIR_METRICS_BASE_PORT"):
        StackSettings.from_environment({"WEIR_DATA_DIR": str(tmp_path), "WEIR_METRICS_BASE_PORT": "9085"})  # brokers' 9092.. inside it


def test_the_alert_rules_cover_what_operators_page_on() -> None:
    rules = _rules()
    assert {rule["alert"] for rule in rules} >= PAGED_CONDITIONS
    for rule in rules:
        assert rule["expr"].strip() and rule["for"], rule["alert"]
        assert rule["labels"]["severity"] in SEVERITIES, rule["alert"]
        assert rule["annotations"]["summary"], rule["alert"]
    assert all(rule["labels"]["severity"] == "page" for rule in rules if rule["alert"] in PAGED_CONDITIONS)


def test_metric_names_are_read_from_expressions_without_labels_or_functions() -> None:
    assert metric_names('max(weir_a) > 0 or absent(weir_b{status="weir_not_a_metric"})') == {"weir_a", "weir_b"}
    assert metric_names('time() - weir_c > 3 * 3600 and up{job=~"weir-.*"} == 0') == {"weir_c", "up"}


@pytest.mark.django_db
def test_every_metric_the_rules_name_is_served_by_a_real_process(broker_exposition: str) -> None:
    # The controller's event counters, and its state as the active controller reports it (the
    # offline count injected: the real one reads the catalog from the scrape's own thread).
    state = CollectorRegistry()
    state.register(controller_metrics.ControllerStateCollector(_ActiveController, offline_partitions=lambda: 0))
    controller_exposition = generate_latest(controller_metrics.REGISTRY).decode("utf-8") + generate_latest(state).decode("utf-8")
    Client().get("/healthz")  # counted once answered: the next /metrics shows it
    web = Client().get("/metrics")
    assert web.status_code == 200
    served = _names(broker_exposition) | _names(controller_exposition) | _names(web.content.decode("utf-8")) | PROMETHEUS_MADE
    for rule in _rules():
        missing = metric_names(rule["expr"]) - served
        assert not missing, f"{rule['alert']} names metrics no process serves: {sorted(missing)}"
    assert "weir_broker_requests_total" in served and "weir_web_requests_total" in served


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool is not installed (Debian package prometheus)")
def test_promtool_accepts_the_config_and_the_rules() -> None:
    checked = subprocess.run(["promtool", "check", "config", str(CONFIG)], capture_output=True, text=True, timeout=60)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    checked = subprocess.run(["promtool", "check", "rules", str(ALERTS)], capture_output=True, text=True, timeout=60)
    assert checked.returncode == 0, checked.stdout + checked.stderr

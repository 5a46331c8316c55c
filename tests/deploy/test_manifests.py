"""deploy/'s Docker Compose file, Kubernetes manifests, systemd units and Dockerfile run what the
code can run: every process kind is there, each command passes the process's own argument
parser (the broker's, Django's, gunicorn's, Celery's), each environment variable is one the code
reads, and the addresses, ports, probes and volumes of one process agree with the others'."""

from __future__ import annotations

import re
import shlex
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from django.urls import resolve

from broker_nodes.config import BrokerConfigError, parse_settings
from tests.deploy.manifest_checks import (
    DEPLOY,
    REPOSITORY,
    Process,
    check_command,
    compose,
    dockerfile_command,
    dockerfile_instructions,
    env_file,
    kubernetes_documents,
    kubernetes_objects,
    kustomization,
    option_value,
    pod_spec,
    references,
    systemd_unit,
    unknown_variables,
)
from webapp.controller.servicer import CONTROLLER_SERVICE_NAME

README = (DEPLOY / "README.md").read_text()
# The Secret's keys, as deploy/README.md creates them (kubectl create secret ... --from-literal=KEY=...).
SECRET_KEYS = set(re.findall(r"--from-literal=([A-Z_]+)=", README))
COMPOSE_SECRETS = {"POSTGRES_PASSWORD": "compose-db-password", "DJANGO_SECRET_KEY": "compose-secret-key", "WEIR_INTERNAL_TOKEN": "compose-token"}
CONTROL_PLANE_KINDS = ("controller", "web", "worker", "beat", "lag-monitor")
POD_IP = "10.1.2.3"
NAMESPACE = "weir"


def celery_settings(environment: Mapping[str, str]) -> tuple[str | None, str | None]:
    return environment.get("WEIR_CELERY_QUEUE"), environment.get("WEIR_CELERY_FILESYSTEM_FALLBACK")


# ---------------------------------------------------------------------------------- compose

_COMPOSE_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::?([-?])([^}]*))?\}")


def _interpolate(value: Any, variables: Mapping[str, str]) -> Any:
    """Compose's ${NAME}, ${NAME:-default}, ${NAME:?error} with ``variables`` (as from deploy/.env)."""
    if isinstance(value, dict):
        return {key: _interpolate(item, variables) for key, item in value.items()}
    if isinstance(value, list):
        return [_interpolate(item, variables) for item in value]
    if not isinstance(value, str):
        return value

    def replace(match: re.Match[str]) -> str:
        name, operator, argument = match.groups()
        if name in variables:
            return variables[name]
        if operator == "?":
            raise AssertionError(f"${{{name}}} is required: {argument}")
        return argument or ""

    return _COMPOSE_VARIABLE.sub(replace, value)


@pytest.fixture(scope="module")
def compose_file() -> dict[str, Any]:
    return _interpolate(compose(), COMPOSE_SECRETS)


@pytest.fixture(scope="module")
def compose_processes(compose_file: dict[str, Any]) -> dict[str, Process]:
    return {
        name: check_command(service["command"], {key: str(value) for key, value in service.get("environment", {}).items()})
        for name, service in compose_file["services"].items()
        if "command" in service and "build" in service
    }


def test_compose_runs_every_process_kind_from_the_weir_image(compose_file: dict[str, Any], compose_processes: dict[str, Process]) -> None:
    kinds = Counter(process.kind for process in compose_processes.values())
    assert kinds == {"broker": 3, "controller": 2, "web": 1, "worker": 1, "beat": 1, "lag-monitor": 1, "migrate": 1, "spark-master": 1, "spark-worker": 1}
    services = compose_file["services"]
    assert services["postgres"]["image"].startswith("postgres:") and services["redis"]["image"].startswith("redis:")
    for name in compose_processes:
        build = services[name]["build"]
        assert (DEPLOY / build["context"] / build["dockerfile"]).resolve() == DEPLOY / "Dockerfile", name


def test_compose_brokers_have_their_own_ids_volumes_and_addresses(compose_file: dict[str, Any], compose_processes: dict[str, Process]) -> None:
    services = compose_file["services"]
    brokers = {name: process for name, process in compose_processes.items() if process.kind == "broker"}
    assert len({process.broker.node_id for process in brokers.values()}) == 3
    controllers = sorted(
        f"{name}:{option_value(process.arguments, '--listen').rpartition(':')[2]}"
        for name, process in compose_processes.items()
        if process.kind == "controller"
    )
    addresses = []
    volumes = set()
    for name, process in brokers.items():
        config = process.broker
        assert config.advertised_host == name
        assert services[name]["ports"] == [f"{config.listen.port}:{config.listen.port}"]
        (volume,) = services[name]["volumes"]
        source, mount = volume.split(":")
        assert source in compose_file["volumes"] and str(config.data_dir).startswith(mount + "/")
        volumes.add(source)
        assert sorted(config["controller.quorum.bootstrap.servers"]) == controllers
        assert config["security.required"] is True and config.internal_token == COMPOSE_SECRETS["WEIR_INTERNAL_TOKEN"]
        addresses.append(f"{name}:{config.listen.port}")
        assert int(services[name]["stop_grace_period"].rstrip("s")) > config["controlled.shutdown.timeout.ms"] / 1000
    assert len(volumes) == 3
    for name, process in compose_processes.items():
        if process.kind in CONTROL_PLANE_KINDS:
            environment = services[name]["environment"]
            assert environment["WEIR_BOOTSTRAP_SERVERS"].split(",") == sorted(addresses)
            assert environment["WEIR_INTERNAL_TOKEN"] == COMPOSE_SECRETS["WEIR_INTERNAL_TOKEN"]
            assert celery_settings(environment) == ("weir", "false"), f"{name} must share one Redis queue"


def test_compose_starts_the_control_plane_after_the_migrations(compose_file: dict[str, Any], compose_processes: dict[str, Process]) -> None:
    services = compose_file["services"]
    (migrate,) = [name for name, process in compose_processes.items() if process.kind == "migrate"]
    for name, service in services.items():
        dependencies = service.get("depends_on", {})
        for dependency in dependencies:
            assert dependency in services, f"{name} depends on {dependency}, which is no service"
        if compose_processes.get(name) and compose_processes[name].kind in CONTROL_PLANE_KINDS:
            assert dependencies[migrate] == {"condition": "service_completed_successfully"}
        for volume in service.get("volumes", []):
            source = volume.split(":")[0]
            assert source.startswith(("/", ".")) or source in compose_file["volumes"], f"{name}: volume {source} is not declared"


def test_compose_healthchecks_probe_what_each_process_serves(compose_file: dict[str, Any], compose_processes: dict[str, Process]) -> None:
    for name, process in compose_processes.items():
        healthcheck = compose_file["services"][name].get("healthcheck")
        if healthcheck is None:
            assert process.kind in ("beat", "lag-monitor", "migrate", "spark-worker"), f"{name} has no healthcheck"
            continue
        assert healthcheck["test"][0] == "CMD"
        probe = check_command(healthcheck["test"][1:], {})
        assert probe.kind == "healthcheck"
        target = probe.options.get("address") or probe.options["url"]
        port = int(re.search(r":(\d+)", target.split("//")[-1]).group(1))
        if process.kind == "broker":
            assert port == process.broker.listen.port
        elif process.kind == "controller":
            assert str(port) == option_value(process.arguments, "--listen").rpartition(":")[2]
        elif process.kind == "web":
            assert target.endswith("/readyz") and str(port) == process.options["bind"][0].rpartition(":")[2]
            assert resolve("/readyz")
        elif process.kind == "worker":
            assert str(port) == compose_file["services"][name]["environment"]["WEIR_WORKER_METRICS_PORT"]


def test_compose_pipelines_run_on_its_spark_cluster(compose_file: dict[str, Any], compose_processes: dict[str, Process]) -> None:
    services = compose_file["services"]
    (master,) = [name for name, process in compose_processes.items() if process.kind == "spark-master"]
    (spark_worker,) = [name for name, process in compose_processes.items() if process.kind == "spark-worker"]
    master_arguments = compose_processes[master].arguments
    url = f"spark://{option_value(master_arguments, '--host')}:{option_value(master_arguments, '--port')}"
    assert option_value(master_arguments, "--host") == master
    assert compose_processes[spark_worker].arguments[0] == url
    (worker,) = [name for name, process in compose_processes.items() if process.kind == "worker"]
    environment = services[worker]["environment"]
    assert environment["WEIR_SPARK_MASTER"] == url
    # Executors (spark-worker) write the Parquet the driver (worker) names: one volume, one path.
    mounts = {name: dict(volume.split(":")[::-1] for volume in services[name]["volumes"]) for name in (worker, spark_worker)}
    assert mounts[worker][environment["WEIR_PIPELINE_DIR"]] == mounts[spark_worker][environment["WEIR_PIPELINE_DIR"]]


def test_compose_sets_only_variables_the_code_reads() -> None:
    raw = compose()
    names: set[str] = set()
    for name, service in raw["services"].items():
        if name not in ("postgres", "redis"):
            names |= set(service.get("environment", {}))
    assert unknown_variables(names, set()) == []


# ---------------------------------------------------------------------------------- Kubernetes

FIELD_SAMPLES = {"metadata.namespace": NAMESPACE, "status.podIP": POD_IP}


def _expand(text: str, environment: Mapping[str, str]) -> str:
    """Kubernetes' $(NAME) expansion: known names replaced, $$ kept as one $."""
    return re.sub(
        r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_]*)\)", lambda match: "$" if match.group(0) == "$$" else environment.get(match.group(1), match.group(0)), text
    )


def pod_name_of(workload: Mapping[str, Any]) -> str:
    name = workload["metadata"]["name"]
    return f"{name}-2" if workload["kind"] == "StatefulSet" else f"{name}-5d8f7c9b4-x2x7q"


def container_environment(workload: Mapping[str, Any], container: Mapping[str, Any]) -> dict[str, str]:
    """What the container's process sees, with the README's Secret keys as sample values."""
    config_maps = kubernetes_objects("ConfigMap")
    environment: dict[str, str] = {}
    for source in container.get("envFrom", []):
        if "configMapRef" in source:
            environment.update(config_maps[source["configMapRef"]["name"]]["data"])
        else:
            assert source["secretRef"]["name"] == "weir-secrets"
            environment.update({key: f"sample-{key.lower()}" for key in SECRET_KEYS})
    for entry in container.get("env", []):
        if "value" in entry:
            environment[entry["name"]] = _expand(entry["value"], environment)
            continue
        source = entry["valueFrom"]
        if "fieldRef" in source:
            path = source["fieldRef"]["fieldPath"]
            environment[entry["name"]] = pod_name_of(workload) if path == "metadata.name" else FIELD_SAMPLES[path]
        else:
            reference = source["secretKeyRef"]
            assert reference["name"] == "weir-secrets" and reference["key"] in SECRET_KEYS, f"{reference} is not a key deploy/README.md creates"
            environment[entry["name"]] = f"sample-{reference['key'].lower()}"
    return environment


def workloads() -> list[dict[str, Any]]:
    return [document for document in kubernetes_documents() if document["kind"] in ("Deployment", "StatefulSet", "Job", "CronJob")]


@pytest.fixture(scope="module")
def kubernetes_processes() -> list[tuple[dict[str, Any], dict[str, Any], Process, dict[str, str]]]:
    """(workload, container, process, environment) of every container, init containers included."""
    found = []
    for workload in workloads():
        spec = pod_spec(workload)
        for container in [*spec.get("initContainers", []), *spec["containers"]]:
            environment = container_environment(workload, container)
            argv = [_expand(word, environment) for word in [*container["command"], *container.get("args", [])]]
            found.append((workload, container, check_command(argv, environment), environment))
    return found


def test_kubernetes_documents_parse_and_kustomization_lists_every_file() -> None:
    directory = DEPLOY / "kubernetes"
    listed = kustomization()
    assert listed["kind"] == "Kustomization" and listed["namespace"] == NAMESPACE
    assert sorted(listed["resources"]) == sorted(path.name for path in directory.glob("*.yaml") if path.name != "kustomization.yaml")
    for document in kubernetes_documents():
        assert {"apiVersion", "kind", "metadata"} <= set(document), document
    assert {image["name"] for image in listed["images"]} == {"weir"}


def test_kubernetes_runs_every_process_kind_as_the_right_workload(kubernetes_processes: list) -> None:
    kinds = {(workload["kind"], process.kind) for workload, container, process, _ in kubernetes_processes}
    assert kinds == {
        ("StatefulSet", "broker"),
        ("Deployment", "controller"),
        ("Deployment", "web"),
        ("Deployment", "worker"),
        ("Deployment", "beat"),
        ("Deployment", "lag-monitor"),
        ("Deployment", "check-migrations"),
        ("Job", "migrate"),
        ("CronJob", "backup"),
    }
    for workload, container, process, _ in kubernetes_processes:
        assert container["image"] == "weir", f"{workload['metadata']['name']}: every container runs the Weir image (kustomize sets its tag)"
        if process.kind in CONTROL_PLANE_KINDS:
            init = [check_command(init_container["command"], {}).kind for init_container in pod_spec(workload).get("initContainers", [])]
            assert init == ["check-migrations"], f"{workload['metadata']['name']} must wait for the migrations"
    for single in ("beat", "lag-monitor"):
        (workload,) = [workload for workload, _, process, _ in kubernetes_processes if process.kind == single]
        assert workload["spec"]["replicas"] == 1 and workload["spec"]["strategy"]["type"] == "Recreate"


def test_no_pod_gets_service_variables_which_brokers_would_refuse() -> None:
    for workload in workloads():
        assert pod_spec(workload).get("enableServiceLinks") is False, workload["metadata"]["name"]
    # And the reason: a Service named weir-broker would give pods WEIR_BROKER_PORT=tcp://...
    with pytest.raises(BrokerConfigError, match="WEIR_BROKER_PORT"):
        parse_settings([], {"WEIR_BROKER_PORT": "tcp://10.0.0.1:9092"})


def test_kubernetes_brokers_get_stable_ids_addresses_and_volumes(kubernetes_processes: list) -> None:
    (statefulset,) = kubernetes_objects("StatefulSet").values()
    service = kubernetes_objects("Service")[statefulset["spec"]["serviceName"]]
    assert service["spec"]["clusterIP"] == "None" and service["spec"]["publishNotReadyAddresses"] is True
    assert service["spec"]["selector"].items() <= statefulset["spec"]["template"]["metadata"]["labels"].items()
    (container,) = pod_spec(statefulset)["containers"]
    environment = container_environment(statefulset, container)
    node_ids = []
    for ordinal in range(statefulset["spec"]["replicas"]):
        pod = f"{statefulset['metadata']['name']}-{ordinal}"
        process = check_command(container["command"], {**environment, "WEIR_POD_NAME": pod})
        node_ids.append(process.broker.node_id)
        assert process.broker.advertised_host == f"{pod}.{service['metadata']['name']}.{NAMESPACE}.svc.cluster.local"
    assert node_ids == [1, 2, 3]
    (process,) = [process for workload, _, process, _ in kubernetes_processes if process.kind == "broker"]
    config = process.broker
    (mount,) = container["volumeMounts"]
    assert mount["name"] == statefulset["spec"]["volumeClaimTemplates"][0]["metadata"]["name"]
    assert str(config.data_dir).startswith(mount["mountPath"] + "/")
    controller_host, _, controller_port = config["controller.quorum.bootstrap.servers"][0].rpartition(":")
    controller_service = kubernetes_objects("Service")[controller_host]
    assert controller_service["spec"]["ports"][0]["port"] == int(controller_port)
    assert config["security.required"] is True and config.internal_token == "sample-weir_internal_token"
    assert pod_spec(statefulset)["terminationGracePeriodSeconds"] > config["controlled.shutdown.timeout.ms"] / 1000
    bootstrap = kubernetes_objects("ConfigMap")["weir-control-plane"]["data"]["WEIR_BOOTSTRAP_SERVERS"].split(",")
    assert bootstrap == [
        f"{statefulset['metadata']['name']}-{ordinal}.{service['metadata']['name']}.{NAMESPACE}.svc.cluster.local:{config.listen.port}" for ordinal in range(3)
    ]


def _metrics_port(process: Process, environment: Mapping[str, str]) -> int | None:
    if process.kind == "broker":
        return int(process.broker["metrics.port"]) or None
    if process.kind == "controller":
        return process.options["metrics_port"]
    if process.kind == "worker":
        return int(environment["WEIR_WORKER_METRICS_PORT"])
    if process.kind == "web":
        return int(process.options["bind"][0].rpartition(":")[2])
    return None


def test_kubernetes_probes_and_prometheus_annotations_match_what_each_process_serves(kubernetes_processes: list) -> None:
    for workload, container, process, environment in kubernetes_processes:
        if container in pod_spec(workload).get("initContainers", []):
            continue
        name = workload["metadata"]["name"]
        ports = {port["name"]: port["containerPort"] for port in container.get("ports", [])}
        annotations = workload["spec"].get("template", {}).get("metadata", {}).get("annotations", {})
        metrics_port = _metrics_port(process, environment)
        if metrics_port is not None:
            assert annotations["prometheus.io/scrape"] == "true" and annotations["prometheus.io/path"] == "/metrics", name
            assert int(annotations["prometheus.io/port"]) == metrics_port and metrics_port in ports.values(), name
        for probe_name in ("startupProbe", "livenessProbe", "readinessProbe"):
            probe = container.get(probe_name)
            if probe is None:
                continue
            (kind,) = set(probe) & {"grpc", "httpGet", "tcpSocket"}
            port = probe[kind]["port"]
            assert (ports[port] if isinstance(port, str) else port) in ports.values(), f"{name} {probe_name} probes a port it does not serve"
            if kind == "httpGet":
                assert resolve(probe[kind]["path"])
                host = {header["name"]: header["value"] for header in probe[kind].get("httpHeaders", [])}.get("Host")
                if process.kind == "web":
                    assert host in environment["DJANGO_ALLOWED_HOSTS"].split(","), f"{name}: Django would refuse the probe's Host"
        if process.kind == "web":
            assert POD_IP in environment["DJANGO_ALLOWED_HOSTS"].split(","), "Prometheus scrapes the pod's IP"
            assert {container["livenessProbe"]["httpGet"]["path"], container["readinessProbe"]["httpGet"]["path"]} == {"/healthz", "/readyz"}
        if process.kind == "controller":
            assert container["readinessProbe"]["grpc"]["service"] == CONTROLLER_SERVICE_NAME
            assert container["livenessProbe"]["grpc"]["service"] == ""
        if process.kind == "broker":
            assert container["readinessProbe"]["grpc"]["service"] == ""


def test_kubernetes_services_select_pods_that_serve_their_ports() -> None:
    for name, service in kubernetes_objects("Service").items():
        selector = service["spec"]["selector"].items()
        matching = [
            workload for workload in workloads() if workload["kind"] != "CronJob" and selector <= workload["spec"]["template"]["metadata"]["labels"].items()
        ]
        assert len(matching) == 1, f"Service {name} selects {len(matching)} workloads"
        ports = {port["name"] for container in pod_spec(matching[0])["containers"] for port in container.get("ports", [])}
        for port in service["spec"]["ports"]:
            assert port["targetPort"] in ports, f"Service {name}: no container port named {port['targetPort']}"


def test_kubernetes_keeps_secrets_in_the_secret_and_the_rest_in_config_maps(kubernetes_processes: list) -> None:
    assert {"DATABASE_URL", "DJANGO_SECRET_KEY", "WEIR_INTERNAL_TOKEN"} == SECRET_KEYS
    for name, config_map in kubernetes_objects("ConfigMap").items():
        assert not SECRET_KEYS & set(config_map["data"]), f"ConfigMap {name} holds a secret"
    for workload, _container, process, environment in kubernetes_processes:
        if process.kind in (*CONTROL_PLANE_KINDS, "migrate", "backup"):
            assert set(environment) >= SECRET_KEYS and celery_settings(environment) == ("weir", "false"), workload["metadata"]["name"]
    assert not kubernetes_objects("Secret"), "the Secret is made with kubectl (deploy/README.md), never committed"


def test_kubernetes_sets_only_variables_the_code_reads(kubernetes_processes: list) -> None:
    names: set[str] = set()
    referenced: set[str] = set()
    for config_map in kubernetes_objects("ConfigMap").values():
        names |= set(config_map["data"])
    for _workload, container, _, _ in kubernetes_processes:
        for entry in container.get("env", []):
            names.add(entry["name"])
            referenced |= references(entry.get("value", ""))
    assert unknown_variables(names, referenced) == []


# ---------------------------------------------------------------------------------- systemd

UNITS = sorted(path.name for path in (DEPLOY / "systemd").glob("*.service"))
INSTANCE_SAMPLES = {"weir-web@.service": "8000", "weir-worker@.service": "9309"}


def unit_process(name: str) -> tuple[Process, dict[str, str]]:
    unit = systemd_unit(name)
    service = unit["Service"]
    environment: dict[str, str] = {}
    for path in service.get("EnvironmentFile", "").split():
        environment.update(env_file(Path(path.lstrip("-")).name + ".example"))
    instance = INSTANCE_SAMPLES.get(name, "")
    for assignment in shlex.split(service.get("Environment", "").replace("%i", instance)):
        key, _, value = assignment.partition("=")
        environment[key] = value
    command = service["ExecStart"].replace("%%", "\0").replace("%i", instance).replace("%H", "host.example").replace("\0", "%").replace("$$", "$")
    command = re.sub(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}", lambda match: environment[match.group(1)], command)
    return check_command(shlex.split(command), environment, python="/opt/weir/.venv/bin/python"), environment


def test_systemd_units_parse_and_run_every_process_kind() -> None:
    kinds = Counter(unit_process(name)[0].kind for name in UNITS)
    assert kinds == {"broker": 1, "controller": 1, "web": 1, "worker": 1, "beat": 1, "lag-monitor": 1, "migrate": 1, "backup": 1}
    for name in UNITS:
        unit = systemd_unit(name)
        assert unit["Service"]["User"] == "weir" and unit["Service"]["WorkingDirectory"] == "/opt/weir", name
        assert (REPOSITORY / "manage.py").is_file()
        for path in unit["Service"].get("EnvironmentFile", "").split():
            assert (DEPLOY / "systemd" / (Path(path).name + ".example")).is_file(), f"{name}: no example of {path}"
    timer = systemd_unit("weir-backup.timer")
    assert timer["Timer"]["OnCalendar"] and (DEPLOY / "systemd" / "weir-backup.service").is_file()


def test_systemd_broker_and_control_plane_agree() -> None:
    broker, broker_environment = unit_process("weir-broker.service")
    assert broker.broker.node_id == 1 and broker.broker["security.required"] is True
    assert broker.broker.internal_token == "" and broker_environment["WEIR_INTERNAL_TOKEN"] == "", "the example leaves the secret blank"
    assert int(systemd_unit("weir-broker.service")["Service"]["TimeoutStopSec"]) > broker.broker["controlled.shutdown.timeout.ms"] / 1000
    for name in UNITS:
        process, environment = unit_process(name)
        if process.kind in CONTROL_PLANE_KINDS:
            assert celery_settings(environment) == ("weir", "false"), name
    worker, environment = unit_process("weir-worker@.service")
    assert environment["WEIR_WORKER_METRICS_PORT"] == "9309" and worker.options["hostname"] == "worker-9309@host.example"


def test_systemd_sets_only_variables_the_code_reads() -> None:
    names: set[str] = set()
    referenced: set[str] = set()
    for name in UNITS:
        service = systemd_unit(name)["Service"]
        names |= {assignment.partition("=")[0] for assignment in shlex.split(service.get("Environment", ""))}
        referenced |= references(service["ExecStart"])
    for example in ("broker.env.example", "control-plane.env.example"):
        names |= set(env_file(example))
    assert unknown_variables(names, referenced) == []
    # The broker's example passes the broker's own settings parser.
    parse_settings([], env_file("broker.env.example"))


# ---------------------------------------------------------------------------------- Dockerfile


def test_dockerfile_default_command_is_the_web_process() -> None:
    assert check_command(dockerfile_command(), {}).kind == "web"


def test_dockerfile_copies_every_package_the_manifests_run_and_runs_unprivileged(compose_processes: dict[str, Process]) -> None:
    instructions = dockerfile_instructions()
    copied = set()
    for word, arguments in instructions:
        if word == "COPY":
            *sources, _ = arguments.split()
            for source in sources:
                assert (REPOSITORY / source).exists(), f"COPY {source}: not in the repository"
                copied.add(source.rstrip("/"))
    assert {
        "manage.py",
        "deploy",
        "webapp",
        "broker_nodes",
        "weir",
        "grpc_protos",
        "log_formats",
        "server_runtime",
        "spark_pipelines",
        "pyproject.toml",
        "sdk/pyproject.toml",
    } <= copied
    ignored = (DEPLOY / "Dockerfile.dockerignore").read_text().split()
    assert not copied & set(ignored), "the build context must hold what the Dockerfile copies"
    (user,) = [arguments for word, arguments in instructions if word == "USER"]
    assert user == "10001"
    for workload in workloads():
        assert pod_spec(workload)["securityContext"]["runAsUser"] == int(user), workload["metadata"]["name"]
    (workdir,) = [arguments for word, arguments in instructions if word == "WORKDIR"]
    assert workdir == "/app"
    environment = " ".join(arguments for word, arguments in instructions if word == "ENV")
    for variable in ("WEIR_DATA_DIR", "WEIR_PIPELINE_DIR"):
        path = re.search(rf"{variable}=(\S+)", environment).group(1)
        assert any(word == "RUN" and "chown weir:weir" in arguments and path in arguments for word, arguments in instructions), (
            f"{path} must belong to the weir user"
        )


# ---------------------------------------------------------------------------------- documentation


def test_deploy_readme_documents_scaling_and_recovery() -> None:
    for heading in ("## Docker Compose", "## Kubernetes", "## systemd", "## Scaling", "## Backup and restore", "## Rebuilding brokers' credentials and ACLs"):
        assert heading in README, heading
    scaling = README.split("## Scaling", 1)[1].split("\n## ", 1)[0]
    for kind in ("Brokers", "Controllers", "Web", "Celery workers", "Celery beat", "Spark"):
        assert f"**{kind}**" in scaling, kind
    for command in ("manage.py backup", "manage.py restore", "manage.py resync_brokers", "--clear-existing", "--delete-unknown-topics"):
        assert command in README, command

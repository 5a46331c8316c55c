"""Reading deploy/'s manifests, and checking a process's command line with the real parsers.

:func:`check_command` takes the argv a manifest runs and checks it the way the process itself
would: broker flags and WEIR_BROKER_* variables with the broker's own ``parse_arguments``;
management commands with their Django parsers; gunicorn and Celery with theirs; modules run
with ``-m`` must be importable; Spark daemons must be classes in PySpark's jars. It returns
what it recognised (a :class:`Process`) so tests can compare ports and addresses.
"""

from __future__ import annotations

import ast
import configparser
import functools
import importlib.util
import json
import re
import shlex
import warnings
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click
import yaml
from django.core.management import get_commands, load_command_class
from django.core.management.base import CommandError

from broker_nodes.config import BROKER_SETTINGS, BrokerConfig, BrokerConfigError, environment_variable
from broker_nodes.server.main import parse_arguments as parse_broker_arguments
from deploy.broker_entrypoint import broker_command

REPOSITORY = Path(__file__).resolve().parents[2]
DEPLOY = REPOSITORY / "deploy"
SOURCE_PACKAGES = ("webapp", "broker_nodes", "weir", "log_formats", "server_runtime", "spark_pipelines", "deploy", "grpc_protos")
# Variables read by something other than Weir's code: Python itself and the database image.
THIRD_PARTY_VARIABLES = frozenset({"PYTHONUNBUFFERED", "POSTGRES_DB", "POSTGRES_USER", "POSTGRES_PASSWORD"})
_REFERENCE = re.compile(r"\$[({]([A-Za-z_][A-Za-z0-9_]*)[)}]")


class ManifestError(AssertionError):
    """A manifest's command or environment that the process would refuse."""


@dataclass
class Process:
    kind: str  # broker, controller, web, worker, beat, lag-monitor, migrate, check-migrations, backup, spark-master, spark-worker
    arguments: list[str]
    broker: BrokerConfig | None = None
    options: dict[str, Any] = field(default_factory=dict)


# ---------------------------------------------------------------------------------- loading


def compose() -> dict[str, Any]:
    return yaml.safe_load((DEPLOY / "docker-compose.yml").read_text())


def kubernetes_documents() -> list[dict[str, Any]]:
    """Every Kubernetes object of deploy/kubernetes (all documents of every file but the kustomization)."""
    documents = []
    for path in sorted((DEPLOY / "kubernetes").glob("*.yaml")):
        if path.name != "kustomization.yaml":
            documents += [document for document in yaml.safe_load_all(path.read_text()) if document is not None]
    return documents


def kustomization() -> dict[str, Any]:
    return yaml.safe_load((DEPLOY / "kubernetes" / "kustomization.yaml").read_text())


def kubernetes_objects(kind: str) -> dict[str, dict[str, Any]]:
    return {document["metadata"]["name"]: document for document in kubernetes_documents() if document["kind"] == kind}


def pod_spec(workload: Mapping[str, Any]) -> dict[str, Any]:
    """The pod template's spec of a Deployment, StatefulSet, Job or CronJob."""
    spec = workload["spec"]
    if workload["kind"] == "CronJob":
        spec = spec["jobTemplate"]["spec"]
    return spec["template"]["spec"]


def systemd_unit(name: str) -> configparser.ConfigParser:
    parser = configparser.ConfigParser(interpolation=None, strict=True, delimiters=("=",))
    parser.optionxform = str  # type: ignore[assignment,method-assign]  # keys are case-sensitive
    parser.read_string((DEPLOY / "systemd" / name).read_text(), source=name)
    return parser


def env_file(name: str) -> dict[str, str]:
    """KEY=value lines of an example environment file (comments and blank lines skipped)."""
    values = {}
    for line in (DEPLOY / "systemd" / name).read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            key, separator, value = line.partition("=")
            assert separator, f"{name}: {line!r} is not KEY=value"
            values[key.strip()] = value.strip()
    return values


def dockerfile_instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of deploy/Dockerfile, continuation lines joined."""
    text = re.sub(r"\\\n", " ", (DEPLOY / "Dockerfile").read_text())
    instructions = []
    for line in text.splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            word, _, rest = line.strip().partition(" ")
            instructions.append((word.upper(), rest.strip()))
    return instructions


def dockerfile_command() -> list[str]:
    (cmd,) = [json.loads(arguments) for word, arguments in dockerfile_instructions() if word == "CMD"]
    return cmd


# ---------------------------------------------------------------------------------- names


@functools.lru_cache(maxsize=1)
def names_read_by_code() -> frozenset[str]:
    """Upper-case string constants of Weir's source (how it names the variables it reads), and
    every broker setting's WEIR_BROKER_ variable."""
    names = {environment_variable(setting) for setting in BROKER_SETTINGS}
    for package in SOURCE_PACKAGES:
        for path in (REPOSITORY / package).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.Constant) and isinstance(node.value, str) and re.fullmatch(r"[A-Z][A-Z0-9_]{2,}", node.value):
                    names.add(node.value)
    return frozenset(names)


def references(*texts: str) -> set[str]:
    """Variables referenced as $(NAME) (Kubernetes) or ${NAME} (compose, systemd) in ``texts``."""
    return {match.group(1) for text in texts for match in _REFERENCE.finditer(text)}


def unknown_variables(names: set[str] | frozenset[str], referenced: set[str]) -> list[str]:
    """Names nothing reads: neither Weir's code, nor a third party, nor another line of the manifest."""
    known = names_read_by_code() | THIRD_PARTY_VARIABLES | referenced
    return sorted(name for name in names if name not in known)


# ---------------------------------------------------------------------------------- commands


def check_command(argv: list[str], environment: Mapping[str, str], *, python: str = "python") -> Process:
    """Check ``argv`` (see the module docstring); ManifestError naming what would be refused."""
    if not argv:
        raise ManifestError("empty command")
    if argv[0] == "/bin/sh" and argv[1:2] == ["-c"]:
        # A command substitution ($(date ...)) stands for one word of its output.
        words = shlex.split(re.sub(r"\$\([^)]*\)", "SUBSTITUTED", argv[2]))
        if words[0] == "exec":
            words = words[1:]
        return check_command(words, environment, python=python)
    if argv[0] == "spark-class":
        return _check_spark(argv[1:])
    if argv[0] != python:
        raise ManifestError(f"{argv[0]!r} is not the image's or venv's python ({python!r})")
    if argv[1:2] == ["manage.py"]:
        return _check_management_command(argv[2:])
    if argv[1] != "-m" or len(argv) < 3:
        raise ManifestError(f"expected `python -m MODULE` or `python manage.py`, not {argv[1:3]}")
    module, arguments = argv[2], argv[3:]
    if importlib.util.find_spec(module) is None:
        raise ManifestError(f"module {module} is not importable")
    if module == "broker_nodes":
        return Process("broker", arguments, broker=_parse_broker(arguments, environment))
    if module == "deploy.broker_entrypoint":
        command = broker_command(environment, arguments, python=python)
        return Process("broker", command[3:], broker=_parse_broker(command[3:], environment))
    checks = {"gunicorn": _check_gunicorn, "celery": _check_celery, "spark_pipelines.lag_monitor": _check_lag_monitor}
    if module in checks:
        return checks[module](arguments)
    if module == "deploy.healthcheck":
        from deploy.healthcheck import parse_arguments

        return Process("healthcheck", arguments, options=vars(_no_exit(parse_arguments, arguments)))
    raise ManifestError(f"no check for `python -m {module}`")


def _check_lag_monitor(arguments: list[str]) -> Process:
    if arguments:
        raise ManifestError(f"the lag evaluator takes no arguments (its settings are environment variables), not {arguments}")
    return Process("lag-monitor", arguments)


def _no_exit(parse: Any, *arguments: Any) -> Any:
    try:
        return parse(*arguments)
    except SystemExit as error:
        raise ManifestError(f"refused by the parser (exit {error.code}): {arguments}") from None


def _parse_broker(arguments: list[str], environment: Mapping[str, str]) -> BrokerConfig:
    try:
        return _no_exit(parse_broker_arguments, arguments, environment)
    except BrokerConfigError as error:
        raise ManifestError(f"the broker refuses {arguments}: {error}") from None


def _check_management_command(arguments: list[str]) -> Process:
    name, rest = arguments[0], arguments[1:]
    commands = get_commands()
    if name not in commands:
        raise ManifestError(f"manage.py has no command {name!r}")
    parser = load_command_class(commands[name], name).create_parser("manage.py", name)
    try:
        options = vars(parser.parse_args(rest))
    except CommandError as error:
        raise ManifestError(f"manage.py {name} refuses {rest}: {error}") from None
    kinds = {"run_controller": "controller", "backup": "backup"}
    if name == "migrate":
        kind = "check-migrations" if options["check_unapplied"] else "migrate"
    else:
        kind = kinds.get(name, name)
    return Process(kind, rest, options=options)


def _check_gunicorn(arguments: list[str]) -> Process:
    from gunicorn.config import Config

    options = _no_exit(Config().parser().parse_args, arguments)
    for application in options.args:
        if importlib.util.find_spec(application.split(":")[0]) is None:
            raise ManifestError(f"gunicorn application {application} is not importable")
    if options.config and options.config.startswith("python:") and importlib.util.find_spec(options.config[len("python:") :]) is None:
        raise ManifestError(f"gunicorn --config {options.config} is not importable")
    kind = "web" if options.args == ["webapp.wsgi"] else "gunicorn"
    return Process(kind, arguments, options=vars(options))


def _check_celery(arguments: list[str]) -> Process:
    from celery.bin.base import CLIContext
    from celery.bin.celery import celery as celery_cli

    from webapp.celery import app

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # click's protected_args
        try:
            context = celery_cli.make_context("celery", list(arguments), obj=CLIContext(app=app, no_color=True, workdir=None, quiet=True))
            subcommand, *rest = [*context.protected_args, *context.args]
            command = celery_cli.get_command(context, subcommand)
            if command is None:
                raise ManifestError(f"celery has no command {subcommand!r}")
            options = command.make_context(subcommand, rest, parent=context, obj=context.obj).params
        except click.ClickException as error:
            raise ManifestError(f"celery refuses {arguments}: {error.format_message()}") from None
    if context.params.get("app") != "webapp" or importlib.util.find_spec("webapp.celery") is None:
        raise ManifestError(f"celery -A must name the webapp package, not {context.params.get('app')!r}")
    return Process(subcommand, arguments, options=dict(options))


def _check_spark(arguments: list[str]) -> Process:
    classes = {"org.apache.spark.deploy.master.Master": "spark-master", "org.apache.spark.deploy.worker.Worker": "spark-worker"}
    name = arguments[0]
    if name not in classes:
        raise ManifestError(f"spark-class {name}: not a Spark daemon these manifests know")
    if not _spark_class_exists(name):
        raise ManifestError(f"spark-class {name}: no such class in PySpark's jars")
    return Process(classes[name], arguments[1:])


def _spark_class_exists(name: str) -> bool:
    import pyspark

    member = name.replace(".", "/") + ".class"
    for jar in (Path(pyspark.__file__).parent / "jars").glob("spark-core_*.jar"):
        with zipfile.ZipFile(jar) as archive:
            if member in archive.namelist():
                return True
    return False


def option_value(arguments: list[str], flag: str) -> str | None:
    """The value after ``flag`` in an argv (``--flag value`` or ``--flag=value``)."""
    for index, argument in enumerate(arguments):
        if argument == flag and index + 1 < len(arguments):
            return arguments[index + 1]
        if argument.startswith(flag + "="):
            return argument.split("=", 1)[1]
    return None

"""The SDK is its own distribution and installs alone (issue 13): ``pip install ./sdk`` in an empty
virtualenv gives a working ``weir`` package and ``weir`` command, with none of the server side's
libraries (Django, Celery, PySpark, pandas, pyarrow) and none of its packages.

The wheel is built from a copy of exactly sdk/, weir/ and grpc_protos/ (so that nothing else of the
repository can slip in, and nothing is written into it). Its dependencies are installed from
requirements.lock with their hashes, only those the wheel's own metadata asks for (followed through
their metadata in this virtualenv): pip takes them from its cache when ``make install`` has already
downloaded them, else from the index. The wheel itself is then installed with ``--no-index``, which
fails when it declares a dependency that was not installed.
"""

from __future__ import annotations

import email.parser
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.support.processes import BrokerProcess

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
SDK_SOURCES = ("sdk", "weir", "grpc_protos")  # all the wheel is built from
SDK_PACKAGES = ("weir", "grpc_protos")
SERVER_PACKAGES = ("broker_nodes", "webapp", "spark_pipelines", "bench", "deploy", "log_formats", "server_runtime", "tests")
SERVER_LIBRARIES = ("django", "djangorestframework", "celery", "pyspark", "pandas", "pyarrow", "numpy", "python-json-logger")
PIP_TIMEOUT_S = 300  # the index is asked only for what pip's cache lacks
RUN_TIMEOUT_S = 60
_LOCK_BLOCK_NAME = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==")


def _run(command: list[str | Path], *, timeout: float = RUN_TIMEOUT_S, cwd: Path | None = None, env: dict[str, str] | None = None) -> str:
    """Run a command and return its stdout; fail the test with its output when it fails."""
    completed = subprocess.run([str(part) for part in command], capture_output=True, text=True, timeout=timeout, cwd=cwd, env=env, check=False)
    assert completed.returncode == 0, f"{' '.join(map(str, command))} exited {completed.returncode}:\n{completed.stdout[-3000:]}\n{completed.stderr[-3000:]}"
    return completed.stdout


def _clean_environment(venv: Path) -> dict[str, str]:
    """This process's environment without PYTHON* variables (no PYTHONPATH into the repository),
    with the clean virtualenv first on PATH."""
    environment = {name: value for name, value in os.environ.items() if not name.startswith("PYTHON")}
    environment["PATH"] = f"{venv / 'bin'}{os.pathsep}{environment.get('PATH', '')}"
    return environment


def _wheel_requirements(wheel: Path) -> list[Requirement]:
    with zipfile.ZipFile(wheel) as archive:
        (metadata_name,) = [name for name in archive.namelist() if name.endswith(".dist-info/METADATA")]
        message = email.parser.Parser().parsestr(archive.read(metadata_name).decode())
    return [Requirement(line) for line in message.get_all("Requires-Dist") or []]


def dependency_closure(requirements: list[Requirement]) -> set[str]:
    """The canonical names of ``requirements`` and of everything they require in turn (no extras),
    read from the distributions installed in this virtualenv, which ``make install`` filled from the lock."""
    names: set[str] = set()
    pending = [requirement for requirement in requirements if requirement.marker is None or requirement.marker.evaluate({"extra": ""})]
    while pending:
        requirement = pending.pop()
        name = canonicalize_name(requirement.name)
        if name in names:
            continue
        names.add(name)
        for line in metadata.requires(requirement.name) or []:
            needed = Requirement(line)
            if needed.marker is None or needed.marker.evaluate({"extra": ""}):
                pending.append(needed)
    return names


def locked_blocks(names: set[str]) -> str:
    """The lines of requirements.lock (pin and hashes) of exactly ``names``; every one must be locked."""
    blocks = re.split(r"\n(?=[A-Za-z0-9])", (ROOT / "requirements.lock").read_text())
    chosen = {}
    for block in blocks:
        match = _LOCK_BLOCK_NAME.match(block)
        if match and canonicalize_name(match.group(1)) in names:
            chosen[canonicalize_name(match.group(1))] = block.rstrip() + "\n"
    assert set(chosen) == names, f"not in requirements.lock (run make lock): {sorted(names - set(chosen))}"
    return "".join(chosen.values())


@pytest.fixture(scope="module")
def sdk_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The SDK's wheel, built from a copy of sdk/, weir/ and grpc_protos/ alone."""
    source = tmp_path_factory.mktemp("sdk-source")
    for name in SDK_SOURCES:
        shutil.copytree(ROOT / name, source / name, ignore=shutil.ignore_patterns("__pycache__", "build", "dist", "*.egg-info"))
    wheels = tmp_path_factory.mktemp("sdk-wheel")
    # No build isolation: setuptools comes from this virtualenv (the lock), not from the index.
    _run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--disable-pip-version-check",
            "--no-deps",
            "--no-build-isolation",
            "--wheel-dir",
            wheels,
            source / "sdk",
        ],
        timeout=PIP_TIMEOUT_S,
    )
    (wheel,) = wheels.glob("weir-*.whl")
    return wheel


@pytest.fixture(scope="module")
def sdk_venv(sdk_wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An empty virtualenv into which only the SDK's wheel and its locked dependencies are installed."""
    venv = tmp_path_factory.mktemp("sdk-venv")
    _run([sys.executable, "-m", "venv", venv])
    requirements = tmp_path_factory.mktemp("sdk-requirements") / "requirements.txt"
    requirements.write_text(locked_blocks(dependency_closure(_wheel_requirements(sdk_wheel))))
    pip = [venv / "bin" / "python", "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    _run([*pip, "--require-hashes", "-r", requirements], timeout=PIP_TIMEOUT_S, env=_clean_environment(venv))
    _run([*pip, "--no-index", sdk_wheel], timeout=PIP_TIMEOUT_S, env=_clean_environment(venv))
    return venv


def _python(venv: Path, code: str, *arguments: str) -> str:
    """Run ``code`` in the clean virtualenv, isolated (-I: no current directory, no user site, no
    PYTHON* variables), from a directory that holds no package."""
    return _run([venv / "bin" / "python", "-I", "-c", code, *arguments], cwd=venv, env=_clean_environment(venv))


def _source_modules() -> set[str]:
    """Every module of the SDK's packages in the repository, by dotted name: Python sources and C
    extensions (weir/_records_native.c, built by the wheel: this test's machine has a compiler)."""
    modules = set()
    for package in SDK_PACKAGES:
        for path in [*(ROOT / package).rglob("*.py"), *(ROOT / package).rglob("*.c")]:
            parts = path.relative_to(ROOT).with_suffix("").parts
            modules.add(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return modules


def test_the_server_side_requires_the_sdk_at_its_own_version() -> None:
    sdk = tomllib.loads((ROOT / "sdk" / "pyproject.toml").read_text())["project"]
    server = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    (requirement,) = [Requirement(line) for line in server["dependencies"] if canonicalize_name(Requirement(line).name) == "weir"]
    assert (sdk["name"], server["name"]) == ("weir", "weir-server")
    assert str(requirement.specifier) == f"=={sdk['version']}" == f"=={server['version']}"
    assert sdk["scripts"] == {"weir": "weir.cli:main"}
    assert "weir" not in server.get("scripts", {})


def test_the_wheel_holds_every_sdk_module_and_nothing_of_the_server_side(sdk_wheel: Path) -> None:
    with zipfile.ZipFile(sdk_wheel) as archive:
        names = archive.namelist()
        entry_points = next(archive.read(name).decode() for name in names if name.endswith(".dist-info/entry_points.txt"))
    top_level = {name.split("/", 1)[0] for name in names if not name.split("/", 1)[0].endswith(".dist-info")}
    assert top_level == set(SDK_PACKAGES)
    assert not [name for name in names if name.split("/", 1)[0] in SERVER_PACKAGES]
    shipped = {name.removesuffix(".py").removesuffix("/__init__").replace("/", ".") for name in names if name.endswith(".py")}
    shipped |= {name.split(".", 1)[0].replace("/", ".") for name in names if name.endswith(".so")}  # C extensions
    assert shipped == _source_modules(), "a package of weir/ or grpc_protos/ is missing from the wheel"
    protos = {Path(name).name for name in names if name.endswith(".proto")}
    assert protos == {path.name for package in SDK_PACKAGES for path in (ROOT / package).rglob("*.proto")}  # Weir's contract and Confluent's own types
    assert "weir = weir.cli:main" in entry_points


def test_the_sdk_installs_alone_without_server_libraries(sdk_venv: Path) -> None:
    listed = json.loads(
        _run([sdk_venv / "bin" / "python", "-m", "pip", "list", "--format", "json", "--disable-pip-version-check"], env=_clean_environment(sdk_venv))
    )
    installed = {canonicalize_name(entry["name"]): entry["version"] for entry in listed}
    assert installed["weir"] == "0.1.0"
    assert "weir-server" not in installed
    assert sorted(set(SERVER_LIBRARIES) & set(installed)) == []
    assert {"grpcio", "protobuf", "crc32c", "cramjam", "rich"} <= set(installed)


def test_every_module_of_the_installed_sdk_imports_and_no_server_package_is_there(sdk_venv: Path) -> None:
    code = (
        "import importlib, importlib.util, json, pkgutil, sys\n"
        "import weir, grpc_protos\n"
        "from weir import Consumer, Producer\n"
        "from weir.admin import AdminClient\n"
        "modules = {}\n"
        "for package in (weir, grpc_protos):\n"
        "    modules[package.__name__] = package.__file__\n"
        "    for found in pkgutil.walk_packages(package.__path__, package.__name__ + '.'):\n"
        # A __main__ module runs its program when imported (weir.cli.__main__): found, not run.
        "        if found.name.endswith('.__main__'):\n"
        "            modules[found.name] = importlib.util.find_spec(found.name).origin\n"
        "        else:\n"
        "            modules[found.name] = importlib.import_module(found.name).__file__\n"
        "present = [name for name in sys.argv[1:] if importlib.util.find_spec(name) is not None]\n"
        "print(json.dumps({'modules': modules, 'server_packages': present, 'site': [path for path in sys.path if path.endswith('site-packages')]}))\n"
    )
    report = json.loads(_python(sdk_venv, code, *SERVER_PACKAGES))
    assert set(report["modules"]) == _source_modules()
    (site_packages,) = report["site"]
    outside = [name for name, path in report["modules"].items() if not path.startswith(site_packages)]
    assert outside == [], "imported from outside the clean virtualenv"
    assert report["server_packages"] == []


def test_the_weir_command_runs_from_the_clean_install(sdk_venv: Path) -> None:
    out = _run([sdk_venv / "bin" / "weir", "--help"], cwd=sdk_venv, env=_clean_environment(sdk_venv))
    for command in ("topics", "groups", "produce", "consume"):
        assert command in out
    assert "dump-log" not in out


def test_the_clean_install_produces_and_consumes_through_a_broker(sdk_venv: Path, broker: BrokerProcess) -> None:
    code = (
        "import sys, time\n"
        "from weir import Consumer, Producer, TopicPartition, OFFSET_BEGINNING\n"
        "from weir.admin import AdminClient, NewTopic\n"
        "address = sys.argv[1]\n"
        "admin = AdminClient({'bootstrap.servers': address})\n"
        "admin.create_topics([NewTopic('alone', 1, 1)])['alone'].result(timeout=20)\n"
        "admin.close()\n"
        "producer = Producer({'bootstrap.servers': address})\n"
        "producer.produce('alone', value=b'from a clean virtualenv', key=b'k')\n"
        "assert producer.flush(20) == 0\n"
        "producer.close()\n"
        "consumer = Consumer({'bootstrap.servers': address})\n"
        "consumer.assign([TopicPartition('alone', 0, OFFSET_BEGINNING)])\n"
        "deadline = time.monotonic() + 20\n"
        "messages = []\n"
        "while not messages and time.monotonic() < deadline:\n"
        "    messages = [message for message in consumer.consume(10, 0.5) if message.error() is None]\n"
        "consumer.close()\n"
        "print(messages[0].value().decode() if messages else 'nothing consumed')\n"
    )
    assert _python(sdk_venv, code, broker.address).strip() == "from a clean virtualenv"
    listed = _run(
        [sdk_venv / "bin" / "weir", "--bootstrap-server", broker.address, "topics", "list", "--output", "json"], cwd=sdk_venv, env=_clean_environment(sdk_venv)
    )
    assert "alone" in listed

"""requirements.lock, which `make install` installs from: it matches pyproject.toml and has no known vulnerability.

The audit asks a vulnerability database over the network (pip-audit's PyPI service, else OSV). When
neither answers within a few seconds the audit is skipped with the reason, so the suite still runs
offline; when one answers, any locked release with an advisory fails the test, naming both.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parent.parent
LOCK = ROOT / "requirements.lock"
PROBE_TIMEOUT_S = 5
AUDIT_TIMEOUT_S = 240

_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s\\;]+)", re.MULTILINE)


def locked_pins(text: str) -> dict[str, Version]:
    """Canonical name -> pinned version, for every ``name==version`` line of a pip-compile lock."""
    return {canonicalize_name(name): Version(version) for name, version in _PIN.findall(text)}


def declared_requirements() -> list[Requirement]:
    """The SDK's and the server side's dependencies and the dev extra (what `make lock` compiles), less
    the server side's requirement of the SDK itself, which is this repository's, installed editable."""
    requirements = []
    for path in (ROOT / "sdk" / "pyproject.toml", ROOT / "pyproject.toml"):
        project = tomllib.loads(path.read_text())["project"]
        requirements += [Requirement(line) for line in project["dependencies"] + project.get("optional-dependencies", {}).get("dev", [])]
    return [requirement for requirement in requirements if canonicalize_name(requirement.name) != "weir"]


def vulnerability_lines(report: dict) -> list[str]:
    """One line per (package, advisory) in a ``pip-audit --format json`` report."""
    lines = []
    for dependency in report.get("dependencies", []):
        for vulnerability in dependency.get("vulns", []):
            aliases = ", ".join(vulnerability.get("aliases") or [])
            fixes = ", ".join(vulnerability.get("fix_versions") or []) or "no fixed release yet"
            lines.append(f"{dependency['name']} {dependency['version']}: {vulnerability['id']}" + (f" ({aliases})" if aliases else "") + f", fixed in {fixes}")
    return lines


def test_the_lock_pins_every_declared_dependency_within_its_range_with_hashes() -> None:
    text = LOCK.read_text()
    pins = locked_pins(text)
    problems = []
    for requirement in declared_requirements():
        name = canonicalize_name(requirement.name)
        if name not in pins:
            problems.append(f"{requirement} is not in {LOCK.name}")
        elif not requirement.specifier.contains(pins[name], prereleases=True):
            problems.append(f"{LOCK.name} pins {name}=={pins[name]}, outside {requirement}")
    assert not problems, "run `make lock`:\n" + "\n".join(problems)
    assert "weir" not in pins, "the project itself is installed editable, not from the lock"
    blocks = re.split(r"\n(?=[A-Za-z0-9])", text)  # one block per pin: its line, its hashes, its "# via"
    unhashed = [block.split("==")[0] for block in blocks if _PIN.match(block) and "--hash=sha256:" not in block]
    assert not unhashed, f"pins without a hash (make install uses --require-hashes): {unhashed}"


def test_a_vulnerable_release_is_reported_with_its_advisory_and_fix() -> None:
    report = {
        "dependencies": [
            {
                "name": "django",
                "version": "4.2.0",
                "vulns": [
                    {"id": "PYSEC-2023-61", "fix_versions": ["4.2.1"], "aliases": ["CVE-2023-31047"]},
                ],
            },
            {"name": "rich", "version": "14.3.4", "vulns": []},
            {"name": "weir", "skip_reason": "Dependency not found on PyPI"},
        ]
    }
    assert vulnerability_lines(report) == ["django 4.2.0: PYSEC-2023-61 (CVE-2023-31047), fixed in 4.2.1"]


def _reachable_service(name: str, version: Version) -> tuple[str | None, list[str]]:
    """The pip-audit service that answers for one locked release, else None and why each did not."""
    failures = []
    try:
        with urllib.request.urlopen(f"https://pypi.org/pypi/{name}/{version}/json", timeout=PROBE_TIMEOUT_S) as answer:
            if "vulnerabilities" in json.load(answer):
                return "pypi", failures
            failures.append("PyPI's JSON API answered without vulnerability data")
    except (OSError, ValueError) as error:  # URLError, HTTPError, timeouts, a body that is not JSON
        failures.append(f"PyPI's JSON API for {name} {version}: {error}")
    query = json.dumps({"package": {"name": name, "ecosystem": "PyPI"}, "version": str(version)}).encode()
    request = urllib.request.Request("https://api.osv.dev/v1/query", data=query, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=PROBE_TIMEOUT_S) as answer:
            json.load(answer)
            return "osv", failures
    except (OSError, ValueError) as error:
        failures.append(f"OSV: {error}")
    return None, failures


@pytest.mark.slow
def test_no_locked_release_has_a_known_vulnerability() -> None:
    pins = locked_pins(LOCK.read_text())
    service, failures = _reachable_service("django", pins[canonicalize_name("django")])
    if service is None:
        pytest.skip("vulnerability database unreachable, lock not audited: " + "; ".join(failures))
    completed = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip_audit",
            "--requirement",
            str(LOCK),
            "--no-deps",
            "--disable-pip",
            "--vulnerability-service",
            service,
            "--format",
            "json",
            "--progress-spinner",
            "off",
            "--timeout",
            "15",
        ],
        capture_output=True,
        text=True,
        timeout=AUDIT_TIMEOUT_S,
        check=False,
    )
    try:
        report = json.loads(completed.stdout)
    except ValueError:
        pytest.fail(f"pip-audit ({service}) exited {completed.returncode} without a report: {completed.stderr[-2000:]}")
    audited = [dependency for dependency in report.get("dependencies", []) if "skip_reason" not in dependency]
    if not audited:
        pytest.skip(f"{service} could not audit any locked release (service unusable from here)")
    found = vulnerability_lines(report)
    assert not found, (
        f"known vulnerabilities in {LOCK.name} ({service}); raise the floor in pyproject.toml and run `make lock LOCK_ARGS=--upgrade`:\n" + "\n".join(found)
    )

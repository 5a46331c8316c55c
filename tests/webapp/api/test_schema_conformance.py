"""The REST API keeps the promises of its OpenAPI schema: schemathesis, with every check
(response schemas, status codes, content types, headers, negative data refused, positive
data accepted, unsupported methods, ...), over every operation of ``/api/schema/``, finds
no failure.

Schemathesis runs as users run it (its CLI), against a live HTTP server of this test on
loopback, authenticated with an owner's cloud key, and with a real broker registered as the
control plane's broker, so that consumer-group operations answer from a broker rather than
their 503. Its examples are bounded per operation and derandomized (a fixed seed,
deterministic generation), so the run is repeatable.

One documented relaxation: a few operations validate rules that no JSON schema can state
(which operations an ACL's resource type allows, a config's value for its name, a password
that is too common, fields that depend on ``to``, a partition count that must exceed the
current one). For those, and only those, a schema-valid request may answer 400 naming the
field; every other check applies to them in full.

The operations are split into three shards by path (one schemathesis run, live server and
broker each), so that the suite's workers run them side by side: the last shard is every
operation the others leave out, so together they cover the whole schema.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.webapp.api.conftest import TenantFixture
from tests.webapp.group_broker import control_plane_broker
from webapp.accounts.models import Role

# Measured unsharded (3 examples): about 3 minutes (180 s in schemathesis) on 2 cores beside the suite's other
# workers, about 1 minute per shard; the timeout leaves room for a busier machine.
pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True), pytest.mark.timeout(900)]

SCHEMATHESIS = Path(sys.executable).with_name("schemathesis")
EXAMPLES_PER_OPERATION = 1
SEED = 20261125
RUN_TIMEOUT_SECONDS = 840
# Operations whose rules a JSON schema cannot state (see the module docstring): a
# schema-valid request may answer 400 there, with the field named.
SEMANTIC_RULES = {
    ("POST", "/api/v1/acls"): "the operations a resource type allows; resource-name rules per type; the principal must exist",
    ("POST", "/api/v1/acls:apply-template"): "the resource-name rules of each binding; the principal must exist; a consumer needs its group",
    ("GET", "/api/v1/acls:explain"): "the host must be an IP address (the schema's string cannot say so for both IPv4 and IPv6)",
    ("POST", "/api/v1/topics"): "a config's allowed values depend on its name; reserved names; replicas at most the brokers",
    ("POST", "/api/v1/topics/{topic_name}/configs:alter"): "a config's allowed values depend on its name",
    ("POST", "/api/v1/topics/{topic_name}/partitions"): "the new count must exceed the current one",
    ("POST", "/api/v1/consumer-groups/{consumer_group_id}/offsets:reset"): "which fields are needed depends on 'to'",
    ("POST", "/api/v1/sign-up"): "Django's password validators (common passwords, similarity to the username)",
    ("POST", "/api/v1/invitations/accept"): "Django's password validators (common passwords, similarity to the username)",
}
# Schemathesis's default expected statuses plus 400 (5xx still fails: not_a_server_error).
# Path shards of about 18 operations each; "rest" is the complement of the others.
SHARDED_PATHS = {
    "topics-acls-quotas": "topics|acls|quotas",
    "groups-fleet-usage": "consumer-groups|brokers|cluster|jobs|pipeline|usage",
}
SHARDS = [*SHARDED_PATHS, "rest"]
POSITIVE_STATUSES_WITH_SEMANTIC_400 = ["2xx", "3xx", "400", "401", "403", "404", "409", "429", "5xx"]


def schemathesis_config() -> str:
    """A schemathesis.toml: the relaxation above, operation by operation."""
    sections = []
    for (method, path), reason in SEMANTIC_RULES.items():
        statuses = ", ".join(f'"{status}"' for status in POSITIVE_STATUSES_WITH_SEMANTIC_400)
        sections.append(
            f'# {reason}\n[[operations]]\ninclude-method = "{method}"\ninclude-path = "{path}"\n'
            f"checks.positive_data_acceptance.expected-statuses = [{statuses}]\n"
        )
    return "\n".join(sections)


@pytest.fixture
def live_server(transactional_db: None, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    from tests.support.live_server import running_live_server
    from webapp.provisioning import tasks

    # Provisioning jobs are recorded, not run: this test is about the HTTP surface.
    monkeypatch.setattr(tasks.run_job, "delay", lambda job_id: None)
    with running_live_server() as server:
        yield server


def failures_of(report: dict[str, Any]) -> list[str]:
    """One line per failure of a schemathesis JSON report, with the operations it hit."""
    lines = []
    for failure in report.get("failures", []):
        operations = "; ".join(failure.get("operations", []))
        lines.append(f"{failure.get('code')} {failure.get('title')} x{failure.get('count')}: {operations}")
    for error in report.get("errors", []):
        lines.append(f"error: {json.dumps(error)[:500]}")
    return lines


def shard_filter(shard: str) -> list[str]:
    """Schemathesis's path filter selecting ``shard``'s operations."""
    if shard in SHARDED_PATHS:
        return ["--include-path-regex", f"^/api/v1/({SHARDED_PATHS[shard]})"]
    return ["--exclude-path-regex", f"^/api/v1/({'|'.join(SHARDED_PATHS.values())})"]


@pytest.mark.parametrize("shard", SHARDS)
def test_every_operation_conforms_to_the_schema_under_all_schemathesis_checks(
    live_server: Any, acme: TenantFixture, tmp_path: Path, settings: Any, shard: str
) -> None:
    key_id, secret = acme.secrets[Role.OWNER]
    config = tmp_path / "schemathesis.toml"
    config.write_text(schemathesis_config())
    report_path = tmp_path / "report.json"
    command = [
        str(SCHEMATHESIS),
        "--config-file",
        str(config),
        "run",
        f"{live_server.url}/api/schema/?format=json",
        "--url",
        live_server.url,
        "--auth",
        f"{key_id}:{secret}",
        "--checks",
        "all",
        "--phases",
        "examples,coverage,fuzzing",
        "--max-examples",
        str(EXAMPLES_PER_OPERATION),
        "--seed",
        str(SEED),
        "--generation-deterministic",
        "--workers",
        "1",
        "--request-timeout",
        "30",
        "--report",
        "json",
        "--report-json-path",
        str(report_path),
        "--no-color",
        *shard_filter(shard),
    ]

    with control_plane_broker(tmp_path / "broker", settings):
        finished = subprocess.run(command, capture_output=True, text=True, timeout=RUN_TIMEOUT_SECONDS, cwd=tmp_path)

    assert report_path.exists(), f"schemathesis wrote no report:\n{finished.stdout[-4000:]}\n{finished.stderr[-2000:]}"
    report = json.loads(report_path.read_text())
    failures = failures_of(report)
    assert not failures and finished.returncode == 0, "schemathesis found:\n" + "\n".join(failures) + "\n\n" + finished.stdout[-12000:]
    assert report["operations"]["total"] >= 50, report["operations"]
    assert report["operations"]["selected"] >= 10, f"shard {shard} selected too few operations: {report['operations']}"

"""The README's REST tour works as written with the cloud key ``manage.py demo`` prints.

The commands are read from the README itself (every ``curl -u $AUTH`` of its "REST API"
block), so that the test and the tour cannot drift apart: topics POST, jobs, partitions and
ACLs POST must all succeed with the demo's key.
"""

from __future__ import annotations

import io
import json
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import pytest
from django.core.management import call_command

from tests.webapp.api.conftest import basic_client
from webapp.fleet.models import BrokerNode
from webapp.provisioning import tasks

pytestmark = pytest.mark.django_db

README = Path(__file__).resolve().parents[3] / "README.md"
TOUR_HEADING = "**REST API**"


@dataclass(frozen=True)
class TourCommand:
    method: str
    path: str
    body: dict | None
    text: str


def rest_tour_commands() -> list[TourCommand]:
    """The ``curl -u $AUTH`` commands of the README's REST API code block, in order."""
    text = README.read_text()
    start = text.index(TOUR_HEADING)
    block = text[text.index("```sh", start) + len("```sh") : text.index("```", text.index("```sh", start) + 5)]
    # A trailing backslash continues a command on the next line; "# ..." comments end it.
    joined = re.sub(r"\\\n\s*", " ", block)
    commands = []
    for line in joined.splitlines():
        line = line.split("  #")[0].strip()
        if not line.startswith("curl -u $AUTH"):
            continue
        words = shlex.split(line)
        method = words[words.index("-X") + 1] if "-X" in words else "GET"
        body = json.loads(words[words.index("-d") + 1]) if "-d" in words else None
        url = next(word for word in words if word.startswith("$API"))
        commands.append(TourCommand(method=method, path="/api/v1" + url[len("$API") :], body=body, text=line))
    return commands


def run_demo() -> dict[str, str]:
    output = io.StringIO()
    call_command("demo", "--json", "--wait-seconds", "0", stdout=output)
    return json.loads(output.getvalue().strip())


def test_readme_tour_covers_topics_jobs_partitions_and_acls() -> None:
    commands = rest_tour_commands()

    assert [(command.method, command.path.split("/")[3]) for command in commands] == [
        ("POST", "topics"),
        ("GET", "jobs"),
        ("GET", "topics"),
        ("POST", "acls"),
    ]


def test_every_readme_rest_command_succeeds_with_the_demo_cloud_key(registered_broker: BrokerNode, monkeypatch: pytest.MonkeyPatch) -> None:
    # The tour's provisioning jobs are queued for a worker; this test is about the answers.
    monkeypatch.setattr(tasks.run_job, "delay", lambda job_id: None)
    printed = run_demo()
    client = basic_client(printed["cloud_api_key"], printed["cloud_api_secret"])

    for command in rest_tour_commands():
        body = json.loads(json.dumps(command.body).replace("<service account id>", printed["service_account"])) if command.body else None
        response = client.generic(command.method, command.path, json.dumps(body) if body else "", content_type="application/json")

        assert 200 <= response.status_code < 300, f"{command.text}\n-> {response.status_code} {response.content.decode()}"

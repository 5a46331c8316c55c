"""`manage.py run_pipeline` beside a stack: the job reads from the brokers the control plane has
registered (not 127.0.0.1:9092) unless WEIR_BOOTSTRAP_SERVERS says otherwise, and
`python manage.py ...` works without the virtualenv's python on the command line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.processes import BrokerProcess
from webapp.fleet.models import BrokerNode, BrokerState
from webapp.metering import launcher
from webapp.metering.models import RunStatus

REPOSITORY_ROOT = Path(__file__).resolve().parents[3]
# A stand-in job: asks the broker named by WEIR_BOOTSTRAP_SERVERS whether it serves, then reports.
JOB = """
import json, os, grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
servers = os.environ["WEIR_BOOTSTRAP_SERVERS"]
with grpc.insecure_channel(servers.split(",")[0]) as channel:
    status = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=10).status
print("WEIR-PIPELINE-RESULT " + json.dumps({"rows": 1, "servers": servers, "serving": status == health_pb2.HealthCheckResponse.SERVING}))
"""


@pytest.mark.django_db
def test_a_run_reads_from_the_registered_brokers_when_no_bootstrap_servers_are_set(
    broker: BrokerProcess, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("WEIR_BOOTSTRAP_SERVERS", raising=False)
    # A broker known to be down is named last: the job tries the serving ones first.
    BrokerNode.objects.create(node_id=2, host="127.0.0.1", port=1, state=BrokerState.OFFLINE)
    BrokerNode.objects.create(node_id=1, host="127.0.0.1", port=broker.port, state=BrokerState.ONLINE)
    job = tmp_path / "job.py"
    job.write_text(JOB)

    run = launcher.launch("usage", command=[sys.executable, str(job)])

    assert run.status == RunStatus.SUCCEEDED, run.error
    assert run.result["servers"] == f"{broker.address},127.0.0.1:1"
    assert run.result["serving"] is True


@pytest.mark.django_db
def test_bootstrap_servers_in_the_environment_win_over_the_registered_brokers(monkeypatch: pytest.MonkeyPatch) -> None:
    BrokerNode.objects.create(node_id=1, host="127.0.0.1", port=19092, state=BrokerState.ONLINE)
    monkeypatch.setenv("WEIR_BOOTSTRAP_SERVERS", "10.0.0.7:9092")
    assert launcher.job_environment()["WEIR_BOOTSTRAP_SERVERS"] == "10.0.0.7:9092"
    monkeypatch.delenv("WEIR_BOOTSTRAP_SERVERS")
    assert launcher.job_environment()["WEIR_BOOTSTRAP_SERVERS"] == "127.0.0.1:19092"


def test_manage_py_under_another_python_runs_in_the_virtualenv(tmp_path: Path) -> None:
    # The interpreter the virtualenv was made from: it has none of the project's libraries.
    base_python = str(Path(sys.executable).resolve())
    assert Path(sys.prefix).resolve() != Path(base_python).parent.parent
    completed = subprocess.run(
        [base_python, "manage.py", "shell", "-c", "import sys; print(sys.executable)"],
        cwd=REPOSITORY_ROOT, capture_output=True, text=True, timeout=120,
        env={"PATH": "/usr/bin:/bin", "DJANGO_DEBUG": "true", "WEIR_DATA_DIR": str(tmp_path), "DATABASE_URL": "sqlite://:memory:"},
    )  # fmt: skip
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.strip().splitlines()[-1] == str(REPOSITORY_ROOT / ".venv" / "bin" / "python")

"""The test fixtures' processes follow "no process may outlive its parent" too: when the test
run is killed with -9, the brokers it started end with it instead of holding ports and data."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.deploy.stack_process import wait_until

REPOSITORY_ROOT = Path(__file__).resolve().parents[2]
# Stands in for pytest: starts a broker with the suite's fixture class, says its process id, waits.
TEST_RUN = """
import sys, time
from pathlib import Path
from tests.support.processes import BrokerProcess
broker = BrokerProcess(Path(sys.argv[1])).start()
print(broker.process.pid, broker.port, flush=True)
time.sleep(600)
"""


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"


def test_a_broker_fixture_ends_when_the_test_run_is_killed(tmp_path: Path) -> None:
    test_run = subprocess.Popen([sys.executable, "-c", TEST_RUN, str(tmp_path / "broker")], cwd=REPOSITORY_ROOT, stdout=subprocess.PIPE, text=True)
    assert test_run.stdout is not None
    broker_pid = int(test_run.stdout.readline().split()[0])
    try:
        assert _alive(broker_pid)
        test_run.kill()
        test_run.wait(timeout=10)
        assert wait_until(lambda: not _alive(broker_pid), 10.0), f"broker {broker_pid} outlived the test run"
    finally:
        if _alive(broker_pid):
            subprocess.run(["kill", "-9", str(broker_pid)], check=False)

"""Stop signals never hang `make up`: hundreds of SIGTERMs while the main thread waits on an
Event (what made `make up` deadlock when its handler called ``Event.set``) give one first stop
and later "hurry" calls, and the process ends."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

REPOSITORY_ROOT = Path(__file__).resolve().parents[2]
SCRIPT = """
import threading, time
from server_runtime.stop_signals import StopSignals
stop = threading.Event()
calls = []
StopSignals(on_first=lambda number: (calls.append("first"), stop.set()), on_again=lambda number: calls.append("again")).install()
print("ready", flush=True)
while not stop.wait(0.0005):
    pass
# Still waiting on the Event, as make up's stop does, while more signals come.
until = time.monotonic() + 2
while time.monotonic() < until:
    stop.wait(0.0001)
print(calls.count("first"), flush=True)
"""
SIGNALS_SENT = 300


def test_hundreds_of_sigterms_while_waiting_on_an_event_stop_once_and_never_hang() -> None:
    process = subprocess.Popen([sys.executable, "-c", SCRIPT], cwd=REPOSITORY_ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None and process.stdout.readline().strip() == "ready"
        for _ in range(SIGNALS_SENT):
            os.kill(process.pid, signal.SIGTERM)
        output, _ = process.communicate(timeout=20)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 0
    # The kernel merges signals that arrive while one is pending, so how many "hurry" calls
    # follow varies; exactly one first stop does not.
    assert output.split() == ["1"]

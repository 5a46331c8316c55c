"""Sample a running broker process with py-spy around the measured part of each benchmark run.

``BrokerSampler.sampling(name)`` attaches ``py-spy record --pid <broker> --format raw
--nonblocking --gil`` for the duration of a ``with`` block, waits until py-spy reports that it
is sampling (so the run's first moments are in the profile), and on leaving stops it with
SIGINT, the signal on which py-spy writes its file (SIGKILL after a bounded wait). Runs of one
name add up into ``<directory>/broker-<name>.txt``, a collapsed-stack file that speedscope,
inferno-flamegraph and flamegraph.pl read; :mod:`bench.broker_profile` summarizes it.

Why these py-spy options:

- ``--nonblocking`` reads the broker's memory without pausing it, so the broker runs at nearly
  full speed (a sample can then be slightly inconsistent, which a statistical profile tolerates).
- ``--gil`` keeps only the thread holding the interpreter lock. A Python broker does its CPU work
  under that lock, and its many idle threads (gRPC's completion-queue poller, thread-pool workers
  waiting for work, the event loop in ``epoll``) would otherwise be counted as busy whenever
  py-spy cannot tell they are waiting. Time spent with the lock released (a write(2) or fsync in
  progress, gRPC's C threads) is not in the profile; the broker's CPU time over the stretch
  (``/proc/<pid>/stat``), printed beside it, says how busy the process was in all.

When py-spy is missing, or the kernel refuses to let it read the broker (ptrace), the sampler
says so in one line and every later ``sampling`` block runs unprofiled.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from bench.broker_profile import BrokerProfile, merge_collapsed
from server_runtime.lifeline import spawn

# Seconds to wait for py-spy to report that it is sampling, and for it to write its file once interrupted.
ATTACH_TIMEOUT = 15.0
STOP_TIMEOUT = 15.0
# Interval of the polls while waiting for py-spy to start sampling.
ATTACH_POLL_SECONDS = 0.02
# What py-spy prints once it has attached and taken the first samples' set-up.
SAMPLING_STARTED = b"Sampling process"
# Characters of py-spy's own output quoted when it fails.
REASON_CHARACTERS = 300
# /proc/<pid>/stat: user and system CPU time are its 14th and 15th fields, in clock ticks.
_UTIME_FIELD = 14
_CLOCK_TICKS_PER_SECOND = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def py_spy_executable() -> str | None:
    """py-spy beside this interpreter (a virtualenv's bin, not necessarily on PATH), else on PATH."""
    beside = Path(sys.executable).parent / "py-spy"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which("py-spy")


def process_cpu_seconds(pid: int) -> float | None:
    """User plus system CPU seconds process ``pid`` (all its threads) has used; None off Linux or once it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name (field 2) is in parentheses and may hold spaces: count fields after it.
    fields = text.rpartition(")")[2].split()
    first = _UTIME_FIELD - 3  # fields[0] is field 3, the state
    return (int(fields[first]) + int(fields[first + 1])) / _CLOCK_TICKS_PER_SECOND


@dataclass
class _Recording:
    process: subprocess.Popen[bytes]
    output: Path
    log: Path
    started: float
    cpu_seconds_at_start: float | None


class BrokerSampler:
    """Profiles process ``pid`` with py-spy at ``rate`` samples/s; files go to ``directory``.

    Used from one thread (the benchmark's); ``profiles`` keeps the order in which names were first sampled.
    """

    def __init__(
        self,
        pid: int,
        directory: Path,
        rate: int,
        console: Console,
        executable: str | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.pid = pid
        self.directory = directory
        self.rate = rate
        self.console = console
        self.clock = clock
        self.executable = executable if executable is not None else py_spy_executable()
        self.unavailable_reason: str | None = None
        self.profiles: dict[str, BrokerProfile] = {}
        if not self.executable:
            self._give_up("py-spy is not installed (make install)")

    @contextlib.contextmanager
    def sampling(self, name: str) -> Iterator[None]:
        """Profile the broker while the block runs, adding to ``broker-<name>.txt``; unprofiled when py-spy cannot attach."""
        recording = self._attach(name) if self.unavailable_reason is None else None
        try:
            yield
        finally:
            if recording is not None:
                self._stop(name, recording)

    def _attach(self, name: str) -> _Recording | None:
        assert self.executable is not None
        self.directory.mkdir(parents=True, exist_ok=True)
        output = self.directory / f"broker-{name}.run.txt"
        output.unlink(missing_ok=True)
        descriptor, log_name = tempfile.mkstemp(prefix="py-spy-", suffix=".log")
        os.close(descriptor)
        log = Path(log_name)
        command = [self.executable, "record", "--pid", str(self.pid), "--rate", str(self.rate), "--format", "raw", "--output", str(output)]
        command += ["--nonblocking", "--gil"]
        with open(log, "ab") as log_file:
            # SIGINT if the benchmark dies: py-spy still writes what it sampled.
            process = spawn(command, stdout=log_file, stderr=subprocess.STDOUT, death_signal=signal.SIGINT)
        deadline = self.clock() + ATTACH_TIMEOUT
        # Bounded by ATTACH_TIMEOUT: py-spy either reports sampling, exits with its reason, or is killed.
        while self.clock() < deadline:
            if SAMPLING_STARTED in log.read_bytes():
                return _Recording(process, output, log, self.clock(), process_cpu_seconds(self.pid))
            if process.poll() is not None:
                self._give_up(f"py-spy could not attach to the broker (pid {self.pid}): {self._reason(log)}")
                log.unlink(missing_ok=True)
                return None
            time.sleep(ATTACH_POLL_SECONDS)
        process.kill()
        process.wait()
        self._give_up(f"py-spy did not start sampling the broker within {ATTACH_TIMEOUT:g} s: {self._reason(log)}")
        log.unlink(missing_ok=True)
        return None

    def _stop(self, name: str, recording: _Recording) -> None:
        seconds = self.clock() - recording.started
        cpu_seconds_now = process_cpu_seconds(self.pid)
        process = recording.process
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        reason = self._reason(recording.log)
        recording.log.unlink(missing_ok=True)
        if not recording.output.exists():
            self.console.print(f"[yellow]Broker profile {name}: py-spy wrote no samples for this run ({escape(reason)}).[/yellow]")
            return
        profile = self.profiles.setdefault(name, BrokerProfile(name, self.directory / f"broker-{name}.txt", self.rate))
        earlier = profile.path.read_text() if profile.path.exists() else ""
        profile.path.write_text(merge_collapsed([earlier, recording.output.read_text()]))
        recording.output.unlink()
        profile.seconds += seconds
        if profile.cpu_seconds is not None and recording.cpu_seconds_at_start is not None and cpu_seconds_now is not None:
            profile.cpu_seconds += cpu_seconds_now - recording.cpu_seconds_at_start
        else:
            profile.cpu_seconds = None
        profile.runs += 1

    def _give_up(self, reason: str) -> None:
        self.unavailable_reason = reason
        self.console.print(f"[yellow]Broker not profiled: {escape(reason)}; measuring without the profile.[/yellow]")

    @staticmethod
    def _reason(log: Path) -> str:
        text = log.read_text(errors="replace") if log.exists() else ""
        lines = [line.strip() for line in text.splitlines() if line.strip() and not line.startswith(("Stack backtrace", " "))]
        errors = [line for line in lines if line.startswith("Error")]
        return ((errors or lines or ["no output"])[-1])[:REASON_CHARACTERS]

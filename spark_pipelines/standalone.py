"""A Spark standalone cluster on this machine, from the installed PySpark: one master and N workers.

What the tests and ``bench usage-job --workers`` run the pipelines on to show them on a real
cluster (``spark.master`` = ``spark://...``) rather than ``local[*]``: the same ``spark-class``
daemons a Spark installation starts, taken from the ``pyspark`` package (its ``bin/`` and
``jars/``), so nothing else needs installing.

- Everything listens on loopback (``SPARK_LOCAL_IP``): the master, the workers, their web UIs
  and the executors they start. Ports are chosen by the daemons (port 0) and read back from
  their logs, so two clusters on one machine never race for a port; the master's REST
  submission server (a fixed port, 6066) is off.
- Each daemon is started with :func:`server_runtime.lifeline.spawn`: it ends with this
  process however this process ends, and its process group (the executors a worker starts are
  in it) with it. :meth:`StandaloneCluster.stop` ends them in order, workers first.
- Workers have ``cores`` cores and ``memory`` each; an application asks for executors with
  ``spark.executor.memory`` at most that (:meth:`StandaloneCluster.session_conf`).
- :meth:`StandaloneCluster.master_state` is the master's JSON (``/json/`` of its web UI): the
  workers, and the applications running and completed, which is how a caller checks where the
  work ran.

Not thread-safe; one object per cluster.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from server_runtime.lifeline import signal_group, spawn

LOOPBACK = "127.0.0.1"
MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"
# The daemons' own heap: they only schedule (Spark's default is 1 GiB each).
DAEMON_MEMORY = "256m"
# The daemons are short-lived here: the quick JIT compiler only, one compiler thread, serial GC.
DAEMON_JAVA_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:CICompilerCount=1 -XX:+UseSerialGC"
# What the daemons print once they serve (Spark's log lines, INFO level on stderr).
MASTER_URL_PATTERN = re.compile(r"Starting Spark master at (spark://\S+)")
MASTER_UI_PATTERN = re.compile(r"Successfully started service 'MasterUI' on port (\d+)")
WORKER_UI_PATTERN = re.compile(r"Successfully started service 'WorkerUI' on port (\d+)")
START_TIMEOUT_SECONDS = 90.0  # a daemon's JVM start on a loaded 2-core machine takes 5 to 20 s
POLL_SECONDS = 0.1
STOP_TIMEOUT_SECONDS = 15.0
HTTP_TIMEOUT_SECONDS = 5.0


class StandaloneClusterError(RuntimeError):
    """A daemon did not start or the master does not answer; ``log_tail`` is the end of its log."""

    def __init__(self, message: str, log_tail: str = "") -> None:
        super().__init__(f"{message}\n{log_tail}" if log_tail else message)
        self.log_tail = log_tail


def spark_home() -> Path:
    """The installed ``pyspark`` package directory: a Spark home (``bin/spark-class``, ``jars/``)."""
    spec = importlib.util.find_spec("pyspark")
    if spec is None or spec.origin is None:
        raise StandaloneClusterError("pyspark is not installed in this interpreter")
    return Path(spec.origin).parent


class StandaloneCluster:
    """A master and ``workers`` workers under ``directory`` (logs, work directories); see the module docstring."""

    def __init__(self, directory: Path, *, workers: int = 1, cores: int = 1, memory: str = "1g") -> None:
        if workers < 1 or cores < 1:
            raise ValueError(f"a cluster needs at least one worker of one core, got {workers} worker(s) of {cores} core(s)")
        self.directory = Path(directory)
        self.workers = workers
        self.cores = cores
        self.memory = memory
        self.master_url = ""
        self.master_ui_url = ""
        self.worker_ui_urls: list[str] = []
        self._processes: list[tuple[subprocess.Popen[bytes], Path]] = []

    def environment(self) -> dict[str, str]:
        """The daemons' environment: loopback only, small heaps, this interpreter for Python workers."""
        home = spark_home()
        return {
            **os.environ,
            "SPARK_HOME": str(home),
            "SPARK_LOCAL_IP": LOOPBACK,
            "SPARK_DAEMON_MEMORY": DAEMON_MEMORY,
            "SPARK_DAEMON_JAVA_OPTS": DAEMON_JAVA_OPTIONS,
            "SPARK_MASTER_OPTS": "-Dspark.master.rest.enabled=false",
            "PYSPARK_PYTHON": os.environ.get("PYSPARK_PYTHON", sys.executable),
            # spark-class runs `java` from the PATH; this interpreter's bin first, as the jobs have it.
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        }

    def start(self) -> StandaloneCluster:
        """Start the master, then the workers; return once the master lists every worker ALIVE."""
        self.directory.mkdir(parents=True, exist_ok=True)
        try:
            master_log = self._spawn("master", [MASTER_CLASS, "--host", LOOPBACK, "--port", "0", "--webui-port", "0"])
            self.master_url = self._wait_for_log(master_log, MASTER_URL_PATTERN, "the Spark master's URL")
            master_ui_port = self._wait_for_log(master_log, MASTER_UI_PATTERN, "the Spark master's web UI")
            self.master_ui_url = f"http://{LOOPBACK}:{master_ui_port}"
            for number in range(1, self.workers + 1):
                work_dir = self.directory / f"worker-{number}"
                command = [WORKER_CLASS, "--host", LOOPBACK, "--webui-port", "0", "--cores", str(self.cores), "--memory", self.memory]
                worker_log = self._spawn(f"worker-{number}", [*command, "--work-dir", str(work_dir), self.master_url])
                worker_ui_port = self._wait_for_log(worker_log, WORKER_UI_PATTERN, f"worker {number}'s web UI")
                self.worker_ui_urls.append(f"http://{LOOPBACK}:{worker_ui_port}")
            self._wait_until(lambda: self.alive_workers() >= self.workers, f"{self.workers} worker(s) ALIVE at the master", master_log)
        except BaseException:
            self.stop()
            raise
        return self

    def session_conf(self, executor_memory: str = "512m") -> dict[str, str]:
        """Settings of a session on this cluster: its master, executors of every core of a worker,
        the driver on loopback."""
        return {
            "spark.master": self.master_url,
            "spark.executor.cores": str(self.cores),
            "spark.executor.memory": executor_memory,
            "spark.driver.host": LOOPBACK,
            "spark.driver.bindAddress": LOOPBACK,
        }

    def master_state(self) -> dict[str, Any]:
        """The master's JSON: ``workers``, ``activeapps``, ``completedapps``, ``status``..."""
        with urllib.request.urlopen(f"{self.master_ui_url}/json/", timeout=HTTP_TIMEOUT_SECONDS) as answer:  # noqa: S310 - a loopback http URL built here
            state: dict[str, Any] = json.load(answer)
        return state

    def worker_state(self, number: int = 1) -> dict[str, Any]:
        """Worker ``number``'s JSON: its ``executors`` and ``finishedexecutors`` (``appid``, ``id``...)."""
        with urllib.request.urlopen(f"{self.worker_ui_urls[number - 1]}/json/", timeout=HTTP_TIMEOUT_SECONDS) as answer:  # noqa: S310 - as above
            state: dict[str, Any] = json.load(answer)
        return state

    def alive_workers(self) -> int:
        try:
            return sum(1 for worker in self.master_state().get("workers", []) if worker.get("state") == "ALIVE")
        except OSError:
            return 0

    def stop(self) -> None:
        """End the workers (and their executors), then the master: SIGTERM, SIGKILL after a while."""
        for process, _log in reversed(self._processes):
            signal_group(process, signal.SIGTERM)
            try:
                process.wait(timeout=STOP_TIMEOUT_SECONDS)
            except subprocess.TimeoutExpired:
                signal_group(process, signal.SIGKILL)
                process.wait(timeout=STOP_TIMEOUT_SECONDS)
        self._processes.clear()

    def __enter__(self) -> StandaloneCluster:
        return self.start()

    def __exit__(self, *_exception: object) -> None:
        self.stop()

    def _spawn(self, name: str, arguments: list[str]) -> Path:
        log_path = self.directory / f"{name}.log"
        command = [str(spark_home() / "bin" / "spark-class"), *arguments]
        # A new log: the start is read from it (an old one would name an earlier run's ports).
        with open(log_path, "wb") as log:
            process = spawn(command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=self.environment(), cwd=self.directory)
        self._processes.append((process, log_path))
        return log_path

    def _wait_for_log(self, log_path: Path, pattern: re.Pattern[str], what: str) -> str:
        found: list[str] = []

        def seen() -> bool:
            match = pattern.search(log_path.read_text(errors="replace")) if log_path.exists() else None
            if match:
                found.append(match.group(1))
            return bool(match)

        self._wait_until(seen, what, log_path)
        return found[0]

    def _wait_until(self, condition: Callable[[], bool], what: str, log_path: Path) -> None:
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while not condition():
            exited = [process for process, _log in self._processes if process.poll() is not None]
            if exited or time.monotonic() > deadline:
                reason = f"exited with status {exited[0].returncode}" if exited else f"not after {START_TIMEOUT_SECONDS:g} s"
                tail = log_path.read_text(errors="replace")[-3000:] if log_path.exists() else "(no log)"
                raise StandaloneClusterError(f"Spark standalone cluster under {self.directory}: {what}: {reason}; the log ends:", tail)
            time.sleep(POLL_SECONDS)
